-- admit: the fresh-start declaration of a node that restarted without its
-- data and whose horizon has passed: every lease it could have forgotten
-- has expired (internal/node, horizon.go). Every Client that connects to
-- the node, or reads it, then counts it at once.
-- KEYS[1] the declaration (redlock:fresh-start); ARGV[1] the run_id of the
-- run it declares.
-- Sets it only while the node's run is ARGV[1]: a node that restarted again
-- since is not declared.
-- Returns 1 when set, 0 otherwise.
local srv = redis.call('INFO', 'server')
if string.match(srv, 'run_id:(%x+)') ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
