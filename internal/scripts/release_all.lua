-- release_all: compare-and-delete over every key of a multi-lock, handing
-- each deleted key to the next waiter of its queue as release.lua does.
-- KEYS in groups of five, one group per lock key: the key, then its queue,
-- leases, entries and departed waiters (see enqueue.lua). ARGV[1] the
-- caller's token.
-- Deletes each key only while it holds the caller's token, so a key that
-- expired and now belongs to someone else is never touched. After a delete
-- the first waiter of that key's queue whose lease has not run out gets the
-- key at once, for its TTL, and is told on its channel with the message
-- "<token> <seq>" (as in release.lua).
-- Returns {d, token1, seq1, token2, seq2, ...}: d the number of keys
-- deleted, then one pair per key handed to a waiter.
-- An Unlock also gives ARGV[2], the number n of lock keys, and after the n
-- groups the n keys' watch sets (watch.lua): a key it leaves free wakes its
-- watchers.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {0}
local n = #KEYS / 5
if ARGV[2] then
  n = tonumber(ARGV[2])
end
for g = 0, n - 1 do
  local key, queue, leases, entries = KEYS[5 * g + 1], KEYS[5 * g + 2], KEYS[5 * g + 3], KEYS[5 * g + 4]
  if redis.call('GET', key) == ARGV[1] then
    redis.call('DEL', key)
    out[1] = out[1] + 1
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', leases, '-inf', now)) do
      redis.call('ZREM', queue, id)
      redis.call('ZREM', leases, id)
      redis.call('HDEL', entries, id)
    end
    while true do
      local head = redis.call('ZRANGE', queue, 0, 0, 'WITHSCORES')
      if not head[1] then
        watch_wake(KEYS[5 * n + g + 1], key, now)
        break
      end
      local id = head[1]
      local e = redis.call('HGET', entries, id)
      redis.call('ZREM', queue, id)
      redis.call('ZREM', leases, id)
      redis.call('HDEL', entries, id)
      if e then
        local seq, ttl, ch = string.match(e, '^(%S+) (%S+) (%S+)$')
        redis.call('SET', key, id, 'PX', ttl)
        redis.call('HSET', entries, '.', head[2] .. ' ' .. seq .. ' ' .. id)
        notify(ch, id .. ' ' .. seq)
        out[#out + 1] = id
        out[#out + 1] = tonumber(seq)
        break
      end
    end
  end
end
return out
