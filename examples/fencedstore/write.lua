-- write: compare-and-set on a fencing token.
-- KEYS[1] the value's key; KEYS[2] the highest fence accepted for it;
-- ARGV[1] the value; ARGV[2] the writer's fence (decimal, no leading zeros).
-- Writes only when the fence is at least the highest accepted one (equal: the
-- same holder writing again), and records it. Returns 1 if written, 0 if stale.
local cur = redis.call('GET', KEYS[2])
local f = ARGV[2]
if cur and (#cur > #f or (#cur == #f and cur > f)) then
  return 0
end
redis.call('SET', KEYS[2], f)
redis.call('SET', KEYS[1], ARGV[1])
return 1
