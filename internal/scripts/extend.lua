-- extend: compare-and-pexpire, never shortening.
-- KEYS[1] the lock key; ARGV[1] the caller's token; ARGV[2] the new TTL in ms.
-- Only while the key holds the caller's token, its TTL becomes the larger of
-- ARGV[2] and the TTL it has left: an expired lock is never re-created,
-- another owner's key is never touched, and no extension cuts short a hold
-- that another handle of the same token (Resume's, or the one Resume carried
-- on from) counts on. The caller's validity counts from ARGV[2] alone, so a
-- TTL kept longer costs no safety, only the hold's end on this node.
-- Under a lock-delay, KEYS[2] is the key's holder marker and ARGV[3] the
-- delay in ms: the marker is set again to outlive the key by the delay.
-- An election's key has one more KEY, after the marker if any: its leader
-- record (leader_set.lua), whose TTL becomes the key's, where it exists.
-- The key counts as the caller's only when its value is a token this library
-- hands out for an exclusive lock (rand.Text: 26 characters of A-Z and 2-7,
-- as lookslike.lua reads them): the readers' marker 'r:readers', a
-- multi-lock's or an owner's value, or any value of the application's, is
-- never extended, even when the caller names it as its token (Resume takes
-- a token from its caller, and acts on nothing but a lock's).
-- Returns 1 when extended (or kept), 0 when another token or another kind of
-- lock (readers, permits, a key of the application's) holds the key, -1 when
-- the key is absent (the caller may then heal it, once a majority extended).
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'string' then
  return t == 'none' and -1 or 0
end
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] and #v == 26 and string.match(v, '^[A-Z2-7]+$') then
  local ttl = math.max(tonumber(ARGV[2]), redis.call('PTTL', KEYS[1]))
  redis.call('PEXPIRE', KEYS[1], ttl)
  raise_ceiling(ttl)
  local record = 2
  if ARGV[3] then
    redis.call('SET', KEYS[2], ARGV[1], 'PX', ttl + tonumber(ARGV[3]))
    record = 3
  end
  if KEYS[record] then
    redis.call('PEXPIRE', KEYS[record], ttl)
  end
  return 1
end
if v == false then
  return -1
end
return 0
