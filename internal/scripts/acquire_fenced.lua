-- acquire_fenced: phase 1 of a fenced acquisition.
-- KEYS[1] the lock key; KEYS[2] its fence counter; ARGV[1] the caller's
-- token; ARGV[2] the TTL in ms.
-- Runs SET KEYS[1] token NX PX ttl and, in the same atomic step, reads the
-- counter, so the value read is at least every fence written on this node
-- while an earlier owner held the key.
-- Returns {1, counter} when set (counter "0" if absent), {0} when the key was
-- already held.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('GET', KEYS[2]) or '0'}
end
return {0}
