--[[
  limitsJobEvent: a job ended (its fan-out slot is free again, once), or a wait for people
  started or ended (each job adds up its own waits, LIM-3). Mirrors endJob and waitEvent in
  processors/limits/admission.ts.

  KEYS[1]  the tree's limits hash (Keys.limits, per tenant and tree)
  ARGV[1]  "ended", "wait_started" or "wait_ended"
  ARGV[2]  the event's ID (idempotence of waits)
  ARGV[3]  the job ID
  ARGV[4]  the event's time, milliseconds
  ARGV[5]  TTL of the hash in seconds (shorter once the root has ended)

  Returns { running } for "ended"; { waited, over } for waits (over 1 when the job's waits
  add up past the tree's wait), the same again for the same event; { -1 } when the tree has
  no settings.
]]
--@include limitsCommon
if redis.call("HEXISTS", h, "s:auth") == 0 then return { -1 } end
local j = "job:" .. ARGV[3] .. ":"
local out
if ARGV[1] == "ended" then
  if redis.call("HGET", h, j .. "ended") ~= "1" then
    redis.call("HSET", h, j .. "ended", "1")
    if redis.call("HGET", h, j .. "slot") == "1" then
      redis.call("HSET", h, j .. "slot", "0")
      redis.call("HINCRBY", h, "running", -1)
    end
  end
  out = { num("running") }
else
  local done = "wait:" .. ARGV[2]
  local prior = redis.call("HGET", h, done)
  if prior then
    local waited, over = string.match(prior, "^(-?%d+),(%d)$")
    return { tonumber(waited), tonumber(over) }
  end
  local ts = tonumber(ARGV[4])
  local since = tonumber(redis.call("HGET", h, j .. "since") or "-1")
  if ARGV[1] == "wait_started" then
    if since < 0 then redis.call("HSET", h, j .. "since", ARGV[4]) end
  elseif since >= 0 then
    redis.call("HINCRBY", h, j .. "waited", math.max(0, ts - since))
    redis.call("HSET", h, j .. "since", "-1")
  end
  local waited, limit = num(j .. "waited"), num("s:wait")
  local over = 0
  if limit ~= -1 and waited > limit then over = 1 end
  out = { waited, over }
  redis.call("HSET", h, done, string.format("%d,%d", waited, over))
end
redis.call("EXPIRE", h, tonumber(ARGV[5]))
return out
