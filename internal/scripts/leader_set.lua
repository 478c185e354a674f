-- leader_set: record an election's leader next to its key, compare-and-set
-- on the token.
-- KEYS[1] the election key; KEYS[2] its leader record (a hash).
-- ARGV[1] the leader's token; ARGV[2] its value; ARGV[3] its term;
-- ARGV[4] the record's revision (0 for the campaign's, +1 per Proclaim).
-- Writes {token, value, term, rev} only while the election key holds the
-- token: a leader whose lock is gone never writes. A record of the same
-- token with a higher revision is kept (a late write never undoes a later
-- one). The record expires with the key (PX the key's PTTL; the
-- election's extensions carry it on, extend.lua), so a leader that
-- vanished leaves none behind. Returns 1 when the key holds the token
-- (written or kept), 0 when it does not (nothing written).
if redis.call('TYPE', KEYS[1]).ok ~= 'string' or redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if redis.call('TYPE', KEYS[2]).ok == 'hash' and redis.call('HGET', KEYS[2], 'token') == ARGV[1] then
  local rev = tonumber(redis.call('HGET', KEYS[2], 'rev'))
  if rev and rev > tonumber(ARGV[4]) then
    return 1
  end
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'token', ARGV[1], 'value', ARGV[2], 'term', ARGV[3], 'rev', ARGV[4])
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then
  redis.call('PEXPIRE', KEYS[2], pttl)
end
return 1
