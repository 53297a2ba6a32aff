--[[
  limitsBudgetAnswer: answers a budget request (LIM-7, LIM-8, LIM-10) once, in one step with the
  tree's state: the first answer holds; approving with a budget raises the tree's budget to it
  (never lowers it, and leaves a tree with no budget as it is). Mirrors answerBudgetRequest in
  processors/limits/memory-store.ts.

  KEYS[1]  the tree's limits hash (Keys.limits), which keeps the request (breq:<approval>) and
           its answer (bans:<approval>)
  ARGV[1]  the approval
  ARGV[2]  the answer as JSON (BudgetAnswer)
  ARGV[3]  the budget to raise the tree's to, micro-dollars, or -1 for none
  ARGV[4]  TTL of the hash in seconds

  Returns the answer that holds (this one or the first, as JSON), or "" when the tree keeps no
  such request (expired, or never made).
]]
local h, approval = KEYS[1], ARGV[1]
if redis.call("HEXISTS", h, "breq:" .. approval) == 0 then return "" end
local prior = redis.call("HGET", h, "bans:" .. approval)
if prior then return prior end
local raise = tonumber(ARGV[3])
if raise >= 0 then
  local budget = tonumber(redis.call("HGET", h, "s:budget") or "-1")
  if budget ~= -1 and raise > budget then redis.call("HSET", h, "s:budget", ARGV[3]) end
end
redis.call("HSET", h, "bans:" .. approval, ARGV[2])
redis.call("EXPIRE", h, tonumber(ARGV[4]))
return ARGV[2]
