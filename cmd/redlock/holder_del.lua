-- holder_del: remove a holder record, only if it is the caller's.
-- KEYS[1] the holder record (KEY:holder).
-- ARGV[1] the record exactly as the caller wrote it.
-- Returns 1 when deleted, 0 when KEYS[1] is absent or holds anything else.
if redis.pcall('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
