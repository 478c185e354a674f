-- release: compare-and-delete, then tell waiters.
-- KEYS[1] the lock key; ARGV[1] the caller's token; ARGV[2] the channel on
-- which waiters listen for this key, or '' to stay silent (the cleanup of a
-- failed attempt, which must not wake other waiters for nothing); ARGV[3]
-- the message, the releasing Client's id (its own waiters need no message).
-- Deletes the key only while it holds the caller's token, so a lock that
-- expired and now belongs to someone else is never touched; after a delete it
-- publishes ARGV[3] on ARGV[2] so waiters retry at once.
-- Returns 1 when deleted, 0 when the key is absent or holds another token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] ~= '' then
    redis.call('PUBLISH', ARGV[2], ARGV[3])
  end
  return 1
end
return 0
