-- fence_read: read the fence counter of a lock the caller holds, for a lock
-- that reached its holder through the queue rather than through SET NX.
-- KEYS[1] the lock key; KEYS[2] its fence counter; ARGV[1] the caller's
-- token.
-- While KEYS[1] holds the caller's token nobody else can raise the counter
-- (fence_raise.lua requires the key), so the value read is at least every
-- fence written on this node by earlier owners.
-- Returns the counter ("0" if absent), or false when the key does not hold
-- the caller's token.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return false
end
return redis.call('GET', KEYS[2]) or '0'
