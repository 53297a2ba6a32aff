--[[
  treeRelease: lifts a tenant's tree's legal hold (OFF-10, FILE-6): its record is removed and
  returned, so `oz0 hold clear` can audit what the hold was. Idempotent: a hold cleared twice
  answers "" the second time.

  KEYS[1]  the tree's hold record (Keys.treeHold)
  ARGV[1]  none: the script takes no arguments

  Returns the record as HGETALL gives it (field, value, ...), or "" when the tree is not held.
]]
local record = redis.call("HGETALL", KEYS[1])
if #record == 0 then return "" end
redis.call("DEL", KEYS[1])
return record
