-- extend: compare-and-pexpire.
-- KEYS[1] the lock key; ARGV[1] the caller's token; ARGV[2] the new TTL in ms.
-- Resets the TTL only while the key holds the caller's token: an expired lock
-- is never re-created, and another owner's key is never touched.
-- Returns 1 when extended, 0 when another token holds the key, -1 when the
-- key is absent (the caller may then heal it, once a majority extended).
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if v == false then
  return -1
end
return 0
