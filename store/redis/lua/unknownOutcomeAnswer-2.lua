--[[
  unknownOutcomeAnswer: answers a job's unknown outcome (LIM-11) once: the first answer holds
  (a person's happened, run again or stop, or the deadline's stop). A person's answer leaves the
  index of those waiting in the same step; the deadline's leaves it only once its decision is
  published (the timer's ZREM after), so a timer that fails in between publishes it again.
  Mirrors answer of memoryUnknownOutcomeStore in processors/limits/memory-store.ts.

  KEYS[1]  the approval's hash (Keys.unknownOutcome)
  KEYS[2]  the index of those waiting (Keys.unknownOutcomes)
  ARGV[1]  the approval ID (the index's member)
  ARGV[2]  the answer as JSON (UnknownOutcomeAnswer)
  ARGV[3]  1 to leave the index now, 0 to stay in it

  Returns the answer that holds (this one or the first, as JSON), or "" when no such request
  is kept (never made, or expired: it leaves the index).
]]
if redis.call("HEXISTS", KEYS[1], "request") == 0 then
  redis.call("ZREM", KEYS[2], ARGV[1])
  return ""
end
local prior = redis.call("HGET", KEYS[1], "answer")
if ARGV[3] == "1" then redis.call("ZREM", KEYS[2], ARGV[1]) end
if prior then return prior end
redis.call("HSET", KEYS[1], "answer", ARGV[2])
return ARGV[2]
