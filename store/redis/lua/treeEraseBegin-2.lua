--[[
  treeEraseBegin: marks a tenant's tree as being erased, unless it is under a legal hold
  (OFF-10, FILE-6). The check and the mark are one step, and treeHold refuses a tree so
  marked, so a hold set while the erasure runs can never be set around it. Idempotent: marking
  again (the erasure run again after a failure) renews the mark.

  KEYS[1]  the tree's hold record (Keys.treeHold)
  KEYS[2]  the tree's erasure marker (Keys.treeErasing)
  ARGV[1]  who, a newline, since when (ms)
  ARGV[2]  the marker's TTL (ms): it ends a crashed erasure's mark

  Returns -1 when the tree is held (nothing marked), else 1.
]]
if redis.call("EXISTS", KEYS[1]) == 1 then return -1 end
redis.call("SET", KEYS[2], ARGV[1], "PX", ARGV[2])
return 1
