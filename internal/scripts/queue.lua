-- queue: the functions prepended to the scripts that keep a key's queue of
-- waiters (enqueue.lua) or hand a freed key to its first waiter (release.lua,
-- rlock_release.lua, release_all.lua), after watch.lua (see scripts.go). A
-- queue is three companions of its key: the queue (zset: waiter token ->
-- ticket), the leases (zset: waiter token -> deadline, server ms) and the
-- entries (hash: waiter token -> "seq ttl channel"; field "." holds "ticket
-- seq token" of the last waiter the queue gave the key to).
-- A waiting multi-lock (LockAll) queues too, under a waiter id that begins
-- with 'q:' (lease.QueuePrefix) and the same ticket on every key, with seq
-- '0' and channel '-' when it cannot be told. It is never handed a key:
-- a key freed while it heads the queue is reserved for it instead, set to
-- its id for what is left of its lease, so that no later waiter and no
-- SET NX takes it, and the multi-lock takes all its keys at once when it
-- heads every queue (acquire_all.lua). A reserved key is free to the head
-- of its queue, whoever that is by then (an earlier ticket that arrived
-- later takes it), and to nobody else.

-- reserved reports whether v, a lock key's value, is a reservation.
local function reserved(v)
  return v and string.sub(v, 1, 2) == 'q:'
end

-- queue_expire drops the waiters of the queue q whose lease ran out at now.
local function queue_expire(q, leases, entries, now)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', leases, '-inf', now)) do
    redis.call('ZREM', q, id)
    redis.call('ZREM', leases, id)
    redis.call('HDEL', entries, id)
  end
end

-- handoff gives key, free now, to the first waiter of the queue q whose
-- lease has not run out: the key holds the waiter's token for its TTL (and
-- the holder marker, when given, the token for the TTL plus delay ms), the
-- grant is recorded in the entries' ".", and the waiter is told on its
-- channel with the message "<token> <seq>", seq being its last round this
-- node processed; unless that channel is mine (the releasing Client's, who
-- reads the grant from the reply). No waiter has to try, and none other is
-- woken. Returns the waiter's token and seq, or nil when nobody waits.
-- A multi-lock at the head is not handed the key: the key is reserved for
-- it (see above) and it is told "free <key>" on its channel, even when
-- that channel is mine (its Client hears its own message), but not when
-- quiet is true (a failed attempt's cleanup: release_all.lua); it stays
-- queued. Then the third result is true (and the first two nil).
local function handoff(key, q, leases, entries, marker, delay, mine, now, quiet)
  queue_expire(q, leases, entries, now)
  while true do
    local head = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
    if not head[1] then
      return nil
    end
    local id = head[1]
    local e = redis.call('HGET', entries, id)
    if e and reserved(id) then
      local until_ms = tonumber(redis.call('ZSCORE', leases, id)) or now
      redis.call('SET', key, id, 'PX', math.max(until_ms - now, 1))
      local ch = string.match(e, '^%S+ %S+ (%S+)$')
      if ch and ch ~= '-' and not quiet then
        notify(ch, 'free ' .. key)
      end
      return nil, nil, true
    end
    redis.call('ZREM', q, id)
    redis.call('ZREM', leases, id)
    redis.call('HDEL', entries, id)
    if e then
      local seq, ttl, ch = string.match(e, '^(%S+) (%S+) (%S+)$')
      redis.call('SET', key, id, 'PX', ttl)
      raise_ceiling(ttl)
      if marker then
        redis.call('SET', marker, id, 'PX', tonumber(ttl) + delay)
      end
      redis.call('HSET', entries, '.', head[2] .. ' ' .. seq .. ' ' .. id)
      -- The HDEL above may have emptied (deleted) the entries: the grant's
      -- record lives at least as long as the grant.
      if redis.call('PTTL', entries) < tonumber(ttl) then
        redis.call('PEXPIRE', entries, ttl)
      end
      if not (mine and own(ch, mine)) then
        notify(ch, id .. ' ' .. seq)
      end
      return id, tonumber(seq)
    end
  end
end
