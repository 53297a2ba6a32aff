--[[
  limitsSettle: settle a model call's usage (release its reservation, spend what it cost) or
  spend a prompt-cache re-warm's cost, which is no model call and adds no tokens (LIM-7,
  LIM-9). Mirrors settleCall and rewarm in processors/limits/admission.ts.

  KEYS[1]  the tree's limits hash (Keys.limits, per tenant and tree)
  ARGV[1]  "usage" or "rewarm"
  ARGV[2]  the model request ID (idempotence)
  ARGV[3]  the run ID
  ARGV[4]  input tokens
  ARGV[5]  output tokens
  ARGV[6]  cost, micro-dollars
  ARGV[7]  TTL of the hash in seconds

  Returns { spent, reserved, model_calls, tokens, spent_before }: the same again for the same
  request; { -1 } when the tree has no settings.
]]
--@include limitsCommon
if redis.call("HEXISTS", h, "s:auth") == 0 then return { -1 } end
local done = ARGV[1] .. ":" .. ARGV[2]
local prior = redis.call("HGET", h, done)
if prior then return decoded(prior) end
local spentBefore = num("spent")
local input, output, cost = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
if ARGV[1] == "usage" then
  local runSteps, runTokens = "run:" .. ARGV[3] .. ":steps", "run:" .. ARGV[3] .. ":tokens"
  local held = redis.call("HGET", h, "res:" .. ARGV[2])
  if held then
    local worst, asked = string.match(held, "^(-?%d+),(-?%d+)$")
    redis.call("HINCRBY", h, "reserved", 0 - tonumber(worst)) -- never -0, which HINCRBY refuses
    redis.call("HDEL", h, "res:" .. ARGV[2])
    local more = output + (input - tonumber(asked))
    redis.call("HINCRBY", h, "tokens", more)
    redis.call("HINCRBY", h, runTokens, more)
  else
    redis.call("HINCRBY", h, "model_calls", 1)
    redis.call("HINCRBY", h, "tokens", input + output)
    redis.call("HINCRBY", h, runSteps, 1)
    redis.call("HINCRBY", h, runTokens, input + output)
  end
end
redis.call("HINCRBY", h, "spent", cost)
local out = { num("spent"), num("reserved"), num("model_calls"), num("tokens"), spentBefore }
redis.call("HSET", h, done, table.concat(encoded(out), ","))
redis.call("EXPIRE", h, tonumber(ARGV[7]))
return out
