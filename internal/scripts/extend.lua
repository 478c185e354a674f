-- extend: compare-and-pexpire.
-- KEYS[1] the lock key; ARGV[1] the caller's token; ARGV[2] the new TTL in ms.
-- Resets the TTL only while the key holds the caller's token: an expired lock
-- is never re-created, and another owner's key is never touched.
-- Under a lock-delay, KEYS[2] is the key's holder marker and ARGV[3] the
-- delay in ms: the marker is set again to outlive the key by the delay.
-- Returns 1 when extended, 0 when another token or another kind of lock
-- (readers, permits, a key of the application's) holds the key, -1 when the
-- key is absent (the caller may then heal it, once a majority extended).
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'string' then
  return t == 'none' and -1 or 0
end
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  raise_ceiling(ARGV[2])
  if KEYS[2] then
    redis.call('SET', KEYS[2], ARGV[1], 'PX', tonumber(ARGV[2]) + tonumber(ARGV[3]))
  end
  return 1
end
if v == false then
  return -1
end
return 0
