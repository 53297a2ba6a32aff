--[[
  limitsTreeSteps: a batch's model-call steps of one tree, in their order, in one call: each an
  ask (limitsAdmitCall) or a usage or re-warm (limitsSettle), with the same checks, changes and
  answers as those scripts give one by one. Each step is idempotent by its request, as there.

  KEYS[1]  the tree's limits hash (Keys.limits, per tenant and tree)
  ARGV[1]  TTL of the hash in seconds
  ARGV[2]  n, the number of steps; then 9 values per step:
           "ask", request ID, run ID, input tokens, worst case (micro-dollars), max_steps,
             max_tokens, the job's timeout deadline (ms, -1 for none), the ask's time (ms)
           "usage" or "rewarm", request ID, run ID, input tokens, output tokens, cost
             (micro-dollars), "", "", ""

  Returns 7 numbers per step, in step order: an ask's answer as limitsAdmitCall gives it; a
  usage's or re-warm's as limitsSettle gives it, followed by two zeros. { -1 } when the tree has
  no settings (then no step changed anything).
]]
--@include limitsCommon
--@include limitsCalls
if redis.call("HEXISTS", h, "s:auth") == 0 then return { -1 } end
local n = tonumber(ARGV[2])
local answers, changed = {}, false
for i = 0, n - 1 do
  local b = 3 + 9 * i
  local kind = ARGV[b]
  local out, did
  if kind == "ask" then
    out, did = admit(ARGV[b + 1], ARGV[b + 2], tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4]), tonumber(ARGV[b + 5]), tonumber(ARGV[b + 6]), tonumber(ARGV[b + 7]), tonumber(ARGV[b + 8]))
  elseif kind == "usage" or kind == "rewarm" then
    out, did = settle(kind, ARGV[b + 1], ARGV[b + 2], tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4]), tonumber(ARGV[b + 5]))
    out[6], out[7] = 0, 0
  else
    return redis.error_reply("limitsTreeSteps: step " .. (i + 1) .. " is " .. tostring(kind) .. ", not ask, usage or rewarm")
  end
  changed = changed or did
  for j = 1, 7 do answers[#answers + 1] = out[j] end
end
if changed then
  writeBack()
  redis.call("EXPIRE", h, tonumber(ARGV[1]))
end
return answers
