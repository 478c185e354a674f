-- queue: the functions prepended to the scripts that keep a key's queue of
-- waiters (enqueue.lua) or hand a freed key to its first waiter (release.lua,
-- rlock_release.lua, release_all.lua), after watch.lua (see scripts.go). A
-- queue is three companions of its key: the queue (zset: waiter token ->
-- ticket), the leases (zset: waiter token -> deadline, server ms) and the
-- entries (hash: waiter token -> "seq ttl channel"; field "." holds "ticket
-- seq token" of the last waiter the queue gave the key to).

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
local function handoff(key, q, leases, entries, marker, delay, mine, now)
  queue_expire(q, leases, entries, now)
  while true do
    local head = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
    if not head[1] then
      return nil
    end
    local id = head[1]
    local e = redis.call('HGET', entries, id)
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
