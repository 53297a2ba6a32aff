--[[
  limitsQuota: monthly quotas per person and team (LIM-10), one step per input, over the
  principal's month and (when the principal has a team) the team's month together: an ask is
  checked against both and holds its worst case in both; a release drops the worst case of a
  call that did not go ahead; a usage drops it and spends what the call cost in both; a re-warm
  only spends; a check (a child's start) holds nothing and answers whether a quota is spent.
  Mirrors quotaAsk, quotaCheck, quotaRelease and quotaSettle in processors/limits/quota.ts.

  KEYS[1]  the principal's month (Keys.quotaMonth): spent, reserved, res:<request> worst
           cases, and answers <op>:<request>
  KEYS[2]  its timers (Keys.quotaMonthTimers), a sorted set by time (ms): h:<request> drops a
           held worst case, d:<op>:<request> forgets an answer
  KEYS[3]  the team's month (spent, reserved, res:<request>); with no team, KEYS[1] again
  KEYS[4]  its timers; with no team, KEYS[2] again. All four keys share the tenant's hash tag.
  ARGV[1]  "ask", "check", "release", "usage" or "rewarm"
  ARGV[2]  the model request ID, or the child's start event's (idempotence)
  ARGV[3]  ask: the worst case; usage, rewarm: the cost; micro-dollars
  ARGV[4]  ask, check: the principal's quota, micro-dollars, -1 for none
  ARGV[5]  ask, check: the team's quota, micro-dollars, -1 for none
  ARGV[6]  1 when the principal has a team (KEYS[3], KEYS[4] are the team's), else 0
  ARGV[7]  the event's time, ms
  ARGV[8]  how long an ask holds its worst case without a usage, ms
  ARGV[9]  how long an answer is kept for replays, ms
  ARGV[10] TTL of the keys in seconds

  Returns { code, person_spent, person_reserved, team_spent, team_reserved }, code 0 allow,
  1 the principal's quota, 2 the team's (QUOTA_CODES in processors/limits/quota.ts); the same
  again for the same input while it is kept (team numbers are 0 with no team). A release
  returns { 0, ... } with the numbers after it.
]]
local ph, pt = KEYS[1], KEYS[2]
--@include answers
local op, req = ARGV[1], ARGV[2]
local amount, now = tonumber(ARGV[3]), tonumber(ARGV[7])
local team = ARGV[6] == "1"
local months = { { ph, pt } }
if team then months[2] = { KEYS[3], KEYS[4] } end

local function num(h, f) return tonumber(redis.call("HGET", h, f) or "0") end

local function drop(m, r)
  local worst = redis.call("HGET", m[1], "res:" .. r)
  if worst then
    redis.call("HINCRBY", m[1], "reserved", 0 - tonumber(worst)) -- never -0, which HINCRBY refuses
    redis.call("HDEL", m[1], "res:" .. r)
    redis.call("ZREM", m[2], "h:" .. r)
  end
end

local function numbers(code)
  local out = { code, num(ph, "spent"), num(ph, "reserved"), 0, 0 }
  if team then
    out[4], out[5] = num(KEYS[3], "spent"), num(KEYS[3], "reserved")
  end
  return out
end

local function touch()
  for _, m in ipairs(months) do
    redis.call("EXPIRE", m[1], tonumber(ARGV[10]))
    redis.call("EXPIRE", m[2], tonumber(ARGV[10]))
  end
end

if op == "release" then
  for _, m in ipairs(months) do drop(m, req) end
  touch()
  return numbers(0)
end

-- Time is up for these: held worst cases are dropped, kept answers forgotten (1,000 a step each).
for _, m in ipairs(months) do
  for _, t in ipairs(redis.call("ZRANGEBYSCORE", m[2], "-inf", ARGV[7], "LIMIT", 0, 1000)) do
    if string.sub(t, 1, 2) == "h:" then drop(m, string.sub(t, 3))
    else redis.call("HDEL", m[1], string.sub(t, 3)) end
    redis.call("ZREM", m[2], t)
  end
end

local key = op .. ":" .. req
local prior = redis.call("HGET", ph, key)
if prior then return decoded(prior) end

local function fits(h, quota)
  return quota < 0 or num(h, "spent") + num(h, "reserved") + amount <= quota
end

local function spentUp(h, quota)
  return quota >= 0 and num(h, "spent") >= quota
end

local code = 0
if op == "check" then
  if spentUp(ph, tonumber(ARGV[4])) then code = 1
  elseif team and spentUp(KEYS[3], tonumber(ARGV[5])) then code = 2 end
elseif op == "ask" then
  if not fits(ph, tonumber(ARGV[4])) then code = 1
  elseif team and not fits(KEYS[3], tonumber(ARGV[5])) then code = 2 end
  if code == 0 then
    for _, m in ipairs(months) do
      redis.call("HINCRBY", m[1], "reserved", amount)
      redis.call("HSET", m[1], "res:" .. req, amount)
      redis.call("ZADD", m[2], string.format("%d", now + tonumber(ARGV[8])), "h:" .. req)
    end
  end
else
  for _, m in ipairs(months) do
    if op == "usage" then drop(m, req) end
    redis.call("HINCRBY", m[1], "spent", amount)
  end
end
local out = numbers(code)
redis.call("HSET", ph, key, joined(out))
redis.call("ZADD", pt, string.format("%d", now + tonumber(ARGV[9])), "d:" .. key)
touch()
return out
