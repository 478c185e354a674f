-- handover: release, and hand the lock to the releasing Client's next waiter
-- when no other Client waits for it on this node.
-- KEYS[1] the lock key; ARGV[1] the caller's token; ARGV[2] the channel on
-- which waiters listen for this key; ARGV[3] the message (the releasing
-- Client's id); ARGV[4] the next waiter's token; ARGV[5] its TTL in ms.
-- Deletes the key only while it holds the caller's token, then publishes
-- ARGV[3] on ARGV[2]. PUBLISH counts the subscribers it reached: the
-- releasing Client's own subscription is at most one. When nobody else
-- listens, the key is set to the next waiter's token at once, as its SET NX
-- would have set it one round trip later; when other Clients listen, they
-- are woken and the key stays free for whoever gets it first.
-- Returns 2 when released and handed over, 1 when only released, 0 when the
-- key is absent or holds another token.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
if redis.call('PUBLISH', ARGV[2], ARGV[3]) > 1 then
  return 1
end
redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5])
return 2
