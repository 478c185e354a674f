-- permit_fence: phase 2 of a fenced permit acquisition (see fence_raise.lua).
-- KEYS[1] the semaphore; KEYS[2] its fence counter. ARGV[1] the holder's
-- token; ARGV[2] its slot; ARGV[3] the chosen fence, a decimal integer
-- without leading zeros.
-- Only while the slot holds the caller's live permit, raises the counter to
-- at least the fence; it never lowers it and never sets a TTL on it.
-- Returns 1 when the counter is now at least the fence, 0 otherwise.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local e = redis.call('HGET', KEYS[1], ARGV[2])
if not e then
  return 0
end
local tok, exp = string.match(e, '^(%S+) (%d+)$')
if tok ~= ARGV[1] or tonumber(exp) <= now then
  return 0
end
raise_fence(KEYS[2], ARGV[3])
return 1
