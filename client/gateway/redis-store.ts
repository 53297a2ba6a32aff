/** The project's API keys in Redis (`store.ts`): a record per key and three indexes, in the `{keys}` slot. */
import { KEY_PREFIX, checkBinding, keyHash, keyId, newKey, type KeyBinding } from "./keys.ts";
import type { RedisClient } from "../../store/redis/client.ts";
import { redisCall } from "../../store/redis/errors.ts";
import type { Keys } from "../../store/redis/keys.ts";
import { defineScript } from "../../store/redis/script.ts";
import { bindingOf, isKeyId, KEPT_PAST_EXPIRY_MS, newestFirst, newKeyProblem, sameHash, withRevocation, type KeyStore, type Revocation } from "./store.ts";

/** How many times a key is made again when its ID is another key's (a 48-bit prefix: all but never). */
const ID_TRIES = 5;

/** Keeps a new key's record and its three indexes: "kept", "before" (the same hash kept already) or "taken" (the ID is another key's). */
export const apiKeyCreate = defineScript({
  name: "apiKeyCreate",
  keys: (k, i: { readonly id: string; readonly hash: string; readonly binding: KeyBinding; readonly now: number }) => [k.apiKey(i.id), k.apiKeys(), k.apiKeysOfTenant(i.binding.tenant), k.apiKeysOfJob(i.binding.tenant, i.binding.job_id)],
  args: (i) => [i.hash, JSON.stringify(i.binding), i.id, i.binding.expires_at + KEPT_PAST_EXPIRY_MS, i.now],
  reply: (raw, fail) => {
    if (raw === 1) return "kept" as const;
    if (raw === 0) return "before" as const;
    if (raw === -1) return "taken" as const;
    return fail("1, 0 or -1");
  },
  what: (i) => `making an API key for job ${i.binding.job_id} of tenant ${i.binding.tenant}`,
});

/** Revokes a key once: whether this call revoked it, its binding and the revocation that holds; null when no such key is kept. */
export const apiKeyRevoke = defineScript({
  name: "apiKeyRevoke",
  keys: (k, i: { readonly id: string; readonly revocation: Revocation }) => [k.apiKey(i.id)],
  args: (i) => [JSON.stringify(i.revocation)],
  reply: (raw, fail) => {
    if (raw === "") return null;
    if (!Array.isArray(raw) || (raw[0] !== 0 && raw[0] !== 1) || typeof raw[1] !== "string" || typeof raw[2] !== "string") fail('{revoked now, binding, revocation} or ""');
    const [now, binding, revocation] = raw as [number, string, string];
    return { now: now === 1, binding: JSON.parse(binding) as KeyBinding, revocation: JSON.parse(revocation) as Revocation };
  },
  what: (i) => `revoking API key ${i.id}`,
});

export function redisKeyStore(redis: RedisClient, keys: Keys): KeyStore {
  const record = async (id: string): Promise<{ hash: string; binding: KeyBinding } | null> => {
    const [hash, binding, revoked] = await redis.hmget(keys.apiKey(id), "hash", "binding", "revoked");
    if (!hash || !binding) return null;
    return { hash, binding: withRevocation(JSON.parse(binding) as KeyBinding, revoked ? (JSON.parse(revoked) as Revocation) : null) };
  };
  const revokeOne = async (id: string, by: string, now: number, within: { readonly what: string; readonly key: string }): Promise<{ now: boolean; binding: KeyBinding } | null> => {
    const r = await apiKeyRevoke.run(redis, keys, { id, revocation: { at: now, by } }, within);
    return r && { now: r.now, binding: withRevocation(r.binding, r.revocation) };
  };
  return {
    create: (b, now) =>
      redisCall(`making an API key for job ${b.job_id} of tenant ${b.tenant}`, keys.apiKeys(), async () => {
        const problem = newKeyProblem(b, now);
        if (problem) throw new Error(problem);
        for (let i = 0; i < ID_TRIES; i++) {
          const key = newKey();
          const hash = keyHash(key);
          const id = keyId(hash);
          const binding = bindingOf(id, b, now);
          const kept = await apiKeyCreate.run(redis, keys, { id, hash, binding, now }, { what: `making an API key for job ${b.job_id} of tenant ${b.tenant}`, key: keys.apiKeys() });
          if (kept === "kept") return { key, binding };
        }
        throw new Error(`no free key ID in ${ID_TRIES} tries: the key IDs of Redis are not as made here`);
      }),
    check: async (key, now) => {
      if (!key.startsWith(KEY_PREFIX)) return checkBinding(null, now);
      const hash = keyHash(key);
      const id = keyId(hash);
      const found = await redisCall(`checking API key ${id}`, keys.apiKey(id), () => record(id));
      return checkBinding(found && sameHash(found.hash, hash) ? found.binding : null, now);
    },
    list: (filter) => {
      const index = filter.tenant === undefined ? keys.apiKeys() : filter.job_id === undefined ? keys.apiKeysOfTenant(filter.tenant) : keys.apiKeysOfJob(filter.tenant, filter.job_id);
      return redisCall("listing API keys", index, async () => {
        const ids = await redis.zrangebyscore(index, Date.now(), "+inf");
        const found = await Promise.all(ids.map((id) => record(id)));
        return found
          .filter((f): f is { hash: string; binding: KeyBinding } => f !== null)
          .map((f) => f.binding)
          .filter((b) => (filter.tenant === undefined || b.tenant === filter.tenant) && (filter.job_id === undefined || b.job_id === filter.job_id))
          .sort(newestFirst);
      });
    },
    revoke: (id, by, now) => {
      if (!isKeyId(id)) return Promise.resolve(null);
      const within = { what: `revoking API key ${id}`, key: keys.apiKey(id) };
      return redisCall(within.what, within.key, async () => (await revokeOne(id, by, now, within))?.binding ?? null);
    },
    revokeJob: (tenant, jobId, by, now) =>
      redisCall(`revoking the API keys of job ${jobId} of tenant ${tenant}`, keys.apiKeysOfJob(tenant, jobId), async () => {
        const within = { what: `revoking the API keys of job ${jobId} of tenant ${tenant}`, key: keys.apiKeysOfJob(tenant, jobId) };
        // One script per key: each is idempotent, so a revocation cut short is finished by the next.
        const ids = await redis.zrangebyscore(keys.apiKeysOfJob(tenant, jobId), now, "+inf");
        let revoked = 0;
        for (const id of ids) if ((await revokeOne(id, by, now, within))?.now) revoked++;
        return revoked;
      }),
  };
}
