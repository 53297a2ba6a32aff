--[[
  loopCommit: store one run's loop lane after a batch of its inputs, once per input offset.

  KEYS[1]  the lane hash (Keys.loopLane, per tenant and run): field "state" (JSON), "at:<source>" (the newest
           input offset applied from that source), "memo:<source>:<offset>" (the outcome of an
           input that acted on a loop, or was invalid, so a replay does the same), and
           "memos:<source>" (the offsets of that source's memos, space-separated)
  KEYS[2]  the run's flags hash (Keys.loopFlags), which every lane reads
  ARGV[1]  input source, "<topic>:<partition>"
  ARGV[2]  the newest input offset of this run in the batch (decimal)
  ARGV[3]  the lane's new state (JSON)
  ARGV[4]  TTL of both hashes in seconds (a finished run costs nothing once it passes); a
           TTL is only ever lengthened, so a loop waiting days for a person keeps its state
  ARGV[5]  the first offset of the batch from that source (decimal; -1 where unknown): every
           offset before it was committed and is never handed out again, so its memos are dropped
  ARGV[6]  n, the number of memos that follow
  ARGV[7 .. 6+2n]        pairs: input offset, outcome (JSON)
  ARGV[7+2n ..]          pairs: flag field, value; each is set only if not set yet (a flag,
                         once raised, stays as it was first raised: stop, finish-only, approvals)

  Returns { applied, at }:
    applied 1  the state, memos and flags were stored; at is ARGV[2]
    applied 0  this offset (or a later one) of that source was stored before: a replay,
               nothing changed; at is the offset stored
  Records of one run come from one partition in order, so the newest offset applied per source
  is all the history idempotence needs.
]]
local atField = "at:" .. ARGV[1]
local seen = redis.call("HGET", KEYS[1], atField)
if seen and tonumber(seen) >= tonumber(ARGV[2]) then
  return { 0, seen }
end
redis.call("HSET", KEYS[1], "state", ARGV[3], atField, ARGV[2])
-- Memos the batch's replays may still read are those from its oldest offset on; the rest go.
local memoPrefix = "memo:" .. ARGV[1] .. ":"
local indexField = "memos:" .. ARGV[1]
local from = tonumber(ARGV[5])
local kept = {}
local listed = redis.call("HGET", KEYS[1], indexField)
if listed then
  for offset in string.gmatch(listed, "%S+") do
    if tonumber(offset) < from then
      redis.call("HDEL", KEYS[1], memoPrefix .. offset)
    else
      kept[#kept + 1] = offset
    end
  end
end
local n = tonumber(ARGV[6])
local i = 7
for _ = 1, n do
  redis.call("HSET", KEYS[1], memoPrefix .. ARGV[i], ARGV[i + 1])
  kept[#kept + 1] = ARGV[i]
  i = i + 2
end
if #kept > 0 then
  redis.call("HSET", KEYS[1], indexField, table.concat(kept, " "))
elseif listed then
  redis.call("HDEL", KEYS[1], indexField)
end
while i + 1 <= #ARGV do
  redis.call("HSETNX", KEYS[2], ARGV[i], ARGV[i + 1])
  i = i + 2
end
local ttl = tonumber(ARGV[4])
for k = 1, 2 do
  if redis.call("TTL", KEYS[k]) < ttl then
    redis.call("EXPIRE", KEYS[k], ttl)
  end
end
return { 1, ARGV[2] }
