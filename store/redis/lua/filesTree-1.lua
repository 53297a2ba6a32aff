--[[
  filesTree: a tree's start or its root job's end, as the file rules read them (FILE-3, FILE-5).

  KEYS[1]  the tree's record, a hash (Keys.filesTree, per tenant and tree: two tenants using
           the same tree ID never share it): root_job, start_event, status (running | ended),
           conversation
  ARGV[1]  "start" or "end"
  ARGV[2]  the event ID
  ARGV[3]  the job ID (the root job's)
  ARGV[4]  the conversation this tree is a turn of, or "" (start only)
  ARGV[5]  input source, "<topic>:<partition>"
  ARGV[6]  input offset (decimal)
  ARGV[7]  TTL of the record in seconds

  Returns applied:
    1  recorded: a start makes the job the tree's running root job (and, once, the tree a
       turn of its conversation); an end of that job marks it ended (an end of another job
       changes nothing)
    0  this offset (or a later one) of that source was applied before: a replay, nothing
       changed
  Events of one tree come from one partition of oz0.jobs in order, so the highest offset
  applied per source is all the history idempotence needs.
]]
local seen = redis.call("HGET", KEYS[1], "offset:" .. ARGV[5])
if seen and tonumber(seen) >= tonumber(ARGV[6]) then
  return 0
end
if ARGV[1] == "start" then
  redis.call("HSET", KEYS[1], "root_job", ARGV[3], "start_event", ARGV[2], "status", "running")
  if ARGV[4] ~= "" then
    redis.call("HSETNX", KEYS[1], "conversation", ARGV[4])
  end
elseif ARGV[1] == "end" then
  if redis.call("HGET", KEYS[1], "root_job") == ARGV[3] then
    redis.call("HSET", KEYS[1], "status", "ended")
  end
else
  return redis.error_reply("filesTree: ARGV[1] is start or end, got " .. ARGV[1])
end
redis.call("HSET", KEYS[1], "offset:" .. ARGV[5], ARGV[6])
redis.call("EXPIRE", KEYS[1], tonumber(ARGV[7]))
return 1
