-- acquire: SET NX PX with the node's lease ceiling raised (ceiling.lua): a
-- plain lock's acquisition on a standalone node, when its Client does not
-- know that the ceiling covers the lease already (lease.Env.setNX).
-- KEYS[1] the lock key; ARGV[1] the caller's token; ARGV[2] the TTL in ms;
-- ARGV[3] how long, in ms, the ceiling is kept alive at the least (at least
-- the TTL): the Client's next SETs find it covering them.
-- A key that holds the caller's token already (its bare SET landed on a run
-- of the node whose ceiling the Client did not know) is taken too, and the
-- ceiling raised for it.
-- Returns {1, ceiling, pttl} when set, {0, ceiling, pttl} when the key was
-- held by another token (nothing raised): the ceiling in ms and its
-- remaining time to live in ms afterwards (0 and -2 when the node keeps
-- none here).
local set = 0
-- (pcall: a key of another type answers GET with an error, not a value.)
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) or redis.pcall('GET', KEYS[1]) == ARGV[1] then
  set = 1
  raise_ceiling(ARGV[2], ARGV[3])
end
local c, pt = ceiling_now()
return {set, c, pt}
