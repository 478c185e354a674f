-- leave_queue: a waiter that gives up leaves the fair queue.
-- KEYS[1] the queue; KEYS[2] its leases; ARGV[1] the waiter id.
-- Returns the number of entries removed from the queue (0 or 1).
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('ZREM', KEYS[1], ARGV[1])
