-- expire: end every hold on a key now, as if its TTL had run out.
-- KEYS[1] the lock key (a lock's token, the readers' marker, or the
-- permits' hash); KEYS[2] its readers; KEYS[3] its lock-delay marker;
-- KEYS[4] an owner's holds (scripts.HoldsKey).
-- Deletes the key, its readers and an owner's holds. The marker outlives its key by the
-- lock-delay, so it keeps what it had beyond the key's TTL: the delay
-- starts now. The fence counter and the queue are not touched, as an
-- expiry does not touch them.
-- Returns 1 when the key existed, 0 otherwise.
local left = redis.call('PTTL', KEYS[1])
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2])
redis.call('DEL', KEYS[4])
if left > 0 then
  local rest = redis.call('PTTL', KEYS[3])
  if rest > left then
    redis.call('PEXPIRE', KEYS[3], rest - left)
  elseif rest > 0 then
    redis.call('DEL', KEYS[3])
  end
end
return existed
