-- acquire_delay: SET NX PX under a lock-delay (redlock.WithLockDelay).
-- KEYS[1] the lock key; KEYS[2] its holder marker; ARGV[1] the caller's
-- token; ARGV[2] the TTL in ms; ARGV[3] the lock-delay in ms.
-- The marker names the key's holder and outlives the key by the delay: a
-- release deletes it (release.lua), an expiry does not. So a marker of
-- another token with no key means its holder vanished less than the delay
-- ago, and the key is refused until the marker expires. A marker of the
-- caller's own token (a heal) does not refuse.
-- Sets the key like SET NX PX and, in the same atomic step, the marker to
-- the token for TTL + delay.
-- Returns {1} when set, {0} when the key is held, {-1, pttl} when refused
-- for the lock-delay, pttl being the delay left in ms.
local m = redis.call('GET', KEYS[2])
if m and m ~= ARGV[1] and redis.call('EXISTS', KEYS[1]) == 0 then
  return {-1, redis.call('PTTL', KEYS[2])}
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', tonumber(ARGV[2]) + tonumber(ARGV[3]))
  raise_ceiling(ARGV[2])
  return {1}
end
return {0}
