-- owned_extend: compare-and-pexpire of one hold of an owner.
-- KEYS[1] the lock key; KEYS[2] its holds (owned_take.lua); KEYS[3] its
-- holder marker. ARGV[1] the owner's value, ARGV[2] the hold's id, ARGV[3]
-- the new TTL in ms, ARGV[4] the lock-delay in ms ('0': none).
-- Only while the key holds the owner's value and the hold is live there
-- (given back by nobody, not run out), the hold's expiry becomes now +
-- TTL, and the key's TTL the latest of its live holds' expiries: a hold
-- never moves another's, an expired hold is never brought back, and the
-- key outlives every live hold. Under a lock-delay the marker is set again
-- to outlive the key by the delay.
-- Returns 1 when extended, 0 when the key holds another value or the hold
-- is not live, -1 when the key is absent (Extend's codes).
local v = redis.call('GET', KEYS[1])
if v == false then
  return -1
end
if v ~= ARGV[1] then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = tonumber(redis.call('HGET', KEYS[2], ARGV[2]))
if not exp or exp <= now then
  return 0
end
local top = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[2], ARGV[2], top)
raise_ceiling(ARGV[3])
local rec = redis.call('HGETALL', KEYS[2])
for j = 1, #rec, 2 do
  if rec[j] ~= '.' then
    local e = tonumber(rec[j + 1])
    if e <= now then
      redis.call('HDEL', KEYS[2], rec[j])
    else
      top = math.max(top, e)
    end
  end
end
redis.call('PEXPIRE', KEYS[1], top - now)
redis.call('PEXPIRE', KEYS[2], top - now)
local delay = tonumber(ARGV[4]) or 0
if delay > 0 then
  redis.call('SET', KEYS[3], ARGV[1], 'PX', top - now + delay)
end
return 1
