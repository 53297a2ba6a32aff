--[[
  countLoop: count one loop acted on (LOOP-9), once per loop: per day, tenant, plugin and tool,
  never what was said. The report of tools looping in several tenants reads the counts' fields.

  KEYS[1]  the day's counts hash (Keys.loopStats(day, "counts")), field "<tenant>|<plugin>|<tool>"
  KEYS[2]  the day's counted loops set (Keys.loopStats(day, "counted")), member the loop's ID
  ARGV[1]  the loop's ID (derived from its input, so a replay names the same loop)
  ARGV[2]  tenant
  ARGV[3]  plugin
  ARGV[4]  tool
  ARGV[5]  TTL of the day's keys in seconds

  Returns { counted, count }:
    counted 1  the loop was counted; count is the day's count for tenant, plugin and tool
    counted 0  this loop was counted before: a replay, nothing changed
]]
local field = ARGV[2] .. "|" .. ARGV[3] .. "|" .. ARGV[4]
if redis.call("SADD", KEYS[2], ARGV[1]) == 0 then
  return { 0, tonumber(redis.call("HGET", KEYS[1], field) or "0") }
end
local count = redis.call("HINCRBY", KEYS[1], field, 1)
local ttl = tonumber(ARGV[5])
redis.call("EXPIRE", KEYS[1], ttl)
redis.call("EXPIRE", KEYS[2], ttl)
return { 1, count }
