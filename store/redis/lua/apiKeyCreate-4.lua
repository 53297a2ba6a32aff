--[[
  apiKeyCreate: keeps a new API key's record once (client/gateway/keys.ts; only its SHA-256 and
  its binding, never the key) and puts its ID in the indexes of every key, of its tenant and of
  its job, each scored by when the record goes (its expiry and a week, so an expired key still
  answers "expired"). Entries whose record has gone leave the indexes in the same step. A
  replay (the same hash) changes nothing. Mirrors create in client/gateway/redis-store.ts.

  KEYS[1]  the key's record (Keys.apiKey): fields "hash", "binding" (JSON), "revoked" (JSON)
  KEYS[2]  the index of every key (Keys.apiKeys)
  KEYS[3]  the tenant's index (Keys.apiKeysOfTenant)
  KEYS[4]  the job's index (Keys.apiKeysOfJob)
  ARGV[1]  the key's SHA-256, hex
  ARGV[2]  the binding as JSON (KeyBinding, revoked_at and revoked_by null)
  ARGV[3]  the key's ID (the indexes' member)
  ARGV[4]  when the record goes, epoch milliseconds (its expiry and a week)
  ARGV[5]  now, epoch milliseconds

  Returns 1 when this call kept the record, 0 when it was kept before (the same hash), -1 when
  the ID is another key's (make another key).
]]
local held = redis.call("HGET", KEYS[1], "hash")
if held then
  if held == ARGV[1] then return 0 end
  return -1
end
local gone = tonumber(ARGV[4])
redis.call("HSET", KEYS[1], "hash", ARGV[1], "binding", ARGV[2])
redis.call("PEXPIREAT", KEYS[1], gone)
for i = 2, 4 do
  redis.call("ZREMRANGEBYSCORE", KEYS[i], "-inf", "(" .. ARGV[5])
  redis.call("ZADD", KEYS[i], gone, ARGV[3])
  -- An index lives as long as its longest-kept record (-1, no expiry, only on a new one).
  if redis.call("PEXPIRETIME", KEYS[i]) < gone then redis.call("PEXPIREAT", KEYS[i], gone) end
end
return 1
