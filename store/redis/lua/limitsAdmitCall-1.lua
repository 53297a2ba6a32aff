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
  ARGV[7]  when the job's timeout ends (ms: its start plus limits.timeout), -1 for none
  ARGV[8]  the ask's time (ms)
  ARGV[9]  TTL of the hash in seconds

  Returns { code, spent, reserved, model_calls, tokens, run_steps, run_tokens }, code one of
  CALL_CODES in processors/limits/codes.ts (0 allow, 1 allow_last_call, 2 tree_model_calls,
  3 tree_tokens, 4 budget, 5 run_steps, 6 run_tokens, 7 job_timeout); { -1 } when the tree
  has no settings.
]]
--@include limitsCommon
--@include limitsCalls
if redis.call("HEXISTS", h, "s:auth") == 0 then return { -1 } end
local out, changed = admit(ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]))
if changed then
  writeBack()
  redis.call("EXPIRE", h, tonumber(ARGV[9]))
end
return out
