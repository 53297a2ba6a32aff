--[[
  countLoops: count loops acted on (LOOP-9), each once: per day, tenant, plugin and tool, never
  what was said. The report of tools looping in several tenants reads the counts' fields. A
  batch's loops of one day go in one call.

  KEYS[1]  the day's counts hash (Keys.loopStats(day, "counts")), field "<tenant>|<plugin>|<tool>"
  KEYS[2]  the day's counted loops set (Keys.loopStats(day, "counted")), member the loop's ID
  ARGV[1]  TTL of the day's keys in seconds
  ARGV[2]  n, the number of loops; then 4 values per loop:
           the loop's ID (derived from its input, so a replay names the same loop), tenant,
           plugin, tool

  Returns 2 numbers per loop, in order: { counted, count }
    counted 1  the loop was counted; count is the day's count for its tenant, plugin and tool
    counted 0  this loop was counted before: a replay, nothing changed
]]
local out, changed = {}, false
for i = 0, tonumber(ARGV[2]) - 1 do
  local b = 3 + 4 * i
  local field = ARGV[b + 1] .. "|" .. ARGV[b + 2] .. "|" .. ARGV[b + 3]
  if redis.call("SADD", KEYS[2], ARGV[b]) == 0 then
    out[#out + 1] = 0
    out[#out + 1] = tonumber(redis.call("HGET", KEYS[1], field) or "0")
  else
    out[#out + 1] = 1
    out[#out + 1] = redis.call("HINCRBY", KEYS[1], field, 1)
    changed = true
  end
end
if changed then
  local ttl = tonumber(ARGV[1])
  redis.call("EXPIRE", KEYS[1], ttl)
  redis.call("EXPIRE", KEYS[2], ttl)
end
return out
