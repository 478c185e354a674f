-- acquire_all: take every key of a multi-lock on this node, or none.
-- ARGV[1] the caller's token; ARGV[2] the TTL in ms; ARGV[3] n, the number
-- of lock keys; ARGV[4] the lock-delay in ms ('0': none; acquire_delay.lua).
-- KEYS: the n lock keys; under a delay, their n holder markers; for a
-- fenced acquisition, their n fence counters; for a blocked LockAll, their
-- n watch sets; each group in the order of the keys.
-- If none of the lock keys exists, sets each to the token with PX ttl and,
-- in the same atomic step, reads the fence counters; if any exists (held by
-- anyone, even by the caller), sets nothing, so a failed attempt leaves this
-- node as it found it. Under a delay, a free key whose marker names another
-- token (its holder's lock expired without a release less than the delay
-- ago) refuses the set too, and each key set gets its marker, for TTL +
-- delay.
-- Returns {1, c1, ..., cn} when set (ci the counter of KEYS[i], "0" if
-- absent; no counters when none were given), {0, i} when KEYS[i] was held,
-- {-1, kind, i} when KEYS[i] holds another kind of lock (kind.lua), {2, ms,
-- i} when KEYS[i] is in its lock-delay for ms more.
-- A blocked LockAll also gives ARGV[5], its Client's channel, and ARGV[6],
-- a lease in ms: the channel then watches the key found held (watch.lua).
local n = tonumber(ARGV[3])
local delay = tonumber(ARGV[4]) or 0
local markers = 0
if delay > 0 then
  markers = n
end
local watches = #KEYS
if ARGV[5] then
  watches = #KEYS - n
end
for i = 1, n do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    local other = other_kind(KEYS[i], 'string')
    if other then
      return {-1, other, i}
    end
    if ARGV[5] then
      watch_add(KEYS[watches + i], ARGV[5], ARGV[6])
    end
    return {0, i}
  end
  if delay > 0 then
    local m = redis.call('GET', KEYS[n + i])
    if m and m ~= ARGV[1] then
      if ARGV[5] then
        watch_add(KEYS[watches + i], ARGV[5], ARGV[6])
      end
      return {2, redis.call('PTTL', KEYS[n + i]), i}
    end
  end
end
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  if delay > 0 then
    redis.call('SET', KEYS[n + i], ARGV[1], 'PX', tonumber(ARGV[2]) + delay)
  end
end
raise_ceiling(ARGV[2])
local out = {1}
for i = n + markers + 1, watches do
  out[#out + 1] = redis.call('GET', KEYS[i]) or '0'
end
return out
