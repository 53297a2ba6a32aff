--[[
  limitsForecastOnce: the spend forecast of a tree (LIM-8) is given once, at one ask: the
  first request that claims it keeps it, and only that request gets it again (a replay), with
  the chance it was given at.

  KEYS[1]  the tree's limits hash (Keys.limits, per tenant and tree)
  ARGV[1]  the model request ID
  ARGV[2]  1 to claim the forecast for this request when the tree has none, 0 only to ask
  ARGV[3]  the chance, parts per million, kept with a claim

  Returns { given, taken, chance, spent }: given 1 when the forecast belongs to this request
  (chance is then the one it was given at); taken 1 when another request of the tree has it;
  spent is the tree's settled spend. { 0, 0, 0, -1 } when the tree has no state.
]]
local h = KEYS[1]
if redis.call("HEXISTS", h, "s:auth") == 0 then return { 0, 0, 0, -1 } end
local holder = redis.call("HGET", h, "forecast")
if not holder and ARGV[2] == "1" then
  redis.call("HSET", h, "forecast", ARGV[1], "forecast_chance", ARGV[3])
  holder = ARGV[1]
end
local spent = tonumber(redis.call("HGET", h, "spent") or "0")
if holder == ARGV[1] then return { 1, 0, tonumber(redis.call("HGET", h, "forecast_chance") or "0"), spent } end
if holder then return { 0, 1, 0, spent } end
return { 0, 0, 0, spent }
