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
local op, req = ARGV[1], ARGV[2]
local amount, budget, now = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])

local function num(f) return tonumber(redis.call("HGET", h, f) or "0") end

local function drop(r)
  local worst = redis.call("HGET", h, "res:" .. r)
  if worst then
    redis.call("HINCRBY", h, "reserved", 0 - tonumber(worst)) -- never -0, which HINCRBY refuses
    redis.call("HDEL", h, "res:" .. r)
    redis.call("ZREM", timers, "h:" .. r)
  end
end

local function answer(list)
  local out = {}
  for i, v in ipairs(list) do out[i] = string.format("%d", v) end
  return table.concat(out, ",")
end

local function decoded(text)
  local out = {}
  for v in string.gmatch(text, "[^,]+") do out[#out + 1] = tonumber(v) end
  return out
end

local function touch()
  redis.call("EXPIRE", h, tonumber(ARGV[8]))
  redis.call("EXPIRE", timers, tonumber(ARGV[8]))
end

if op == "release" then
  drop(req)
  touch()
  return { 0, num("spent"), num("reserved"), num("spent") }
end

-- Time is up for these: held worst cases are dropped, kept answers forgotten (1,000 a step).
for _, m in ipairs(redis.call("ZRANGEBYSCORE", timers, "-inf", ARGV[5], "LIMIT", 0, 1000)) do
  if string.sub(m, 1, 2) == "h:" then drop(string.sub(m, 3))
  else redis.call("HDEL", h, string.sub(m, 3)) end
  redis.call("ZREM", timers, m)
end

local key = op .. ":" .. req
local prior = redis.call("HGET", h, key)
if prior then return decoded(prior) end

local spent, reserved = num("spent"), num("reserved")
local out
if op == "ask" then
  local code = 1
  if spent + reserved + amount <= budget then
    code = 0
    reserved = redis.call("HINCRBY", h, "reserved", amount)
    redis.call("HSET", h, "res:" .. req, amount)
    redis.call("ZADD", timers, string.format("%d", now + tonumber(ARGV[6])), "h:" .. req)
  end
  out = { code, spent, reserved, spent }
else
  if op == "usage" then drop(req) end
  local after = redis.call("HINCRBY", h, "spent", amount)
  out = { 0, after, num("reserved"), spent }
end
redis.call("HSET", h, key, answer(out))
redis.call("ZADD", timers, string.format("%d", now + tonumber(ARGV[7])), "d:" .. key)
touch()
return out
