-- owned_release: one hold of an owner given back; the last one releases
-- the key as release.lua does. It is prepended to release.lua (see
-- scripts.go), whose KEYS it takes; ARGV are release.lua's with ARGV[1] the
-- owner's value, followed by the hold's id, which this part takes off.
-- The holds are the hash named after the key's queue KEYS[2]
-- (scripts.HoldsKey, in the key's slot).
-- Only while the key holds the owner's value, the hold is removed from the
-- holds: a hold given back twice (an Unlock sent again) is found absent the
-- second time and gives back nothing more, and no other hold is touched.
-- Holds that ran out are dropped. While a live hold remains, the key's TTL
-- becomes the latest of their expiries (its marker, under a lock-delay,
-- outlives it by the delay) and the key stays the owner's; without one the
-- record goes and release.lua's part deletes the key, hands it to the
-- first waiter or wakes the watchers.
-- Returns {0} when the key does not hold the owner's value or the hold is
-- not there, {2} when the hold was given back and others remain, and
-- release.lua's replies otherwise.
local hold = ARGV[#ARGV]
local ARGV = {unpack(ARGV, 1, #ARGV - 1)}
local holds = KEYS[2] .. ':holds'
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('HDEL', holds, hold) == 0 then
  return {0}
end
local ot = redis.call('TIME')
local onow = tonumber(ot[1]) * 1000 + math.floor(tonumber(ot[2]) / 1000)
local top = 0
local rec = redis.call('HGETALL', holds)
for j = 1, #rec, 2 do
  if rec[j] ~= '.' then
    local e = tonumber(rec[j + 1])
    if e <= onow then
      redis.call('HDEL', holds, rec[j])
    else
      top = math.max(top, e)
    end
  end
end
if top > 0 then
  redis.call('PEXPIRE', KEYS[1], top - onow)
  redis.call('PEXPIRE', holds, top - onow)
  if KEYS[6] then
    redis.call('SET', KEYS[6], ARGV[1], 'PX', top - onow + tonumber(ARGV[4]))
  end
  return {2}
end
redis.call('DEL', holds)
