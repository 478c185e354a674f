-- fence_raise_all: phase 2 of a fenced multi-lock acquisition.
-- KEYS[1..n] the lock keys, n = ARGV[3]; KEYS[n+1..2n] their fence
-- counters; ARGV[1] the caller's token; ARGV[2] the chosen fence, a decimal
-- integer without leading zeros; ARGV[3] n.
-- Only while every lock key holds the caller's token, raises each counter
-- to at least the fence (counter = max(counter, fence)); it never lowers one
-- and never sets a TTL. Numbers are compared as decimal strings (length,
-- then lexically) so values above 2^53 keep their precision.
-- Returns 1 when every counter is now at least the fence, 0 when a key does
-- not hold the caller's token (nothing is changed then).
local n = tonumber(ARGV[3])
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
for i = n + 1, #KEYS do
  raise_fence(KEYS[i], ARGV[2])
end
return 1
