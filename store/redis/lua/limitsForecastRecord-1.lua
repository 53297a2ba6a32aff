--[[
  limitsForecastRecord: record one finished tree of an agent for the spend forecast (LIM-8),
  once: the last `window` trees are kept in a ring, with their counts per bucket. Mirrors
  recordTree in processors/limits/forecast.ts.

  KEYS[1]  the agent's forecast hash (Keys.forecast): finished (ever), hits and b:<bucket>
           (within the window), r:<slot> = "<tree>,<bucket>", t:<tree> for trees in the window
  ARGV[1]  the tree ID (idempotence while the tree is within the window)
  ARGV[2]  its bucket: -1 when it hit its budget, else its final share in 5% steps (0..19)
  ARGV[3]  the window, in trees
  ARGV[4]  TTL of the hash in seconds

  Returns { recorded, finished }: recorded 1 when the tree was new, 0 when it was recorded before.
]]
local h, tree, bucket, window = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local finished = tonumber(redis.call("HGET", h, "finished") or "0")
if redis.call("HEXISTS", h, "t:" .. tree) == 1 then return { 0, finished } end

local function count(b, by)
  if b == -1 then redis.call("HINCRBY", h, "hits", by)
  else redis.call("HINCRBY", h, "b:" .. string.format("%d", b), by) end
end

local slot = "r:" .. string.format("%d", finished % window)
local old = redis.call("HGET", h, slot)
if old then
  local oldTree, oldBucket = string.match(old, "^(.*),(-?%d+)$")
  redis.call("HDEL", h, "t:" .. oldTree)
  count(tonumber(oldBucket), -1)
end
redis.call("HSET", h, slot, tree .. "," .. string.format("%d", bucket), "t:" .. tree, "1")
count(bucket, 1)
finished = redis.call("HINCRBY", h, "finished", 1)
redis.call("EXPIRE", h, tonumber(ARGV[4]))
return { 1, finished }
