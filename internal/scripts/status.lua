-- status: read a lock key without changing it, whatever its kind.
-- KEYS[1] the lock key; KEYS[2], optional, its readers (rlock_*.lua).
-- Returns {value or false, PTTL in ms (-2 absent, -1 no expiry), kind,
-- leases}: for an exclusive lock, a writer or a multi-lock's key, kind
-- 'lock', the holder's token and 1 lease; for readers, 'readers', false and
-- the number of live readers (-1 without KEYS[2]: ask again with it, only
-- for a readers key, so that a call about a lock names no other key); for a
-- semaphore, 'permits', false and the
-- number of live permits; for an absent key, '' and 0; for a key of another
-- Redis type, that type, false and 0; for a key reserved for a waiting
-- multi-lock (queue.lua: nobody holds it, it waits for the head of its
-- queue), 'reserved', the waiter's id and 0 leases.
local pttl = redis.call('PTTL', KEYS[1])
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' then
  return {false, -2, '', 0}
end
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
if t == 'hash' then
  local live = 0
  local all = redis.call('HGETALL', KEYS[1])
  for i = 2, #all, 2 do
    local exp = tonumber(string.match(all[i], ' (%d+)$'))
    if exp and exp > now then live = live + 1 end
  end
  return {false, pttl, 'permits', live}
end
if t ~= 'string' then
  return {false, pttl, t, 0}
end
local v = redis.call('GET', KEYS[1])
if v == 'r:readers' then
  if not KEYS[2] then
    return {false, pttl, 'readers', -1}
  end
  return {false, pttl, 'readers', redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')}
end
if string.sub(v, 1, 2) == 'q:' then
  return {v, pttl, 'reserved', 0}
end
return {v, pttl, 'lock', 1}
