-- lookslike: which of KEYS hold what a lock of this package writes under
-- the caller's own key name, with a TTL (every lease's key has one): a
-- string that is a token (rand.Text: 26 characters of A-Z and 2-7; an
-- exclusive lock, a fenced one, a writer, a hand-off to a waiter), a
-- multi-lock's token ('m:' and a token), an owner's value ('o:' and the
-- owner), the readers' marker 'r:readers', or a hash of permits one of
-- whose slots holds "<token> <expiry>" (permit_acquire.lua), in any slot.
-- Every other name of the library's is under the prefix "redlock:", which the
-- caller tells by name, and a standalone node's lease ceiling tells of every
-- lease whatever its value (redlock, nodes_fresh_lease.go): this is what
-- a node that keeps no ceiling (a cluster's shard master) is judged by.
-- It reads only; it returns the names of the keys found, in KEYS order.
local function token(v)
  return type(v) == 'string' and #v == 26 and string.match(v, '^[A-Z2-7]+$') ~= nil
end
local function lock_value(v)
  if type(v) ~= 'string' then
    return false
  end
  if v == 'r:readers' or (string.sub(v, 1, 2) == 'o:' and #v > 2) then
    return true
  end
  if string.sub(v, 1, 2) == 'm:' then
    v = string.sub(v, 3)
  end
  return token(v)
end
local function permits(k)
  for _, v in ipairs(redis.call('HVALS', k)) do
    if token(string.match(v, '^(%S+) %d+$')) then
      return true
    end
  end
  return false
end
local out = {}
for _, k in ipairs(KEYS) do
  local t = redis.call('TYPE', k)['ok']
  local found = false
  if redis.call('PTTL', k) > 0 then
    if t == 'string' then
      found = lock_value(redis.call('GET', k))
    elseif t == 'hash' then
      found = permits(k)
    end
  end
  if found then
    out[#out + 1] = k
  end
end
return out
