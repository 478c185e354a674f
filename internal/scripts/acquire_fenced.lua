-- acquire_fenced: phase 1 of a fenced acquisition.
-- KEYS[1] the lock key; KEYS[2] its fence counter; ARGV[1] the caller's
-- token; ARGV[2] the TTL in ms.
-- Runs SET KEYS[1] token NX PX ttl and, in the same atomic step, reads the
-- counter, so the value read is at least every fence written on this node
-- while an earlier owner held the key.
-- Under a lock-delay, KEYS[3] is the key's holder marker and ARGV[3] the
-- delay in ms: the key is refused as in acquire_delay.lua, and the marker
-- is set with it.
-- Returns {1, counter} when set (counter "0" if absent), {0} when the key was
-- already held, {-1, pttl} when refused for the lock-delay.
if KEYS[3] then
  local m = redis.call('GET', KEYS[3])
  if m and m ~= ARGV[1] and redis.call('EXISTS', KEYS[1]) == 0 then
    return {-1, redis.call('PTTL', KEYS[3])}
  end
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if KEYS[3] then
    redis.call('SET', KEYS[3], ARGV[1], 'PX', tonumber(ARGV[2]) + tonumber(ARGV[3]))
  end
  raise_ceiling(ARGV[2])
  return {1, redis.call('GET', KEYS[2]) or '0'}
end
return {0}
