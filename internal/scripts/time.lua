-- Time returns the node's clock: redis.call('TIME'), { seconds,
-- microseconds } as strings. It reads no key and writes nothing. The
-- client compares successive answers with its own monotonic clock to find
-- a node whose clock jumps or runs fast (redlock/clockcheck.go).
return redis.call('TIME')
