-- status: read a lock and its holder record without changing either.
-- KEYS[1] the lock key, KEYS[2] its holder record (KEY:holder).
-- Returns {value or false, PTTL in ms (-2 absent, -1 no expiry), record or
-- false}. A KEYS[2] that is not a string reads as false: not a record.
local record = redis.pcall('GET', KEYS[2])
if type(record) ~= 'string' then
  record = false
end
return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), record}
