-- extend_all: compare-and-pexpire over every key of a multi-lock.
-- KEYS[1..n] the lock keys; ARGV[1] the caller's token; ARGV[2] the new TTL
-- in ms. Under a lock-delay, ARGV[3] the delay in ms and KEYS[n+1..2n] the
-- keys' holder markers, set again to outlive the keys by the delay.
-- Resets the TTL of every key only while every key holds the caller's
-- token: a node that lost one of them no longer holds the lock, and an
-- expired key is never re-created nor another owner's touched.
-- Returns 1 when extended, -1 when every key is absent (the caller may heal
-- the node once a majority extended), 0 otherwise.
local n = #KEYS
local delay = tonumber(ARGV[3]) or 0
if delay > 0 then
  n = #KEYS / 2
end
local absent = 0
for i = 1, n do
  local v = redis.call('GET', KEYS[i])
  if v == false then
    absent = absent + 1
  elseif v ~= ARGV[1] then
    return 0
  end
end
if absent == n then
  return -1
end
if absent > 0 then
  return 0
end
raise_ceiling(ARGV[2])
for i = 1, n do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
  if delay > 0 then
    redis.call('SET', KEYS[n + i], ARGV[1], 'PX', tonumber(ARGV[2]) + delay)
  end
end
return 1
