-- rlock_fence: phase 2 of a fenced reader acquisition (see fence_raise.lua).
-- KEYS[1] the lock key; KEYS[2] its readers; KEYS[3] the fence counter.
-- ARGV[1] the reader's token; ARGV[2] the chosen fence, a decimal integer
-- without leading zeros.
-- Only while the reader's lease is live here, raises the counter to at least
-- the fence; it never lowers it and never sets a TTL on it.
-- Returns 1 when the counter is now at least the fence, 0 when the reader
-- holds no lease here.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = redis.call('ZSCORE', KEYS[2], ARGV[1])
if redis.call('GET', KEYS[1]) ~= 'r:readers' or not exp or tonumber(exp) <= now then
  return 0
end
raise_fence(KEYS[3], ARGV[2])
return 1
