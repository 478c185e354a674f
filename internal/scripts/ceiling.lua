-- ceiling: prepended first to every script that grants or extends a lease
-- (see scripts.go). A standalone node's lease ceiling, the key
-- redlock:ceiling, holds a number at least the TTL in ms of every lease the
-- node granted that may still be valid, and lives at least as long as each
-- of them: it is raised, never lowered while it lives. A node that
-- restarted without its data counts again once the largest ceiling its
-- peers report has passed since its restart (internal/node, horizon.go;
-- docs/safety.md).
-- The Client names the ceiling as the last of ARGV (not on a Redis Cluster
-- node, whose restarts the shard check judges); it is taken off ARGV here,
-- so that each script's ARGV are as its header says. It is not one of
-- KEYS: a server in cluster mode behind a plain URL would refuse a script
-- whose KEYS span two slots. Where the node refuses the ceiling's slot
-- (such a server with several shards), it is not kept, and that node
-- vouches for no peer (horizon.lua's read fails there).
-- Before the ceiling's name the Client gives its longest TTL in ms
-- (redlock.WithMaxTTL), which raise_ceiling records on the node as
-- redlock:max-ttl (keyspace.MaxTTL), with no TTL, never lowered: the
-- largest bound of the node's clients wins, and a Client with a smaller
-- one reads it back for its restart quarantine (internal/node, bound.go).
local ARGV = ARGV -- a local: the script's globals are read-only
local CEILING = nil
local BOUND = nil
if ARGV[#ARGV] == 'redlock:ceiling' then
  CEILING = ARGV[#ARGV]
  BOUND = tonumber(ARGV[#ARGV - 1])
  local own = {}
  for i = 1, #ARGV - 2 do
    own[i] = ARGV[i]
  end
  ARGV = own
end

-- raise_ceiling makes the ceiling at least ttl ms and alive at least keep
-- ms (ttl when keep is nil), for a lease of ttl ms granted or extended now,
-- and the recorded max TTL at least the Client's.
local function raise_ceiling(ttl, keep)
  if not CEILING then
    return
  end
  ttl = tonumber(ttl)
  keep = math.max(tonumber(keep) or ttl, ttl)
  if BOUND then
    local b = redis.pcall('GET', 'redlock:max-ttl')
    if type(b) ~= 'table' and (tonumber(b) or 0) < BOUND then
      redis.pcall('SET', 'redlock:max-ttl', BOUND)
    end
  end
  local v = redis.pcall('GET', CEILING)
  local pt = redis.pcall('PTTL', CEILING)
  if type(v) == 'table' or type(pt) == 'table' then
    return -- the node refuses the ceiling's slot
  end
  v = tonumber(v) or 0
  if v < ttl or pt < keep then
    redis.pcall('SET', CEILING, math.max(v, ttl), 'PX', math.max(pt, keep))
  end
end

-- ceiling_now returns the ceiling in ms and its remaining time to live in
-- ms (0 and -2 when there is none, or the node refuses its slot).
local function ceiling_now()
  if not CEILING then
    return 0, -2
  end
  local v = redis.pcall('GET', CEILING)
  local pt = redis.pcall('PTTL', CEILING)
  if type(v) == 'table' or type(pt) == 'table' then
    return 0, -2
  end
  return tonumber(v) or 0, pt
end
