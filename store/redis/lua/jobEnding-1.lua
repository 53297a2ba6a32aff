--[[
  jobEnding: keeps how a job ended, or why its start was refused (processors/limits/standing.ts):
  every later model ask, tool call, child start and file read of the job is refused with it.
  The first ending of a job wins, so a replay changes nothing.

  KEYS[1]  the tree's limits hash (Keys.limits, per tenant and tree)
  ARGV[1]  the job ID
  ARGV[2]  the ending, JSON {code, limit, message, by}
  ARGV[3]  TTL in seconds, set only when the hash has none (a tree whose state this creates)

  Returns 1 when this call kept the ending, 0 when the job had one.
]]
local h = KEYS[1]
local kept = redis.call("HSETNX", h, "job:" .. ARGV[1] .. ":end", ARGV[2])
if redis.call("TTL", h) < 0 then redis.call("EXPIRE", h, tonumber(ARGV[3])) end
return kept
