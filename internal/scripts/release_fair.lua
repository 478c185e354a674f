-- release_fair: release for a lock taken in a fair queue, announcing which
-- waiter is next so that only it wakes.
-- KEYS[1] the lock key; KEYS[2] the queue (zset: waiter id -> ticket);
-- KEYS[3] the queue's leases (zset: waiter id -> deadline, server ms).
-- ARGV[1] the caller's token; ARGV[2] the channel; ARGV[3] the releasing
-- Client's id.
-- Deletes the key only while it holds the caller's token. After a delete it
-- drops the waiters whose lease ran out (as acquire_fair does, so that a dead
-- waiter is never named) and publishes "<ARGV[3]> <id of the queue's head>"
-- on ARGV[2], or just ARGV[3] when the queue is empty.
-- Returns 1 when deleted, 0 when the key is absent or holds another token.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
end
local head = redis.call('ZRANGE', KEYS[2], 0, 0)
if head[1] then
  redis.call('PUBLISH', ARGV[2], ARGV[3] .. ' ' .. head[1])
else
  redis.call('PUBLISH', ARGV[2], ARGV[3])
end
return 1
