-- permit_acquire: take one of the key's permits on one node.
-- KEYS[1] the semaphore (hash: slot "0".."limit-1" -> "<token> <expiry>",
-- expiry in server ms); KEYS[2] its fence counter. ARGV[1] the holder's
-- token; ARGV[2] its TTL in ms; ARGV[3] the limit; ARGV[4] the slot to try
-- first; ARGV[5] '1' to try that slot only (healing); ARGV[6] the
-- lock-delay in ms ('0': none, see redlock.WithLockDelay).
-- A permit is one slot, held like an exclusive lock on it: each holder has
-- its own token and expiry, expired slots are freed here, and no holder
-- touches another's. Slots are tried from ARGV[4] on, wrapping around, so
-- nodes in the same state pick the same slot. The key's TTL reaches the
-- latest expiry, so a semaphore nobody holds vanishes by itself.
-- Returns {1, slot, counter} when taken (counter "0" if absent), {0} when
-- every slot below the limit is held, {2, ms} when some are kept only by the
-- lock-delay (below); {-1, kind} when the key holds another
-- kind of lock (kind.lua: a lock, readers).
local other = other_kind(KEYS[1], 'hash')
if other then
  return {-1, other}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local top = now + ttl
-- Under a lock-delay, a slot whose holder's permit expired without a
-- release stays taken for the delay after its expiry (a release frees it at
-- once: permit_release.lua), and the key's TTL reaches past the latest
-- expiry by the delay; a slot so kept for the caller's own token (a heal)
-- is free to it.
local delay = tonumber(ARGV[6]) or 0
local held = {}
local delayed = nil -- the soonest end of a delay keeping a slot
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local tok, exp = string.match(all[i + 1], '^(%S+) (%d+)$')
  exp = tonumber(exp)
  if exp + delay <= now then
    redis.call('HDEL', KEYS[1], all[i])
  elseif exp > now then
    held[all[i]] = true
    if exp > top then top = exp end
  elseif tok ~= ARGV[1] then
    held[all[i]] = true
    if not delayed or exp + delay < delayed then delayed = exp + delay end
  end
end
local limit, first = tonumber(ARGV[3]), tonumber(ARGV[4])
local tries = limit
if ARGV[5] == '1' then tries = 1 end
for k = 0, tries - 1 do
  local s = tostring((first + k) % limit)
  if not held[s] then
    redis.call('HSET', KEYS[1], s, ARGV[1] .. ' ' .. (now + ttl))
    raise_ceiling(ttl)
    redis.call('PEXPIRE', KEYS[1], math.max(top - now + delay, redis.call('PTTL', KEYS[1])))
    return {1, s, redis.call('GET', KEYS[2]) or '0'}
  end
end
-- A blocked AcquirePermit also gives KEYS[3], the semaphore's watch set,
-- ARGV[7], its Client's channel, and ARGV[8], a lease in ms: it then watches
-- the semaphore (watch.lua).
watch_add(KEYS[3], ARGV[7], ARGV[8])
-- {2, ms}: every slot is taken, some only by a lock-delay, the soonest of
-- which ends in ms.
if delayed then
  return {2, delayed - now}
end
return {0}
