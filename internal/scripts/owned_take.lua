-- owned_take: an owner's hold of an exclusive key, taken or re-entered on
-- one node, in one step with the check.
-- KEYS[1] the lock key; KEYS[2] its holds (a hash: hold id -> expiry,
-- server ms; the field '.' keeps the owner's fence), named after the key's
-- queue (scripts.HoldsKey); KEYS[3] the key's fence counter; KEYS[4] its
-- holder marker (lock-delay, acquire_delay.lua); KEYS[5] its watch set
-- (watch.lua). ARGV[1] the owner's value ('o:' .. owner), ARGV[2] the new
-- hold's id (the attempt's token), ARGV[3] its TTL in ms, ARGV[4] the
-- lock-delay in ms ('0': none), ARGV[5] '1' to read the fence, ARGV[6] and
-- ARGV[7] the Client's channel and a lease in ms for a blocked call ('' and
-- '0': none).
-- While an owner holds the key, KEYS[1] holds the owner's value with a TTL
-- reaching the latest of its holds' expiries, so SET NX and every other
-- owner's take fail, and the key vanishes by itself when the last hold
-- runs out. Each hold has its own expiry; a take never shortens the key.
-- A free key is taken: the record of a group whose key vanished is dropped
-- first, and under a lock-delay a marker of another holder refuses it. A
-- key holding the owner's value is re-entered: the hold is added to the
-- others. Nothing else is written, and nothing at all on a refusal.
-- Returns {1, 'fresh', counter, ''} for a taken key, {1, 'again', counter,
-- fence} for a re-entered one (fence: the owner's, '' when it has none;
-- counter '0' unless ARGV[5] is '1'); {0} when another holder has the key
-- (the caller then watches it); {2, ms left} under the lock-delay; {-1,
-- kind} when the key holds another kind of lock (kind.lua).
local other = other_kind(KEYS[1], 'string')
if other then
  return {-1, other}
end
-- Readers ('r:readers') are a holder like any other: the owner waits for
-- them to leave, as a plain writer does (rlock_release.lua wakes the
-- watchers when the last one goes).
local v = redis.call('GET', KEYS[1])
local delay = tonumber(ARGV[4]) or 0
local mode = 'again'
if v == false then
  if delay > 0 then
    local m = redis.call('GET', KEYS[4])
    if m and m ~= ARGV[1] then
      watch_add(KEYS[5], ARGV[6], ARGV[7])
      return {2, redis.call('PTTL', KEYS[4])}
    end
  end
  redis.call('DEL', KEYS[2])
  mode = 'fresh'
elseif v ~= ARGV[1] then
  watch_add(KEYS[5], ARGV[6], ARGV[7])
  return {0}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local top = now + tonumber(ARGV[3])
local fence = ''
local live = 0
local rec = redis.call('HGETALL', KEYS[2])
for j = 1, #rec, 2 do
  if rec[j] == '.' then
    fence = rec[j + 1]
  elseif tonumber(rec[j + 1]) <= now then
    redis.call('HDEL', KEYS[2], rec[j])
  else
    live = live + 1
    top = math.max(top, tonumber(rec[j + 1]))
  end
end
local left = top - now
if mode == 'again' and live == 0 then
  -- The record lost its holds (evicted): keep the key at least as long.
  left = math.max(left, redis.call('PTTL', KEYS[1]))
end
redis.call('HSET', KEYS[2], ARGV[2], now + tonumber(ARGV[3]))
raise_ceiling(ARGV[3])
redis.call('SET', KEYS[1], ARGV[1], 'PX', left)
redis.call('PEXPIRE', KEYS[2], left)
if delay > 0 then
  redis.call('SET', KEYS[4], ARGV[1], 'PX', left + delay)
end
local counter = '0'
if ARGV[5] == '1' then
  counter = redis.call('GET', KEYS[3]) or '0'
end
return {1, mode, counter, fence}
