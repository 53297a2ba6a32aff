--[[
  treeErase: erases a tenant's tree's Redis state, unless the tree is under a legal hold
  (OFF-10, FILE-6): the check and the removal are one step, so a hold set meanwhile is never
  erased around. Idempotent: keys already gone count as nothing.

  KEYS[1]  the tree's hold record (Keys.treeHold)
  ARGV[1]  the tree's hash tag as a key prefix (`<prefix>:{tree:<tenant>/<tree>}:`): every
           name after it must start with it, so only that tree's keys (one slot) are touched
  ARGV[2..] the names of the tree's keys to remove (found by SCAN with Keys.treeKeysPattern)

  Returns -1 when the tree is held (nothing removed), else the number of keys removed.
]]
if redis.call("EXISTS", KEYS[1]) == 1 then return -1 end
local prefix = ARGV[1]
for i = 2, #ARGV do
  if string.sub(ARGV[i], 1, #prefix) ~= prefix or ARGV[i] == KEYS[1] then
    return redis.error_reply("treeErase: " .. ARGV[i] .. " is not a key of the tree " .. prefix)
  end
end
local removed = 0
for i = 2, #ARGV do
  removed = removed + redis.call("DEL", ARGV[i])
end
return removed
