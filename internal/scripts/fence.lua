-- fence: the function prepended to the scripts of phase 2 of fencing
-- (fence_raise.lua, fence_raise_all.lua, rlock_fence.lua, permit_fence.lua,
-- owned_fence.lua; see scripts.go).

-- raise_fence raises the fence counter c to at least f, a decimal integer
-- without leading zeros (counter = max(counter, f)): it never lowers it and
-- never sets a TTL on it. Numbers are compared as decimal strings (length,
-- then lexically), so values above 2^53 keep their precision.
local function raise_fence(c, f)
  local cur = redis.call('GET', c)
  if not cur or #cur < #f or (#cur == #f and cur < f) then
    redis.call('SET', c, f)
  end
end
