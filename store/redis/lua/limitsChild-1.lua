--[[
  limitsChild: admit a child where it starts (LIM-3, LIM-5, LIM-6): at its ask, check the
  tree's depth, children, fan_out and budget, the quotas (checked before) and the parent's delegation limits, and take its
  slots when it is admitted; at its start, check again. Mirrors askChild and startChild in
  processors/limits/admission.ts.

  KEYS[1]  the tree's limits hash (Keys.limits, per tenant and tree)
  ARGV[1]  "ask" or "start"
  ARGV[2]  the child's job ID (idempotence: per phase, the same child answers the same)
  ARGV[3]  the parent's job ID
  ARGV[4]  the parent's run that asks, or "" for the parent's current run
  ARGV[5]  the child's own run, or ""
  ARGV[6]  the child's agent
  ARGV[7]  the child's depth in the tree (the root is 0)
  ARGV[8]  1 for a delegation or a flow tool's flow, 0 for a reviewer, a flow step or other
  ARGV[9]  the parent agent's delegation.max_depth
  ARGV[10] the parent agent's delegation.max_children, -1 for none
  ARGV[11] TTL of the hash in seconds
  ARGV[12] the event's time (ms): at an admitted start, when the child started (its timeout counts from here)
  ARGV[13] when the parent's timeout ends (ms), -1 for none: past it, the parent starts no child
  ARGV[14] 1 when the monthly quota of the tree's principal or team is spent (LIM-10), else 0
  ARGV[15] at a start: the child's own timeout (run --timeout, ms), -1 for none; kept with its start
  ARGV[16] at a start: 1 when the child is a session (the 2h default timeout), else 0

  Returns { code, children, running, delegations, delegation_depth, spent }, code one of
  CHILD_CODES in processors/limits/codes.ts (0 allow, 1 depth, 2 children, 3 fan_out,
  4 budget, 5 delegation_depth, 6 delegation_children, 7 job_timeout, 8 quota); { -1 } when the tree has
  no settings.
]]
--@include limitsCommon
if redis.call("HEXISTS", h, "s:auth") == 0 then return { -1 } end
local phase, job, parent = ARGV[1], ARGV[2], ARGV[3]
local prior = redis.call("HGET", h, "child:" .. phase .. ":" .. job)
if prior then return decoded(prior) end

local pj, cj = "job:" .. parent .. ":", "job:" .. job .. ":"
local depth, delegating = tonumber(ARGV[7]), ARGV[8] == "1"
local maxDepth, maxChildren = tonumber(ARGV[9]), tonumber(ARGV[10])
local parentRun = ARGV[4]
if parentRun == "" then parentRun = redis.call("HGET", h, pj .. "run") or "" end
local runKey = "deleg:" .. parent .. "/" .. parentRun

local function budgetSpent()
  local b = num("s:budget")
  return b ~= -1 and num("spent") >= b
end
local function delegationDepth()
  local d = num(pj .. "ddepth")
  if delegating then return d + 1 end
  return d
end
local parentDeadline = tonumber(ARGV[13])
local quotaSpent = ARGV[14] == "1"
local function decide(dd)
  if parentDeadline ~= -1 and tonumber(ARGV[12]) > parentDeadline then return 7 end
  if not within(num("s:depth"), depth) then return 1 end
  if not within(num("s:children"), num("children") + 1) then return 2 end
  if not within(num("s:fan_out"), num("running") + 1) then return 3 end
  if budgetSpent() then return 4 end
  if quotaSpent then return 8 end
  if delegating then
    if dd > maxDepth then return 5 end
    if not within(maxChildren, num(runKey) + 1) then return 6 end
  end
  return 0
end
local function admit(dd)
  redis.call("HINCRBY", h, "children", 1)
  redis.call("HINCRBY", h, "running", 1)
  local from = ""
  if delegating then
    redis.call("HINCRBY", h, runKey, 1)
    from = runKey
  end
  redis.call("HSET", h, cj .. "agent", ARGV[6], cj .. "ddepth", dd, cj .. "slot", "1", cj .. "from", from)
end
local function release()
  if redis.call("HGET", h, cj .. "slot") == "1" then
    redis.call("HSET", h, cj .. "slot", "0")
    redis.call("HINCRBY", h, "running", -1)
    redis.call("HINCRBY", h, "children", -1)
    local from = redis.call("HGET", h, cj .. "from") or ""
    if from ~= "" then redis.call("HINCRBY", h, from, -1) end
    redis.call("HSET", h, cj .. "from", "")
  end
end
local function fresh()
  local dd = delegationDepth()
  local code = decide(dd)
  if code == 0 then admit(dd) end
  return { code, num("children"), num("running"), num(runKey), dd, num("spent") }
end

local out
if phase == "ask" then
  out = fresh()
else
  local asked = redis.call("HGET", h, "child:ask:" .. job)
  if asked then
    local a = decoded(asked)
    if a[1] ~= 0 then
      out = a
    else
      local code = 0
      if budgetSpent() then code = 4
      elseif quotaSpent then code = 8 end
      if code ~= 0 then release() end
      out = { code, num("children"), num("running"), a[4], a[5], num("spent") }
    end
  else
    out = fresh()
  end
  if out[1] == 0 then
    redis.call("HSET", h, cj .. "started", "1", cj .. "run", ARGV[5])
    if redis.call("HSETNX", h, cj .. "at", ARGV[12]) == 1 then
      redis.call("HSET", h, cj .. "tmo", ARGV[15], cj .. "sess", ARGV[16])
    end
  end
end
redis.call("HSET", h, "child:" .. phase .. ":" .. job, joined(out))
redis.call("EXPIRE", h, tonumber(ARGV[11]))
return out
