-- leader_del: delete an election's leader record, compare-and-delete on the
-- token.
-- KEYS[1] the leader record (a hash); ARGV[1] the resigning leader's token.
-- Deletes the record only while it names that token: the next leader's
-- record is never touched. Returns 1 when deleted, 0 otherwise.
if redis.call('TYPE', KEYS[1]).ok == 'hash' and redis.call('HGET', KEYS[1], 'token') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
