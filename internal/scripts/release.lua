-- release: compare-and-delete.
-- KEYS[1] the lock key; ARGV[1] the caller's token.
-- Deletes the key only while it holds the caller's token, so a lock that
-- expired and now belongs to someone else is never touched.
-- Returns 1 when deleted, 0 when the key is absent or holds another token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
