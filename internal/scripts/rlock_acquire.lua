-- rlock_acquire: a reader joins the shared hold of a key on one node.
-- KEYS[1] the lock key; KEYS[2] its readers (zset: reader token -> expiry,
-- server ms); KEYS[3] the leases of the key's queue of waiting writers (see
-- enqueue.lua); KEYS[4] the key's fence counter. ARGV[1] the reader's token;
-- ARGV[2] its TTL in ms; ARGV[3] '1' to ignore waiting writers (healing a
-- reader that a majority still holds).
-- While readers hold the key, KEYS[1] holds the marker 'r:readers' with a TTL
-- reaching the latest reader expiry, so a writer's SET NX fails with no script
-- of its own, and the key vanishes by itself when the last reader expires.
-- Each reader has its own expiry; no reader ever moves another's.
-- Refused while a writer holds the key, and while a writer waits in the
-- queue (its lease there not run out): waiting writers go first.
-- Returns {1, counter} when joined (counter "0" if absent); {0, 'writer'}
-- when a writer holds the key; {0, 'waiting'} when a writer waits for it.
-- KEYS[5] the key's holder marker and ARGV[4] the lock-delay in ms ('0':
-- none; see acquire_delay.lua): under a delay, a free key whose marker
-- names a writer (its lock expired without a release less than the delay
-- ago) refuses readers with {2, ms left}; readers keep the marker
-- 'r:readers' for the delay past the latest reader's expiry, and an expired
-- reader stays in KEYS[2] for that long (rlock_release.lua).
-- A blocked RLock also gives KEYS[6], the key's watch set, ARGV[5], its
-- Client's channel, and ARGV[6], a lease in ms: a refused reader then
-- watches the key (watch.lua). Returns {-1, kind} when the key holds
-- another kind of lock (kind.lua).
local other = other_kind(KEYS[1], 'string')
if other then
  return {-1, other}
end
local v = redis.call('GET', KEYS[1])
if v and v ~= 'r:readers' then
  watch_add(KEYS[6], ARGV[5], ARGV[6])
  return {0, 'writer'}
end
local delay = tonumber(ARGV[4]) or 0
if v == false and delay > 0 then
  local m = redis.call('GET', KEYS[5])
  if m and m ~= 'r:readers' and m ~= ARGV[1] then
    watch_add(KEYS[6], ARGV[5], ARGV[6])
    return {2, redis.call('PTTL', KEYS[5])}
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[3] ~= '1' and #redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. now, '+inf', 'LIMIT', 0, 1) > 0 then
  watch_add(KEYS[6], ARGV[5], ARGV[6])
  return {0, 'waiting'}
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - delay)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
raise_ceiling(ARGV[2])
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
local left = tonumber(last[2]) - now
redis.call('SET', KEYS[1], 'r:readers', 'PX', left)
redis.call('PEXPIRE', KEYS[2], left + delay)
if delay > 0 and redis.call('PTTL', KEYS[5]) < left + delay then
  redis.call('SET', KEYS[5], 'r:readers', 'PX', left + delay)
end
return {1, redis.call('GET', KEYS[4]) or '0'}
