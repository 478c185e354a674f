-- lookslike: which of KEYS hold what a lock of this package writes under
-- the caller's own key name: a string that is a token (rand.Text: 26
-- characters of A-Z and 2-7; an exclusive lock, a writer, a multi-lock's
-- key), or a hash of permits whose slot "0" begins with one ("<token>
-- <expiry>", permit_acquire.lua). Companions, readers and markers have
-- reserved names, which the caller checks itself. It reads only; it
-- returns the names of the keys found, in KEYS order.
local function token(v)
  return v ~= nil and v ~= false and #v == 26 and string.match(v, '^[A-Z2-7]+$') ~= nil
end
local out = {}
for _, k in ipairs(KEYS) do
  local t = redis.call('TYPE', k)['ok']
  local v
  if t == 'string' then
    v = redis.call('GET', k)
  elseif t == 'hash' then
    v = redis.call('HGET', k, '0')
    if v then
      v = string.match(v, '^(%S+) ')
    end
  end
  if token(v) then
    out[#out + 1] = k
  end
end
return out
