-- permit_extend: a holder extends its own permit on one node.
-- KEYS[1] the semaphore (see permit_acquire.lua). ARGV[1] the holder's
-- token; ARGV[2] the new TTL in ms; ARGV[3] its slot; ARGV[4] the
-- lock-delay in ms ('0' or absent: none), by which the key outlives it.
-- Only a slot that holds the caller's token and has not expired is
-- extended: an expired permit is never re-created, another holder's never
-- touched. The key's TTL never falls below any holder's expiry.
-- Returns 1 when extended, 0 when the slot holds another token, -1 when it
-- is free (the caller may heal it, once a majority extended).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local e = redis.call('HGET', KEYS[1], ARGV[3])
if not e then
  return -1
end
local tok, exp = string.match(e, '^(%S+) (%d+)$')
if tonumber(exp) <= now then
  return -1
end
if tok ~= ARGV[1] then
  return 0
end
local ttl = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], ARGV[3], ARGV[1] .. ' ' .. (now + ttl))
raise_ceiling(ttl)
local keep = ttl + (tonumber(ARGV[4]) or 0)
if redis.call('PTTL', KEYS[1]) < keep then
  redis.call('PEXPIRE', KEYS[1], keep)
end
return 1
