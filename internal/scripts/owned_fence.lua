-- owned_fence: phase 2 of a fenced acquisition by an owner.
-- KEYS[1] the lock key; KEYS[2] its holds (owned_take.lua); KEYS[3] its
-- fence counter. ARGV[1] the owner's value, ARGV[2] the hold's id, ARGV[3]
-- the chosen fence (decimal, no leading zeros).
-- Only while the key holds the owner's value and the hold is there: raises
-- the counter to at least the fence (as fence_raise.lua) and records it as
-- the owner's fence, which later holds of the owner report. An owner keeps
-- one fence for as long as it holds the key: a node that recorded another
-- one refuses.
-- Returns 1 when the counter is at least the fence and the fence is the
-- owner's, 0 otherwise.
if redis.call('GET', KEYS[1]) ~= ARGV[1] or not redis.call('HGET', KEYS[2], ARGV[2]) then
  return 0
end
local f = ARGV[3]
local own = redis.call('HGET', KEYS[2], '.')
if own and own ~= f then
  return 0
end
redis.call('HSET', KEYS[2], '.', f)
raise_fence(KEYS[3], f)
return 1
