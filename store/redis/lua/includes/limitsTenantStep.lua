-- Shared by limitsTenant and limitsTenantSpends: one step on a tenant's month (LIM-10). The
-- including script sets h (the month), timers (its timers), holdMs (how long an ask holds its
-- worst case without a usage) and keepMs (how long an answer is kept for replays) first, and
-- calls writeBack() once its steps are done.
--@include hashCache
--@include answers

local function drop(r)
  local worst = field("res:" .. r)
  if worst then
    add("reserved", 0 - tonumber(worst))
    put("res:" .. r, false)
    redis.call("ZREM", timers, "h:" .. r)
  end
end

-- An ask, usage or re-warm at `now` (ms): answers { code, spent, reserved, spent_before } and
-- whether it changed the month (a replay answers what it answered before).
local function tenantStep(op, req, amount, budget, now)
  -- Time is up for these: held worst cases are dropped, kept answers forgotten (1,000 a step).
  for _, m in ipairs(redis.call("ZRANGEBYSCORE", timers, "-inf", string.format("%d", now), "LIMIT", 0, 1000)) do
    if string.sub(m, 1, 2) == "h:" then drop(string.sub(m, 3))
    else put(string.sub(m, 3), false) end
    redis.call("ZREM", timers, m)
  end

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
      redis.call("ZADD", timers, string.format("%d", now + holdMs), "h:" .. req)
    end
    out = { code, spent, reserved, spent }
  else
    if op == "usage" then drop(req) end
    local after = add("spent", amount)
    out = { 0, after, count("reserved"), spent }
  end
  put(key, joined(out))
  redis.call("ZADD", timers, string.format("%d", now + keepMs), "d:" .. key)
  return out, true
end
