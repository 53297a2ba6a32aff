--[[
  retentionUnlock: releases a tenant's retention lock only when this sweep still holds it
  (compare and delete), so a sweep whose lock expired never releases another instance's.
  Mirrors unlock in processors/retention/redis-store.ts (and memory-store.ts).

  KEYS[1]  the lock (Keys.retentionLock): "<instance>\n<token>"
  ARGV[1]  the value this sweep set

  Returns 1 when released, 0 when the lock was not this sweep's (or gone).
]]
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
