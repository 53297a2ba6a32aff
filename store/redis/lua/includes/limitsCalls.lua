-- Shared by limitsAdmitCall, limitsSettle and limitsTreeSteps (after limitsCommon): one model
-- call's ask and one usage or re-warm on the tree's hash. Each returns its answer and whether it
-- changed the hash (a replay answers what it answered before and changes nothing).
-- The including script calls writeBack() once its steps are done.
--@include hashCache

-- An ask: the run's and the tree's limits and budget checked, the worst case reserved when it
-- may go ahead (LIM-1, LIM-2, LIM-7); a job past its timeout deadline (-1 for none) makes no
-- more calls, nor does a run whose ask got an answer that ends its job (run:<id>:stop, kept in
-- admission.ts as RunCounters.stop). Answers { code, spent, reserved, model_calls, tokens,
-- run_steps, run_tokens }.
local function admit(request, run, input, worst, maxSteps, maxTokens, deadline, now)
  local prior = field("ask:" .. request)
  if prior then return decoded(prior), false end
  local runSteps, runTokens = "run:" .. run .. ":steps", "run:" .. run .. ":tokens"
  local steps, rtokens = count(runSteps), count(runTokens)
  local calls, tokens, spent, reserved = count("model_calls"), count("tokens"), count("spent"), count("reserved")
  local budget = count("s:budget")

  -- Endings bind: a run whose ask ended its job gets the same answer for every later ask.
  local stopKey = "run:" .. run .. ":stop"
  local stopped = field(stopKey)
  local code
  if stopped then code = tonumber(stopped)
  elseif deadline ~= -1 and now > deadline then code = 7
  elseif not within(maxSteps, steps + 1) then code = 5
  elseif not within(maxTokens, rtokens + input) then code = 6
  elseif not within(count("s:model_calls"), calls + 1) then code = 2
  elseif not within(count("s:tokens"), tokens + input) then code = 3
  elseif budget == -1 or spent + reserved + worst <= budget then code = 0
  elseif field("s:reserve") == "last_call" and spent + reserved < budget and count("last_call") == 0 then code = 1
  else code = 4 end

  if code <= 1 then
    calls = add("model_calls", 1)
    tokens = add("tokens", input)
    reserved = add("reserved", worst)
    steps = add(runSteps, 1)
    rtokens = add(runTokens, input)
    if code == 1 then put("last_call", "1") end
    put("res:" .. request, string.format("%d,%d", worst, input))
  end
  if not stopped and (code == 2 or code == 3 or code >= 5 or (code == 4 and field("s:on_budget") ~= "wait")) then put(stopKey, tostring(code)) end
  -- LIM-8: the tree hit its budget (an ask did not fit), as its agent's forecast records it.
  if code == 1 or code == 4 then put("budget_hit", "1") end
  local out = { code, spent, reserved, calls, tokens, steps, rtokens }
  put("ask:" .. request, joined(out))
  return out, true
end

-- A usage (its reservation released, what it cost spent) or a prompt-cache re-warm (spent only;
-- no model call, no tokens) (LIM-7, LIM-9). Answers { spent, reserved, model_calls, tokens,
-- spent_before }.
local function settle(kind, request, run, input, output, cost)
  local done = kind .. ":" .. request
  local prior = field(done)
  if prior then return decoded(prior), false end
  local spentBefore = count("spent")
  if kind == "usage" then
    local runSteps, runTokens = "run:" .. run .. ":steps", "run:" .. run .. ":tokens"
    local held = field("res:" .. request)
    if held then
      local worst, asked = string.match(held, "^(-?%d+),(-?%d+)$")
      add("reserved", 0 - tonumber(worst))
      put("res:" .. request, false)
      local more = output + (input - tonumber(asked))
      add("tokens", more)
      add(runTokens, more)
    else
      add("model_calls", 1)
      add("tokens", input + output)
      add(runSteps, 1)
      add(runTokens, input + output)
    end
  end
  add("spent", cost)
  local out = { count("spent"), count("reserved"), count("model_calls"), count("tokens"), spentBefore }
  put(done, joined(out))
  return out, true
end
