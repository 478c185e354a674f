-- permit_release: a holder gives its permit back on one node.
-- KEYS[1] the semaphore (see permit_acquire.lua). ARGV[1] the holder's
-- token; ARGV[2] the lock-delay in ms ('0' or absent: none): another
-- holder's expired slot is kept for it (permit_acquire.lua).
-- Frees every slot that holds the caller's token (a failed attempt may have
-- taken a slot other than the one the majority agreed on), and expired
-- slots; other holders' slots are never touched. A semaphore left empty
-- vanishes.
-- Returns 1 when a live permit of the caller was freed here, 0 otherwise.
-- KEYS[2], given by an Unlock only: the semaphore's watch set (watch.lua),
-- whose watchers are woken when a live permit is freed.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then
  return 0
end
local held = 0
local delay = tonumber(ARGV[2]) or 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local tok, exp = string.match(all[i + 1], '^(%S+) (%d+)$')
  if tok == ARGV[1] or tonumber(exp) + delay <= now then
    redis.call('HDEL', KEYS[1], all[i])
    if tok == ARGV[1] and tonumber(exp) > now then held = 1 end
  end
end
if held == 1 then
  watch_wake(KEYS[2], KEYS[1], now)
end
return held
