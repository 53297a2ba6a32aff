-- Shared by limitsTenant and limitsTenantSpends: one step on a tenant's month (LIM-10). The
-- including script sets h (the month), timers (its timers), holdMs (how long an ask holds its
-- worst case without a usage) and keepMs (how long an answer is kept for replays) first, and
-- calls finish() once its steps are done.
--@include hashCache
--@include answers

-- Timers the steps add are kept here and written in one ZADD (flushTimers, by finish() when the
-- steps are done), and before any sweep, so every sweep sees the timers
-- exactly as it would one step at a time. A step sweeps only when a timer may be due.
local pending, pendingCount, pendingMin = {}, 0, math.huge
local earliest -- the earliest timer's time in the sorted set (math.huge for none); nil until read

local function addTimer(at, member)
  if pending[member] == nil then pendingCount = pendingCount + 1 end
  pending[member] = at
  if at < pendingMin then pendingMin = at end
end

local function removeTimer(member)
  if pending[member] ~= nil then
    pending[member] = nil
    pendingCount = pendingCount - 1
  end
  redis.call("ZREM", timers, member)
end

local function flushTimers()
  if pendingCount == 0 then return end
  local args = {}
  for member, at in pairs(pending) do
    args[#args + 1] = string.format("%d", at)
    args[#args + 1] = member
  end
  callInRuns("ZADD", timers, args, 1000) -- 500 timers a call
  pending, pendingCount, pendingMin = {}, 0, math.huge
  earliest = nil
end

-- Writes what the steps changed: the month's fields and the timers they added.
local function finish()
  writeBack()
  flushTimers()
end

local function drop(r)
  local worst = field("res:" .. r)
  if worst then
    add("reserved", 0 - tonumber(worst))
    put("res:" .. r, false)
    removeTimer("h:" .. r)
  end
end

-- Time is up at `now` for these: held worst cases are dropped, kept answers forgotten (1,000 a step).
local function sweep(now)
  if earliest == nil then
    local first = redis.call("ZRANGE", timers, 0, 0, "WITHSCORES")
    earliest = first[2] and tonumber(first[2]) or math.huge
  end
  if now < earliest and now < pendingMin then return end
  flushTimers()
  for _, m in ipairs(redis.call("ZRANGEBYSCORE", timers, "-inf", string.format("%d", now), "LIMIT", 0, 1000)) do
    if string.sub(m, 1, 2) == "h:" then drop(string.sub(m, 3))
    else put(string.sub(m, 3), false) end
    redis.call("ZREM", timers, m)
  end
  earliest = nil
end

-- An ask, usage or re-warm at `now` (ms): answers { code, spent, reserved, spent_before } and
-- whether it changed the month (a replay answers what it answered before).
local function tenantStep(op, req, amount, budget, now)
  sweep(now)

  local key = op .. ":" .. req
  local prior = field(key)
  if prior then return decoded(prior), false end

  local spent, reserved = count("spent"), count("reserved")
  local out
  if op == "ask" then
    local code = 1
    if spent + reserved + amount <= budget then
      code = 0
      reserved = add("reserved", amount)
      put("res:" .. req, string.format("%d", amount))
      addTimer(now + holdMs, "h:" .. req)
    end
    out = { code, spent, reserved, spent }
  else
    if op == "usage" then drop(req) end
    local after = add("spent", amount)
    out = { 0, after, count("reserved"), spent }
  end
  put(key, joined(out))
  addTimer(now + keepMs, "d:" .. key)
  return out, true
end
