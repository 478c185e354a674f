-- rlock_extend: a reader extends its own lease on one node.
-- KEYS[1] the lock key; KEYS[2] its readers (see rlock_acquire.lua).
-- ARGV[1] the reader's token; ARGV[2] the new TTL in ms. Under a lock-delay
-- (rlock_acquire.lua), KEYS[3] the holder marker and ARGV[3] the delay in
-- ms: expired readers are kept for the delay, and the marker outlives the
-- latest reader by it.
-- Only a reader whose entry has not expired is extended: an expired lease is
-- never re-created, and no other reader's expiry is touched. The marker's
-- TTL is then set to the latest live reader expiry.
-- Returns 1 when extended, 0 when a writer holds the key, -1 when the
-- reader's lease is absent here (the caller may heal it, once a majority
-- extended), as extend.lua does.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = redis.call('GET', KEYS[1])
if v and v ~= 'r:readers' then
  return 0
end
local exp = redis.call('ZSCORE', KEYS[2], ARGV[1])
if v == false or not exp or tonumber(exp) <= now then
  return -1
end
local delay = tonumber(ARGV[3]) or 0
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - delay)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
raise_ceiling(ARGV[2])
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
local left = tonumber(last[2]) - now
redis.call('PEXPIRE', KEYS[1], left)
redis.call('PEXPIRE', KEYS[2], left + delay)
if delay > 0 and redis.call('PTTL', KEYS[3]) < left + delay then
  redis.call('SET', KEYS[3], 'r:readers', 'PX', left + delay)
end
return 1
