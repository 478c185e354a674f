-- acquire_all: take every key of a multi-lock on this node, or none.
-- KEYS[1..n] the lock keys, n = ARGV[3]; KEYS[n+1..2n] their fence
-- counters, in the same order, only for a fenced acquisition.
-- ARGV[1] the caller's token; ARGV[2] the TTL in ms; ARGV[3] n.
-- If none of the lock keys exists, sets each to the token with PX ttl and,
-- in the same atomic step, reads the fence counters; if any exists (held by
-- anyone, even by the caller), sets nothing, so a failed attempt leaves this
-- node as it found it.
-- Returns {1, c1, ..., cn} when set (ci the counter of KEYS[i], "0" if
-- absent; no counters when none were given), {0, i} when KEYS[i] was held,
-- {-1, kind, i} when KEYS[i] holds another kind of lock (kind.lua).
-- A blocked LockAll also gives ARGV[4], its Client's channel, ARGV[5], a
-- lease in ms, and after the other KEYS the n keys' watch sets: the channel
-- then watches the key found held (watch.lua).
local n = tonumber(ARGV[3])
local last = #KEYS
if ARGV[4] then
  last = #KEYS - n
end
for i = 1, n do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    local other = other_kind(KEYS[i], 'string')
    if other then
      return {-1, other, i}
    end
    if ARGV[4] then
      watch_add(KEYS[last + i], ARGV[4], ARGV[5])
    end
    return {0, i}
  end
end
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
local out = {1}
for i = n + 1, last do
  out[#out + 1] = redis.call('GET', KEYS[i]) or '0'
end
return out
