--[[
  limitsAdmitCall: check a model call against its run's and its tree's limits and budget,
  and when it may go ahead reserve its worst case, in one step (LIM-1, LIM-2, LIM-7).
  Mirrors admitCall in processors/limits/admission.ts.

  KEYS[1]  the tree's limits hash (Keys.limits, per tenant and tree)
  ARGV[1]  the model request ID (idempotence: the same ID answers the same, changes nothing)
  ARGV[2]  the run ID
  ARGV[3]  input tokens of the call
  ARGV[4]  its worst-case cost, micro-dollars
  ARGV[5]  the run's max_steps, -1 for none
  ARGV[6]  the run's max_tokens, -1 for none
  ARGV[7]  TTL of the hash in seconds

  Returns { code, spent, reserved, model_calls, tokens, run_steps, run_tokens }, code one of
  CALL_CODES in processors/limits/codes.ts (0 allow, 1 allow_last_call, 2 tree_model_calls,
  3 tree_tokens, 4 budget, 5 run_steps, 6 run_tokens); { -1 } when the tree has no settings.
]]
--@include limitsCommon
if redis.call("HEXISTS", h, "s:auth") == 0 then return { -1 } end
local prior = redis.call("HGET", h, "ask:" .. ARGV[1])
if prior then return decoded(prior) end
local runSteps, runTokens = "run:" .. ARGV[2] .. ":steps", "run:" .. ARGV[2] .. ":tokens"
local input, worst = tonumber(ARGV[3]), tonumber(ARGV[4])
local maxSteps, maxTokens = tonumber(ARGV[5]), tonumber(ARGV[6])
local steps, rtokens = num(runSteps), num(runTokens)
local calls, tokens, spent, reserved = num("model_calls"), num("tokens"), num("spent"), num("reserved")
local budget = num("s:budget")

local code
if not within(maxSteps, steps + 1) then code = 5
elseif not within(maxTokens, rtokens + input) then code = 6
elseif not within(num("s:model_calls"), calls + 1) then code = 2
elseif not within(num("s:tokens"), tokens + input) then code = 3
elseif budget == -1 or spent + reserved + worst <= budget then code = 0
elseif redis.call("HGET", h, "s:reserve") == "last_call" and spent + reserved < budget and num("last_call") == 0 then code = 1
else code = 4 end

if code <= 1 then
  calls = redis.call("HINCRBY", h, "model_calls", 1)
  tokens = redis.call("HINCRBY", h, "tokens", input)
  reserved = redis.call("HINCRBY", h, "reserved", worst)
  steps = redis.call("HINCRBY", h, runSteps, 1)
  rtokens = redis.call("HINCRBY", h, runTokens, input)
  if code == 1 then redis.call("HSET", h, "last_call", "1") end
  redis.call("HSET", h, "res:" .. ARGV[1], string.format("%d,%d", worst, input))
end
-- LIM-8: the tree hit its budget (an ask did not fit), as its agent's forecast records it.
if code == 1 or code == 4 then redis.call("HSET", h, "budget_hit", "1") end
local out = { code, spent, reserved, calls, tokens, steps, rtokens }
redis.call("HSET", h, "ask:" .. ARGV[1], table.concat(encoded(out), ","))
redis.call("EXPIRE", h, tonumber(ARGV[7]))
return out
