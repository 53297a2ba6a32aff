--[[
  retentionExtend: lengthens a tenant's retention lock while this sweep still holds it
  (compare and expire), for a sweep that takes longer than the lock's first expiry.
  Mirrors extend in processors/retention/redis-store.ts (and memory-store.ts).

  KEYS[1]  the lock (Keys.retentionLock): "<instance>\n<token>"
  ARGV[1]  the value this sweep set
  ARGV[2]  the new expiry, milliseconds from now

  Returns 1 when lengthened, 0 when the lock was not this sweep's (or gone).
]]
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], tonumber(ARGV[2]))
end
return 0
