--[[
  limitsInit: set what a tree is held to (its settings), once, and record its root job.

  KEYS[1]  the tree's limits hash (Keys.limits, per tenant and tree)
  ARGV[1]  1 when the settings come from the root job's start (authoritative), 0 when they
           are provisional (the tree's first model call arrived before its root's start)
  ARGV[2]  TTL of the hash in seconds
  ARGV[3]  the root job's ID, or "" when not known
  ARGV[4]  the root job's agent
  ARGV[5]  the root job's run, or ""
  ARGV[6]  when the root job started (ms), -1 when not known; kept from the first start seen
  ARGV[7]  the root job's own timeout (run --timeout, ms), -1 for none; kept with its start
  ARGV[8]  1 when the root job is a session (the 2h default timeout), else 0; kept with its start
  ARGV[9..] settings as field, value pairs (fields "s:<name>")

  Returns 1 when the settings were written, 0 when the tree kept the settings it had
  (provisional settings never replace any; authoritative ones replace provisional ones only).
]]
local h = KEYS[1]
local auth = redis.call("HGET", h, "s:auth")
local written = 0
if auth == false or (ARGV[1] == "1" and auth == "0") then
  for i = 9, #ARGV, 2 do
    redis.call("HSET", h, ARGV[i], ARGV[i + 1])
  end
  redis.call("HSET", h, "s:auth", ARGV[1])
  written = 1
end
if ARGV[3] ~= "" then
  local j = "job:" .. ARGV[3] .. ":"
  redis.call("HSET", h, j .. "agent", ARGV[4], j .. "started", "1")
  if ARGV[5] ~= "" then redis.call("HSET", h, j .. "run", ARGV[5]) end
  if ARGV[6] ~= "-1" and redis.call("HSETNX", h, j .. "at", ARGV[6]) == 1 then
    redis.call("HSET", h, j .. "tmo", ARGV[7], j .. "sess", ARGV[8])
  end
end
redis.call("EXPIRE", h, tonumber(ARGV[2]))
return written
