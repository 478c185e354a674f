-- enqueue: a waiter's round on one node: take the lock if it is free and the
-- waiter is first in the queue, else join (or stay in) the queue.
-- KEYS[1] the lock key; KEYS[2] the queue (zset: waiter token -> ticket);
-- KEYS[3] the leases (zset: waiter token -> deadline, server ms); KEYS[4]
-- the entries (hash: waiter token -> "seq ttl channel"; field "." holds
-- "ticket seq token" of the last waiter the queue gave the lock to);
-- KEYS[5] the waiters that left (zset: token -> until when, server ms).
-- ARGV[1] the waiter's token; ARGV[2] its TTL in ms; ARGV[3] its ticket
-- (arrival time, the same on every node); ARGV[4] the lease in ms; ARGV[5]
-- the round's sequence number; ARGV[6] the channel on which the waiter
-- hears grants; ARGV[7] '1' when the waiter may take a free key.
-- Waiters whose lease ran out are dropped first, so a dead waiter cannot
-- block the queue. The entry records ARGV[5]: release.lua names it in the
-- grant, and the waiter counts the lock's validity from the moment it sent
-- that round, which this node processed before the grant.
-- Under a lock-delay, KEYS[6] is the key's holder marker and ARGV[8] the
-- delay in ms: a free key whose marker names another token (its holder
-- vanished less than the delay ago, see acquire_delay.lua) is not taken,
-- and a key taken sets the marker.
-- Returns {1} when this call set the key; {2, seq} when the key already
-- holds the waiter's token (granted after the waiter's round seq, 0 if
-- unknown); {0, holder, pttl} when queued, holder being "ticket token" of
-- the holder if the queue gave it the lock ('' otherwise) and pttl the
-- key's remaining time to live in ms (0 when the key is free), or
-- {0, '', pttl, 1} when the key is free but in its lock-delay for pttl ms
-- more; {3} when the waiter has left the queue (release.lua) and this
-- round arrived late: it is not queued again;
-- {-1, kind} when the key holds another kind of lock (kind.lua).
-- A key reserved for a multi-lock (queue.lua) is free to the head of the
-- queue, and held for the others.
local other = other_kind(KEYS[1], 'string')
if other then
  return {-1, other}
end
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  local seq = 0
  local h = redis.call('HGET', KEYS[4], '.')
  if h then
    local _, s, tok = string.match(h, '^(%S+) (%S+) (%S+)$')
    if tok == ARGV[1] then seq = tonumber(s) end
  end
  return {2, seq}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gone = redis.call('ZSCORE', KEYS[5], ARGV[1])
if gone and tonumber(gone) > now then
  return {3}
end
queue_expire(KEYS[2], KEYS[3], KEYS[4], now)
local lease = tonumber(ARGV[4])
redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[3], now + lease, ARGV[1])
redis.call('HSET', KEYS[4], ARGV[1], ARGV[5] .. ' ' .. ARGV[2] .. ' ' .. ARGV[6])
for i = 2, 4 do
  if redis.call('PTTL', KEYS[i]) < lease then
    redis.call('PEXPIRE', KEYS[i], lease)
  end
end
local free = v == false or reserved(v)
local delayed = 0
if free and KEYS[6] then
  local m = redis.call('GET', KEYS[6])
  if m and m ~= ARGV[1] then
    delayed = math.max(redis.call('PTTL', KEYS[6]), 1)
  end
end
if free and ARGV[7] == '1' and delayed == 0 then
  local head = redis.call('ZRANGE', KEYS[2], 0, 0)
  if head[1] == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    raise_ceiling(ARGV[2])
    if KEYS[6] then
      redis.call('SET', KEYS[6], ARGV[1], 'PX', tonumber(ARGV[2]) + tonumber(ARGV[8]))
    end
    redis.call('ZREM', KEYS[2], ARGV[1])
    redis.call('ZREM', KEYS[3], ARGV[1])
    redis.call('HDEL', KEYS[4], ARGV[1])
    redis.call('HSET', KEYS[4], '.', ARGV[3] .. ' ' .. ARGV[5] .. ' ' .. ARGV[1])
    -- The HDEL above may have emptied (deleted) the entries: the grant's
    -- record lives at least as long as the grant.
    if redis.call('PTTL', KEYS[4]) < tonumber(ARGV[2]) then
      redis.call('PEXPIRE', KEYS[4], ARGV[2])
    end
    return {1}
  end
end
if delayed > 0 then
  return {0, '', delayed, 1}
end
local holder, pttl = '', 0
if v then
  pttl = redis.call('PTTL', KEYS[1])
  local h = redis.call('HGET', KEYS[4], '.')
  if h then
    local tk, _, tok = string.match(h, '^(%S+) (%S+) (%S+)$')
    if tok == v then holder = tk .. ' ' .. tok end
  end
end
return {0, holder, pttl}
