-- acquire_all: take every key of a multi-lock on this node, or none.
-- ARGV[1] the caller's token; ARGV[2] the TTL in ms; ARGV[3] n, the number
-- of lock keys; ARGV[4] the lock-delay in ms ('0': none; acquire_delay.lua).
-- KEYS: the n lock keys; under a delay, their n holder markers; for a
-- fenced acquisition, their n fence counters; for a blocked LockAll that
-- registers as a watcher, their n watch sets; for a waiting LockAll, each
-- key's queue, leases, entries and departed waiters (enqueue.lua), four
-- per key; each group in the order of the keys.
-- If none of the lock keys exists, sets each to the token with PX ttl and,
-- in the same atomic step, reads the fence counters; if any exists (held by
-- anyone, even by the caller), sets nothing, so a failed attempt leaves this
-- node as it found it (but for its place in the queues, below). Under a
-- delay, a free key whose marker names another token (its holder's lock
-- expired without a release less than the delay ago) refuses the set too,
-- and each key set gets its marker, for TTL + delay.
-- Returns {1, c1, ..., cn} when set (ci the counter of KEYS[i], "0" if
-- absent; no counters when none were given), {0, i} when KEYS[i] was held,
-- {-1, kind, i} when KEYS[i] holds another kind of lock (kind.lua), {2, ms,
-- i} when KEYS[i] is in its lock-delay for ms more.
-- ARGV[5] the Client's channel ('' or absent: no watch sets) and ARGV[6] a
-- lease in ms: the channel then watches the key found held (watch.lua).
-- ARGV[7] a waiting LockAll's waiter id ('' or absent: it does not queue),
-- ARGV[8] its ticket (the same on every node and key, for the whole call)
-- and ARGV[9] the lease of its place in ms. It joins (or stays in) every
-- key's queue, with channel ARGV[5] ('-' when ''), unless it left them
-- already (release_all.lua); a key reserved for a multi-lock (queue.lua)
-- counts as free when it heads that key's queue, and a free key held for
-- nobody else counts as held when it does not. It takes the keys when each
-- is free to it, and stays queued: the call leaves the queues when it ends
-- (release_all.lua with a keep), so that the cleanup of a take on a
-- minority of the nodes reserves the keys for it there again instead of
-- handing them to the next waiters. Otherwise it reserves for
-- itself every free key whose queue it heads, for its lease, so that no
-- later waiter overtakes it there: it takes them all once the others are
-- freed, whatever single-key waiters came after it.
local n = tonumber(ARGV[3])
local delay = tonumber(ARGV[4]) or 0
local waiter = ARGV[7] or ''
local channel = ARGV[5] or ''
local markers, fences = 0, 0
if delay > 0 then
  markers = n
end
local qbase = #KEYS
if waiter ~= '' then
  qbase = #KEYS - 4 * n
end
local wbase = qbase
if channel ~= '' then
  wbase = qbase - n
end
fences = wbase - n - markers

local function watch(i)
  if channel ~= '' then
    watch_add(KEYS[wbase + i], channel, ARGV[6])
  end
end

local now = 0
if waiter ~= '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local gone = redis.call('ZSCORE', KEYS[qbase + 4], waiter)
  if gone and tonumber(gone) > now then
    waiter = '' -- it left: a late attempt of a call that has ended
  end
end

-- queue(i) returns the queue keys of lock key i.
local function queue(i)
  local b = qbase + 4 * (i - 1)
  return KEYS[b + 1], KEYS[b + 2], KEYS[b + 3]
end

for i = 1, n do
  local other = other_kind(KEYS[i], 'string')
  if other then
    return {-1, other, i}
  end
end

if waiter ~= '' then
  local lease = tonumber(ARGV[9])
  local ch = channel
  if ch == '' then
    ch = '-'
  end
  for i = 1, n do
    local q, leases, entries = queue(i)
    queue_expire(q, leases, entries, now)
    redis.call('ZADD', q, 'NX', ARGV[8], waiter)
    redis.call('ZADD', leases, now + lease, waiter)
    redis.call('HSET', entries, waiter, '0 ' .. ARGV[2] .. ' ' .. ch)
    for _, k in ipairs({q, leases, entries}) do
      if redis.call('PTTL', k) < lease then
        redis.call('PEXPIRE', k, lease)
      end
    end
  end
end

-- state(i) says what lock key i is to the caller: 'free', 'held' (by a
-- lock, or kept for another waiter), or 'delayed' with the delay left.
local function state(i)
  local v = redis.call('GET', KEYS[i])
  local head = nil
  if waiter ~= '' then
    local q = queue(i)
    head = redis.call('ZRANGE', q, 0, 0)[1]
  end
  if v and not (reserved(v) and head == waiter) then
    return 'held'
  end
  if head and head ~= waiter then
    return 'held' -- another waiter's turn (it takes the key at its round)
  end
  if delay > 0 then
    local m = redis.call('GET', KEYS[n + i])
    if m and m ~= ARGV[1] then
      return 'delayed', redis.call('PTTL', KEYS[n + i])
    end
  end
  return 'free'
end

local refusal = nil
for i = 1, n do
  local s, left = state(i)
  if s ~= 'free' and not refusal then
    if s == 'held' then
      refusal = {0, i}
    else
      refusal = {2, left, i}
    end
    watch(i)
  end
end
if refusal then
  if waiter ~= '' then
    -- Keep our turn: reserve each free key whose queue we head.
    for i = 1, n do
      local v = redis.call('GET', KEYS[i])
      local q = queue(i)
      local head = redis.call('ZRANGE', q, 0, 0)[1]
      if head == waiter and (v == false or reserved(v)) then
        redis.call('SET', KEYS[i], waiter, 'PX', ARGV[9])
      end
    end
  end
  return refusal
end

for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  if delay > 0 then
    redis.call('SET', KEYS[n + i], ARGV[1], 'PX', tonumber(ARGV[2]) + delay)
  end
end
raise_ceiling(ARGV[2])
local out = {1}
for i = n + markers + 1, n + markers + fences do
  out[#out + 1] = redis.call('GET', KEYS[i]) or '0'
end
return out
