-- reign.lua: what the master serving KEYS[1]'s slot says of its reign, in
-- one atomic step on that master (a replica answers MOVED before it runs).
--
-- KEYS[1]: any key in the slot of the lock key (the lock key itself); it
--          only routes the script.
-- ARGV[1]: how long the reign marker is kept (ms), refreshed at every read.
-- ARGV[2]: "look" to change nothing: the reply is the same, but the marker
--          is neither written nor refreshed (redlock.CheckNodes). Called
--          with no key on a connection to one master, the script reads
--          that master.
--
-- A reign is the master's run (run_id) and its replication id
-- (master_replid), which Redis draws anew at every start and at every
-- promotion of a replica. The script finds the shard's marker key: the
-- first redlock:reign{<n>}, n = 0, 1, 2, ..., whose slot this master
-- serves (a key it does not serve raises an error, caught by pcall). The
-- marker holds "<replid> <ms> <node> <epoch> <taken>": a time <ms> on this
-- master's clock at which the reign named was already current; the
-- cluster node id (CLUSTER MYID, kept across restarts in nodes.conf) and
-- config epoch (cluster_my_epoch) of the master that wrote it; and
-- <taken>, a time on that master's clock after the latest takeover
-- (promotion) of a master of this shard that the marker knows of, or -1
-- when it knows of none. When the marker names another reign (or is
-- absent) the script writes the current reign with the current time:
-- true, since INFO and TIME are read in the same step. <taken> is then:
--   - now, when this run took over (second_repl_offset set), or the marker
--     was written by another node (this master's data came from it by
--     replication: it took over since, in this run or an earlier one), or
--     by this node under another config epoch (a takeover gives the new
--     master a new epoch), or by an earlier version of this script (its
--     writer is unknown): the takeover came before now;
--   - the marker's <taken>, when this node wrote it under the same epoch
--     and this run did not take over: the node restarted, or drew a new
--     replication id as a master, and kept its history;
--   - -1, when there is no marker and this run did not take over (a shard
--     never used, or unused for longer than the marker is kept).
-- The same reign keeps its <ms> and <taken>. The fresh-start declaration
-- of the shard is redlock:fresh-start{<n>}, with the same n, holding the
-- run_id of a run that never held a lock granted by an earlier run.
--
-- Returns {role, replid, second_repl_offset, run_id, uptime_s,
--          ms since the marker's time, fresh (1 or 0), n,
--          ms since <taken> or -1, node id or "-"}.
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

local myid = redis.pcall('CLUSTER', 'MYID')
if type(myid) ~= 'string' or myid == '' then
  myid = '-'
end
local cinfo = redis.pcall('CLUSTER', 'INFO')
local epoch = type(cinfo) == 'string' and string.match(cinfo, 'cluster_my_epoch:(%d+)') or '-'

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local seen, taken = now, -1
local m = redis.call('GET', marker)
if m then
  local id, at, node, ep, tk = string.match(m, '^(%x+) (%d+) (%S+) (%S+) (%-?%d+)$')
  if not id then
    id, at = string.match(m, '^(%x+) (%d+)$') -- an earlier version's: writer unknown
    node, ep, tk = '-', '-', nil
  end
  at, tk = tonumber(at), tonumber(tk)
  if id == replid and at and at <= now then
    seen = at
    taken = tk or at
  elseif second >= 0 or node == '-' or node ~= myid or ep ~= epoch then
    taken = now
  else
    taken = tk or now
  end
  if taken > now then
    taken = now
  end
elseif second >= 0 then
  taken = now
end
if ARGV[2] ~= 'look' then
  redis.call('SET', marker, replid .. ' ' .. seen .. ' ' .. myid .. ' ' .. epoch .. ' ' .. taken, 'PX', ARGV[1])
end

local fresh = 0
if runid ~= '' and redis.call('GET', 'redlock:fresh-start{' .. n .. '}') == runid then
  fresh = 1
end
local since = -1
if taken >= 0 then
  since = now - taken
end
return {role, replid, second, runid, uptime, now - seen, fresh, n, since, myid}
