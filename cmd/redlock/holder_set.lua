-- holder_set: record who holds a lock, for as long as the lock lasts.
-- KEYS[1] the lock key, KEYS[2] its holder record (KEY:holder).
-- ARGV[1] the holder's token, ARGV[2] the record: JSON starting {"token":".
-- Sets KEYS[2] to ARGV[2], expiring with KEYS[1] (PX its remaining PTTL),
-- only while KEYS[1] holds ARGV[1] with an expiry, and only when KEYS[2] is
-- absent or already a record: it never overwrites another kind of key that
-- happens to bear the name (someone's lock on "KEY:holder").
-- Returns 1 when set, 0 otherwise.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl <= 0 then
  return 0
end
local current = redis.pcall('GET', KEYS[2])
if type(current) == 'table' then
  return 0 -- not a string: not ours
end
if current and string.sub(current, 1, 10) ~= '{"token":"' then
  return 0
end
redis.call('SET', KEYS[2], ARGV[2], 'PX', pttl)
return 1
