-- horizon: what a standalone node tells of its run and its lease ceiling
-- (ceiling.lua), in one step, for the return of a restarted peer
-- (internal/node, horizon.go).
-- KEYS[1] the node's lease ceiling (redlock:ceiling); KEYS[2] its
-- fresh-start declaration (redlock:fresh-start).
-- Returns {run_id, ceiling, declaration}: the ceiling in ms (0 when there
-- is none: every lease the node granted has expired), the declaration's
-- value ('' when there is none).
local srv = redis.call('INFO', 'server')
local run = string.match(srv, 'run_id:(%x+)') or ''
local c = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
local d = redis.call('GET', KEYS[2]) or ''
return {run, c, d}
