-- release: compare-and-delete, then hand the lock to the next waiter.
-- KEYS[1] the lock key; KEYS[2..5] its queue, leases, entries and departed
-- waiters (see enqueue.lua); ARGV[1] the caller's token; ARGV[2] how long,
-- in ms, to keep the caller from queueing again ('' for a waiter that only
-- gives a grant back and stays); ARGV[3] the caller's own channel, if any:
-- a grant to a waiter listening there (or on its sharded form, watch.lua's
-- own) is not published, the caller reads it from the reply. Under a lock-delay, KEYS[6] is the key's holder
-- marker (acquire_delay.lua) and ARGV[4] the delay in ms: a delete deletes
-- the marker too, and a hand-off sets it for the new holder.
-- Removes the caller from the queue (a waiter leaving: it is remembered as
-- departed for ARGV[2] ms, so that a round of its still on its way cannot
-- queue it again, to be handed a key nobody will release), then deletes the
-- key only while it holds the caller's token, so a lock that expired and now
-- belongs to someone else is never touched. After a delete the first
-- waiter whose lease has not run out gets the key at once, for its TTL, and
-- is told on its channel with the message "<token> <seq>", seq being its
-- last round this node processed: no waiter has to try, and none other is
-- woken. A multi-lock at the head of the queue is not handed the key: the
-- key is reserved for it and it is told (queue.lua's handoff).
-- Returns {0} when the key did not hold the caller's token, {1} when deleted
-- and nobody waits, {1, token, seq} when deleted and handed to that waiter.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
if ARGV[2] ~= '' then
  local keep = tonumber(ARGV[2])
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
  redis.call('ZADD', KEYS[5], now + keep, ARGV[1])
  if redis.call('PTTL', KEYS[5]) < keep then
    redis.call('PEXPIRE', KEYS[5], keep)
  end
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {0}
end
redis.call('DEL', KEYS[1])
if KEYS[6] then
  redis.call('DEL', KEYS[6])
end
local id, seq, kept = handoff(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6], tonumber(ARGV[4]), ARGV[3], now)
if id then
  return {1, id, seq}
elseif kept then
  return {1} -- reserved for a multi-lock at the head (queue.lua)
end
-- An Unlock ends ARGV with 'wake': the key's watch set, named after its
-- queue (scripts.WatchKey), is woken (watch.lua).
if ARGV[#ARGV] == 'wake' then
  watch_wake(KEYS[2] .. ':watch', KEYS[1], now)
end
return {1}
