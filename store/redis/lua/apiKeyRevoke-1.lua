--[[
  apiKeyRevoke: revokes an API key once (client/gateway/keys.ts): the first revocation holds,
  with its time and who. A key nobody made (or whose record has gone) is not made by it.
  Mirrors revoke in client/gateway/redis-store.ts.

  KEYS[1]  the key's record (Keys.apiKey): fields "hash", "binding" (JSON), "revoked" (JSON)
  ARGV[1]  the revocation as JSON ({"at": epoch ms, "by": who})

  Returns {1 when this call revoked it else 0, the binding (JSON), the revocation that holds
  (JSON)}, or "" when no such key is kept.
]]
local binding = redis.call("HGET", KEYS[1], "binding")
if not binding then return "" end
local now = redis.call("HSETNX", KEYS[1], "revoked", ARGV[1])
return { now, binding, redis.call("HGET", KEYS[1], "revoked") }
