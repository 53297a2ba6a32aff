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
--@include limitsCalls
if redis.call("HEXISTS", h, "s:auth") == 0 then return { -1 } end
local out, changed = settle(ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]))
if changed then
  writeBack()
  redis.call("EXPIRE", h, tonumber(ARGV[7]))
end
return out
