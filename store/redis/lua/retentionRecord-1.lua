--[[
  retentionRecord: keeps a tenant's last retention sweep, unless a later sweep is kept already
  (a record whose "at" is later stands), so a slow sweep finishing after a newer one does not
  replace it, and writing the same record again changes nothing.
  Mirrors record in processors/retention/redis-store.ts (and memory-store.ts).

  KEYS[1]  every tenant's last sweep (Keys.retentionLast): a hash, tenant to the record as JSON
  ARGV[1]  the tenant
  ARGV[2]  the record as JSON, with "at" (epoch ms) when the sweep started

  Returns 1 when kept, 0 when a later sweep's record stands.
]]
local new = cjson.decode(ARGV[2])
local old = redis.call("HGET", KEYS[1], ARGV[1])
if old then
  local ok, was = pcall(cjson.decode, old)
  if ok and type(was) == "table" and tonumber(was.at) and tonumber(was.at) > tonumber(new.at) then return 0 end
end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
return 1
