-- watch: the functions prepended to the scripts that register or wake the
-- watchers of a key (see scripts.go). The watchers of a lock key are the
-- Clients blocked in LockAll, RLock or AcquirePermit on it, each known by
-- its channel; they are kept in the key's watch set, a zset companion of the
-- key (channel -> expiry, server ms) that expires with its last watcher.
-- A watch set of another type (a key the application made) is left alone:
-- its watchers only lose their wake-up.

-- notify publishes msg on the channel ch: with SPUBLISH when ch is a
-- sharded channel (it begins with '{': keyslot.ShardChannel, in the key's
-- slot, which a Client listening to a Redis 7 cluster registers, and which
-- only this shard then hears), with PUBLISH otherwise, and when this shard
-- refuses SPUBLISH (a shard of an older version in a cluster being
-- upgraded): a message is worth less than the release that sends it.
local function notify(ch, msg)
  if string.byte(ch, 1) == 123 then
    local r = redis.pcall('SPUBLISH', ch, msg)
    if type(r) ~= 'table' or not r.err then
      return
    end
  end
  redis.call('PUBLISH', ch, msg)
end

-- own reports whether the channel ch is the caller's channel mine, plain
-- or sharded.
local function own(ch, mine)
  return ch == mine or string.match(ch, '^{[^}]*}(.*)$') == mine
end

-- watch_add registers the channel ch in the watch set w for lease ms, if
-- both are given: a watcher's expiry only grows (the calls of one Client
-- share its channel), and expired watchers are dropped.
local function watch_add(w, ch, lease)
  if not w or not ch or ch == '' then
    return
  end
  local tw = redis.call('TIME')
  local at = tonumber(tw[1]) * 1000 + math.floor(tonumber(tw[2]) / 1000)
  lease = tonumber(lease)
  local old = redis.pcall('ZSCORE', w, ch)
  if type(old) == 'table' then
    return
  end
  redis.call('ZREMRANGEBYSCORE', w, '-inf', at)
  if not old or tonumber(old) < at + lease then
    redis.call('ZADD', w, at + lease, ch)
  end
  if redis.call('PTTL', w) < lease then
    redis.call('PEXPIRE', w, lease)
  end
end

-- watch_wake tells each watcher in the watch set w whose lease has not run
-- out at now that key is free, with the message "free <key>" on its
-- channel, and drops the set: a watcher still blocked registers again with
-- its next attempt. When nobody watches it costs one EXISTS.
local function watch_wake(w, key, now)
  if not w or redis.call('EXISTS', w) == 0 then
    return
  end
  local live = redis.pcall('ZRANGEBYSCORE', w, '(' .. now, '+inf')
  if live.err then
    return
  end
  for _, ch in ipairs(live) do
    notify(ch, 'free ' .. key)
  end
  redis.call('DEL', w)
end

