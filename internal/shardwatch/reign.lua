-- reign.lua: what the master serving KEYS[1]'s slot says of its reign, in
-- one atomic step on that master (a replica answers MOVED before it runs).
--
-- KEYS[1]: any key in the slot of the lock key (the lock key itself); it
--          only routes the script.
-- ARGV[1]: how long the reign marker is kept (ms), refreshed at every read.
--
-- A reign is the master's run (run_id) and its replication id
-- (master_replid), which Redis draws anew at every start and at every
-- promotion of a replica. The script finds the shard's marker key: the
-- first redlock:reign{<n>}, n = 0, 1, 2, ..., whose slot this master
-- serves (a key it does not serve raises an error, caught by pcall). The
-- marker holds "<replid> <ms>": a time on this master's clock at which the
-- reign named was already current. When it names another reign (or is
-- absent) the script writes the current reign with the current time: true,
-- since INFO and TIME are read in the same step. The fresh-start
-- declaration of the shard is redlock:fresh-start{<n>}, with the same n,
-- holding the run_id of a run that never held a lock granted by an
-- earlier run.
--
-- Returns {role, replid, second_repl_offset, run_id, uptime_s,
--          ms since the marker's time, fresh (1 or 0), n}.
local repl = redis.call('INFO', 'replication')
local role = string.match(repl, 'role:(%a+)') or ''
local replid = string.match(repl, 'master_replid:(%x+)') or ''
local second = tonumber(string.match(repl, 'second_repl_offset:(%-?%d+)') or '0')
local srv = redis.call('INFO', 'server')
local runid = string.match(srv, 'run_id:(%x+)') or ''
local uptime = tonumber(string.match(srv, 'uptime_in_seconds:(%d+)') or '0')

local n = 0
while type(redis.pcall('EXISTS', 'redlock:reign{' .. n .. '}')) ~= 'number' do
  n = n + 1
  if n > 1000000 then
    return redis.error_reply('ERR reign.lua: no local slot')
  end
end
local marker = 'redlock:reign{' .. n .. '}'

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local seen = now
local m = redis.call('GET', marker)
if m then
  local id, at = string.match(m, '^(%x+) (%d+)$')
  if id == replid and tonumber(at) <= now then
    seen = tonumber(at)
  end
end
redis.call('SET', marker, replid .. ' ' .. seen, 'PX', ARGV[1])

local fresh = 0
if runid ~= '' and redis.call('GET', 'redlock:fresh-start{' .. n .. '}') == runid then
  fresh = 1
end
return {role, replid, second, runid, uptime, now - seen, fresh, n}
