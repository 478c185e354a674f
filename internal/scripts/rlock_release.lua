-- rlock_release: a reader leaves the shared hold of a key on one node.
-- KEYS[1] the lock key; KEYS[2] its readers (see rlock_acquire.lua);
-- KEYS[3..5] the key's queue of waiting writers, their leases and entries
-- (see enqueue.lua); KEYS[6] the key's holder marker. ARGV[1] the reader's
-- token; ARGV[2] the lock-delay in ms ('0': none; rlock_acquire.lua).
-- Under a delay, a reader that expired without a release less than the
-- delay ago keeps the key from its writers: the last live reader to leave
-- deletes the key but hands it to no one, and the marker (kept past that
-- reader by the delay) refuses writers until it expires.
-- Removes the reader's entry (and expired ones); while the key holds the
-- marker, its TTL then reaches the latest remaining reader expiry. The last
-- reader to leave deletes both keys and, as release.lua does after a
-- delete, hands the key at once to the first waiting writer whose lease has
-- not run out, for its TTL, telling it on its channel "<token> <seq>". A
-- key held by a writer is never touched.
-- Returns {1} when the reader's lease was live here, {0} otherwise, and
-- {1, token, seq} when it was and the key went to that writer.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = redis.call('GET', KEYS[1])
local exp = redis.call('ZSCORE', KEYS[2], ARGV[1])
local held = 0
if v == 'r:readers' and exp and tonumber(exp) > now then held = 1 end
local delay = tonumber(ARGV[2]) or 0
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - delay)
if v ~= 'r:readers' then
  return {held}
end
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
if last[1] and tonumber(last[2]) > now then
  local left = tonumber(last[2]) - now
  redis.call('PEXPIRE', KEYS[1], left)
  redis.call('PEXPIRE', KEYS[2], left + delay)
  return {held}
end
if last[1] then
  -- Only expired readers are left, within their delay: the marker keeps
  -- the key from writers until then.
  redis.call('DEL', KEYS[1])
  return {held}
end
redis.call('DEL', KEYS[1], KEYS[2])
if delay > 0 then
  redis.call('DEL', KEYS[6])
end
-- The key is free: the hand-off of release.lua (queue.lua).
local marker = nil
if delay > 0 then
  marker = KEYS[6]
end
local id, seq, kept = handoff(KEYS[1], KEYS[3], KEYS[4], KEYS[5], marker, delay, nil, now)
if id then
  return {held, id, seq}
elseif kept then
  return {held} -- reserved for a multi-lock at the head (queue.lua)
end
-- KEYS[7], given by an Unlock only: the key's watch set (watch.lua).
watch_wake(KEYS[7], KEYS[1], now)
return {held}
