-- leader_get: read an election's key and leader record without changing
-- them.
-- KEYS[1] the election key; KEYS[2] its leader record (a hash).
-- Returns {token or false, PTTL in ms (-2 when the key holds no lock),
-- record token, value, term, rev (each false without a record)}.
local tok, pttl = false, -2
if redis.call('TYPE', KEYS[1]).ok == 'string' then
  tok = redis.call('GET', KEYS[1])
  pttl = redis.call('PTTL', KEYS[1])
end
if redis.call('TYPE', KEYS[2]).ok ~= 'hash' then
  return {tok, pttl, false, false, false, false}
end
local r = redis.call('HMGET', KEYS[2], 'token', 'value', 'term', 'rev')
return {tok, pttl, r[1], r[2], r[3], r[4]}
