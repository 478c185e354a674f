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
-- ARGV[2] the number n of lock keys; ARGV[3] the lock-delay in ms ('0':
-- none): under a delay each group has a sixth key, the key's holder marker,
-- deleted with the key or given to the waiter the key is handed to (as in
-- release.lua). An Unlock also gives, after the n groups, the n keys' watch
-- sets (watch.lua): a key it leaves free wakes its watchers.
-- ARGV[4] ('' when absent): for a waiting multi-lock leaving the queues
-- (its token is then its waiter id, lease.QueuePrefix), how long in ms to
-- remember it as departed, so that an attempt of its still on its way
-- does not queue it again. The caller leaves every key's queue first; a
-- key reserved for it (queue.lua) is deleted and handed on like a held
-- one. It gives the watch sets too, as an Unlock does: a reservation of
-- its that it leaves free wakes the key's watchers and drops their set
-- (its own entry included), since the release that reserved the key woke
-- nobody. A key a release reserves for a multi-lock at the head of its queue
-- is not counted as handed to a waiter and wakes no watcher. The cleanup of
-- a failed attempt (neither watch sets nor ARGV[4]) reserves such a key
-- without telling the multi-lock: the head may be the very call whose take
-- on a minority this undoes, which keeps its turn so, and a message would
-- wake it at once into the same split, again and again; it finds the key
-- at its next attempt (a retry or a beat).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {0}
local n = tonumber(ARGV[2])
local delay = tonumber(ARGV[3]) or 0
local size = 5
if delay > 0 then
  size = 6
end
local keep = ARGV[4] or ''
local quiet = keep == '' and KEYS[size * n + 1] == nil -- a cleanup
for g = 0, n - 1 do
  local b = size * g
  local key, queue, leases, entries = KEYS[b + 1], KEYS[b + 2], KEYS[b + 3], KEYS[b + 4]
  local marker = nil
  if delay > 0 then
    marker = KEYS[b + 6]
  end
  redis.call('ZREM', queue, ARGV[1])
  redis.call('ZREM', leases, ARGV[1])
  redis.call('HDEL', entries, ARGV[1])
  if keep ~= '' then
    local gone = KEYS[b + 5]
    redis.call('ZREMRANGEBYSCORE', gone, '-inf', now)
    redis.call('ZADD', gone, now + tonumber(keep), ARGV[1])
    if redis.call('PTTL', gone) < tonumber(keep) then
      redis.call('PEXPIRE', gone, keep)
    end
  end
  if redis.call('GET', key) == ARGV[1] then
    redis.call('DEL', key)
    if marker then
      redis.call('DEL', marker)
    end
    out[1] = out[1] + 1
    local id, seq, kept = handoff(key, queue, leases, entries, marker, delay, nil, now, quiet)
    if id then
      out[#out + 1] = id
      out[#out + 1] = seq
    elseif not kept then
      watch_wake(KEYS[size * n + g + 1], key, now)
    end
  end
end
return out
