--[[
  limitsTenant: a tenant's monthly budget (LIM-10), one step per input: an ask is checked and
  holds its worst case; a release drops the worst case of a call the tree refused; a usage
  drops it and spends what the call cost; a re-warm only spends. Mirrors tenantAsk,
  tenantRelease and tenantSettle in processors/limits/tenant-budget.ts.

  KEYS[1]  the tenant's month (Keys.tenantMonth): spent, reserved, res:<request> worst cases,
           and answers <op>:<request>
  KEYS[2]  its timers (Keys.tenantMonthTimers), a sorted set by time (ms): h:<request> drops a
           held worst case, d:<op>:<request> forgets an answer; same hash tag as KEYS[1]
  ARGV[1]  "ask", "release", "usage" or "rewarm"
  ARGV[2]  the model request ID (idempotence)
  ARGV[3]  ask: the worst case; usage, rewarm: the cost; micro-dollars
  ARGV[4]  ask: the tenant's monthly budget, micro-dollars
  ARGV[5]  the event's time, ms
  ARGV[6]  how long an ask holds its worst case without a usage, ms
  ARGV[7]  how long an answer is kept for replays, ms
  ARGV[8]  TTL of both keys in seconds

  Returns { code, spent, reserved, spent_before }, code 0 allow, 1 budget (TENANT_CODES in
  processors/limits/tenant-budget.ts); the same again for the same input while it is kept.
  A release returns { 0, spent, reserved, spent }.
]]
local h, timers = KEYS[1], KEYS[2]
local holdMs, keepMs = tonumber(ARGV[6]), tonumber(ARGV[7])
--@include limitsTenantStep

local function touch()
  redis.call("EXPIRE", h, tonumber(ARGV[8]))
  redis.call("EXPIRE", timers, tonumber(ARGV[8]))
end

if ARGV[1] == "release" then
  drop(ARGV[2])
  finish()
  touch()
  return { 0, count("spent"), count("reserved"), count("spent") }
end

local out, changed = tenantStep(ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]))
-- the sweep of timers may have changed the month even when the step is a replay
finish()
if changed then touch() end
return out
