-- acquire: SET NX PX with the node's lease ceiling raised (ceiling.lua): a
-- plain lock's acquisition on a standalone node.
-- KEYS[1] the lock key; ARGV[1] the caller's token; ARGV[2] the TTL in ms.
-- Returns 1 when set, 0 when the key was already held.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  raise_ceiling(ARGV[2])
  return 1
end
return 0
