-- status: read a lock without changing it.
-- KEYS[1] the lock key.
-- Returns {value or false, PTTL in ms (-2 absent, -1 no expiry)}.
return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}
