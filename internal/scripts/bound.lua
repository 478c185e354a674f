-- bound: the longest TTL a standalone node's clients recorded on it
-- (ceiling.lua raises it), for a Client whose own bound may be smaller
-- (internal/node, bound.go).
-- KEYS[1] the node's record (redlock:max-ttl).
-- Returns the record in ms, 0 when there is none.
return tonumber(redis.call('GET', KEYS[1]) or '0') or 0
