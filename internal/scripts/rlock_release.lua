-- rlock_release: a reader leaves the shared hold of a key on one node.
-- KEYS[1] the lock key; KEYS[2] its readers (see rlock_acquire.lua).
-- ARGV[1] the reader's token.
-- Removes the reader's entry (and expired ones); while the key holds the
-- marker, its TTL then reaches the latest remaining reader expiry, and the
-- last reader to leave deletes both keys, so the key is free for a writer at
-- once. A key held by a writer is never touched.
-- Returns 1 when the reader's lease was live here, 0 otherwise.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = redis.call('GET', KEYS[1])
local exp = redis.call('ZSCORE', KEYS[2], ARGV[1])
local held = v == 'r:readers' and exp and tonumber(exp) > now
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if v == 'r:readers' then
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if last[1] then
    local left = tonumber(last[2]) - now
    redis.call('PEXPIRE', KEYS[1], left)
    redis.call('PEXPIRE', KEYS[2], left)
  else
    redis.call('DEL', KEYS[1], KEYS[2])
  end
end
if held then
  return 1
end
return 0
