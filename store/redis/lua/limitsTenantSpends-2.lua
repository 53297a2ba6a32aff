--[[
  limitsTenantSpends: usages and re-warms spent in a tenant's month (LIM-10), several in one
  call, in their order: each the same step, with the same answer and changes, as limitsTenant
  gives it alone, idempotent by its request as there.

  KEYS[1]  the tenant's month (Keys.tenantMonth)
  KEYS[2]  its timers (Keys.tenantMonthTimers); same hash tag as KEYS[1]
  ARGV[1]  how long an ask holds its worst case without a usage, ms (for the timers' sweep)
  ARGV[2]  how long an answer is kept for replays, ms
  ARGV[3]  TTL of both keys in seconds
  ARGV[4]  n, the number of spends; then 4 values per spend:
           "usage" or "rewarm", the model request ID, the cost (micro-dollars), the event's time (ms)

  Returns 4 numbers per spend, in order: { code, spent, reserved, spent_before } as
  limitsTenant answers it.
]]
local h, timers = KEYS[1], KEYS[2]
local holdMs, keepMs = tonumber(ARGV[1]), tonumber(ARGV[2])
--@include limitsTenantStep

local answers, changed = {}, false
for i = 0, tonumber(ARGV[4]) - 1 do
  local b = 5 + 4 * i
  local op = ARGV[b]
  if op ~= "usage" and op ~= "rewarm" then
    return redis.error_reply("limitsTenantSpends: spend " .. (i + 1) .. " is " .. tostring(op) .. ", not usage or rewarm")
  end
  local out, did = tenantStep(op, ARGV[b + 1], tonumber(ARGV[b + 2]), 0, tonumber(ARGV[b + 3]))
  changed = changed or did
  for j = 1, 4 do answers[#answers + 1] = out[j] end
end
finish()
if changed then
  redis.call("EXPIRE", h, tonumber(ARGV[3]))
  redis.call("EXPIRE", timers, tonumber(ARGV[3]))
end
return answers
