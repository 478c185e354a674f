-- fence_raise: phase 2 of a fenced acquisition.
-- KEYS[1] the lock key; KEYS[2] its fence counter; ARGV[1] the caller's
-- token; ARGV[2] the chosen fence, a decimal integer without leading zeros.
-- Only while KEYS[1] holds the caller's token, raises the counter to at least
-- the fence (raise_fence, fence.lua).
-- Returns 1 when the counter is now at least the fence, 0 when the key does
-- not hold the caller's token.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
raise_fence(KEYS[2], ARGV[2])
return 1
