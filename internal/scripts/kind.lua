-- kind: the function prepended to the scripts that refuse a key held by
-- another kind of lock (see scripts.go). The lock kinds keep a key as a
-- string (an exclusive lock, a writer or a multi-lock: the holder's token;
-- readers: the marker 'r:readers') or as a hash (a semaphore's permits).
-- other_kind(key, want) returns the kind key holds when its Redis type is
-- neither absent nor want ('string' or 'hash'): 'permits', 'lock',
-- 'readers', or the Redis type of a key the application made; nil when the
-- key is free or of the wanted type. A script refuses such a key with a
-- reply whose first element is -1 and which names the kind.
local function other_kind(key, want)
  local t = redis.call('TYPE', key).ok
  if t == 'none' or t == want then
    return nil
  end
  if t == 'hash' then
    return 'permits'
  end
  if t == 'string' then
    if redis.call('GET', key) == 'r:readers' then
      return 'readers'
    end
    return 'lock'
  end
  return t
end

