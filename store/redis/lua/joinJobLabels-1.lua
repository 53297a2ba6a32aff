--[[
  joinJobLabels: join a stored result's labels into its job (OFF-9).

  KEYS[1]  the job's label set (Keys.jobLabels, per tenant, tree and job)
  ARGV[1]  TTL of the set in seconds, renewed on every join
  ARGV[2..] the labels to join (at least one)

  Returns { added, total }:
    added  labels the job did not hold before (0 on a replay: a set join is idempotent, so a
           batch handled again changes nothing but the TTL)
    total  labels the job holds now
]]
local added = 0
for i = 2, #ARGV do
  added = added + redis.call("SADD", KEYS[1], ARGV[i])
end
redis.call("EXPIRE", KEYS[1], tonumber(ARGV[1]))
return { added, redis.call("SCARD", KEYS[1]) }
