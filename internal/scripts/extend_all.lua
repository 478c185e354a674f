-- extend_all: compare-and-pexpire over every key of a multi-lock.
-- KEYS[1..n] the lock keys; ARGV[1] the caller's token; ARGV[2] the new TTL
-- in ms.
-- Resets the TTL of every key only while every key holds the caller's
-- token: a node that lost one of them no longer holds the lock, and an
-- expired key is never re-created nor another owner's touched.
-- Returns 1 when extended, -1 when every key is absent (the caller may heal
-- the node once a majority extended), 0 otherwise.
local absent = 0
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v == false then
    absent = absent + 1
  elseif v ~= ARGV[1] then
    return 0
  end
end
if absent == #KEYS then
  return -1
end
if absent > 0 then
  return 0
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
