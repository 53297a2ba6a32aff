--[[
  conversationTurn: records a turn of a conversation with the turn it follows (FILE-3).

  KEYS[1]  the conversation, a hash (Keys.conversation): turn tree -> previous turn's tree
           ("" for a first turn)
  ARGV[1]  the turn's tree ID
  ARGV[2]  the previous turn's tree ID, or ""
  ARGV[3]  TTL of the hash in seconds (renewed by every turn)

  Returns { applied, previous }:
    applied 1  the turn was recorded
    applied 0  the turn was recorded before (a replay, or a second start of the same tree):
               its first record stands, so a turn's lineage never changes once written
    previous   the previous turn recorded for this turn
]]
local added = redis.call("HSETNX", KEYS[1], ARGV[1], ARGV[2])
redis.call("EXPIRE", KEYS[1], tonumber(ARGV[3]))
return { added, redis.call("HGET", KEYS[1], ARGV[1]) }
