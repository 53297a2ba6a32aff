--[[
  offloadThreshold: keeps the offload threshold a job started with (OFF-13).

  KEYS[1]  the job's threshold (Keys.jobOffload, per tenant, tree and job), a string: a number
           of tokens or "off"
  ARGV[1]  the threshold resolved now from the settings, kept when the job has none yet
  ARGV[2]  TTL in seconds, set when the threshold is first kept

  Returns { the job's threshold, the ms it is kept for yet }: the one kept before, else ARGV[1]
  (now kept). Setting only when absent makes it idempotent: a replay, and every later result of
  the job, read the first. Nothing changes a kept threshold before it expires, so a reader may
  hold it for that long (RedisFilesStore holds it for a few minutes at most).
]]
local kept = redis.call("GET", KEYS[1])
if kept then
  return { kept, redis.call("PTTL", KEYS[1]) }
end
redis.call("SET", KEYS[1], ARGV[1], "EX", tonumber(ARGV[2]))
return { ARGV[1], tonumber(ARGV[2]) * 1000 }
