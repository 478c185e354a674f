-- acquire_fair: SET NX PX that respects a first-come first-served queue.
-- KEYS[1] the lock key; KEYS[2] the queue (zset: waiter id -> ticket);
-- KEYS[3] the queue's leases (zset: waiter id -> deadline, server ms).
-- ARGV[1] token; ARGV[2] TTL ms; ARGV[3] waiter id; ARGV[4] ticket (the
-- waiter's arrival time, the same on every node); ARGV[5] lease ms.
-- Drops waiters whose lease ran out (dead clients cannot block the queue),
-- (re)enters the caller with its ticket and a fresh lease, and sets the lock
-- only when the caller is at the head of the queue. Both queue keys expire
-- one lease after the last waiter touched them.
-- Returns 1 when the lock was set (the caller leaves the queue), 0 otherwise.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
end
redis.call('ZADD', KEYS[2], 'NX', ARGV[4], ARGV[3])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[5]), ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
redis.call('PEXPIRE', KEYS[3], ARGV[5])
local head = redis.call('ZRANGE', KEYS[2], 0, 0)
if head[1] ~= ARGV[3] then
  return 0
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('ZREM', KEYS[2], ARGV[3])
  redis.call('ZREM', KEYS[3], ARGV[3])
  return 1
end
return 0
