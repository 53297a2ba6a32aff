--[[
  tallyOnce: count one event for a key, once per input offset.

  KEYS[1]  the tally hash (Keys.tally)
  ARGV[1]  field to count
  ARGV[2]  input source, "<topic>:<partition>"
  ARGV[3]  input offset (decimal)
  ARGV[4]  TTL of the hash in seconds

  Returns { applied, count }:
    applied 1  the event was counted
    applied 0  this offset (or a later one) of that source was counted before: a replay,
               nothing changed
  Records of one key come from one partition in order, so the highest offset applied per
  source is all the history idempotence needs.
]]
local seen = redis.call("HGET", KEYS[1], "offset:" .. ARGV[2])
if seen and tonumber(seen) >= tonumber(ARGV[3]) then
  return { 0, tonumber(redis.call("HGET", KEYS[1], ARGV[1]) or "0") }
end
local count = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
redis.call("HSET", KEYS[1], "offset:" .. ARGV[2], ARGV[3])
redis.call("EXPIRE", KEYS[1], tonumber(ARGV[4]))
return { 1, count }
