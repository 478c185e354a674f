-- fence_raise: phase 2 of a fenced acquisition.
-- KEYS[1] the lock key; KEYS[2] its fence counter; ARGV[1] the caller's
-- token; ARGV[2] the chosen fence, a decimal integer without leading zeros.
-- Only while KEYS[1] holds the caller's token, raises the counter to at least
-- the fence (counter = max(counter, fence)); it never lowers it and never sets
-- a TTL on it. Numbers are compared as decimal strings (length, then
-- lexically) so values above 2^53 keep their precision.
-- Returns 1 when the counter is now at least the fence, 0 when the key does
-- not hold the caller's token.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local cur = redis.call('GET', KEYS[2])
local f = ARGV[2]
if not cur or #cur < #f or (#cur == #f and cur < f) then
  redis.call('SET', KEYS[2], f)
end
return 1
