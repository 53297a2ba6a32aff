--[[
  unknownOutcomePut: keeps a job's unknown outcome waiting for a person (LIM-11, an approval of
  kind unknown), once, and puts it in the index of those waiting by its deadline. A replay
  changes nothing; a request answered already is not put back in the index. Mirrors put of
  memoryUnknownOutcomeStore in processors/limits/memory-store.ts.

  KEYS[1]  the approval's hash (Keys.unknownOutcome): field "request" (JSON), "answer" (JSON)
  KEYS[2]  the index of those waiting (Keys.unknownOutcomes), scored by deadline (epoch ms)
  ARGV[1]  the request as JSON (UnknownOutcomeRequest)
  ARGV[2]  its deadline, epoch milliseconds
  ARGV[3]  the approval ID (the index's member)
  ARGV[4]  TTL of the hash in seconds (past the deadline, so its answer is still read)

  Returns 1 when this call kept the request, 0 when it was kept before.
]]
local kept = redis.call("HSETNX", KEYS[1], "request", ARGV[1])
if kept == 1 then
  redis.call("EXPIRE", KEYS[1], tonumber(ARGV[4]))
  redis.call("ZADD", KEYS[2], "NX", tonumber(ARGV[2]), ARGV[3])
end
return kept
