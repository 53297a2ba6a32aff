/**
 * Where the project's API keys are kept (client/gateway/keys.ts): the model gateway and
 * `oz0 mcp --listen --keys` check a request's key here, `oz0 run` and `oz0 keys create` make
 * them, `oz0 keys list|revoke` and a job's end list and revoke them.
 *
 * Only a key's SHA-256 is kept, never the key. In Redis a key's record is a hash named by its ID
 * (the ID is the hash's first 12 hex characters, so a check finds the record from the key it is
 * given and compares the whole hash), with an index of every key, one per tenant and one per
 * job, all in the `{keys}` slot (store/redis/keys.ts), so making a key and indexing it is one
 * script (apiKeyCreate) and revoking it another (apiKeyRevoke), each idempotent. A record is kept
 * a week past its expiry, so an expired key is answered "expired", not "unknown"; then it goes,
 * and its index entries with it.
 *
 * Redis (`redisKeyStore`) and memory (`memoryKeyStore`, for unit tests) behave the same.
 */
import { timingSafeEqual } from "node:crypto";
import { checkBinding, KEY_PREFIX, keyHash, keyId, newKey, type KeyBinding, type KeyCheck, type KeyStore, type NewKey } from "../client/gateway/keys.ts";
import type { RedisClient } from "./redis/client.ts";
import { redisFailure } from "./redis/errors.ts";
import type { Keys } from "./redis/keys.ts";
import { defineScript } from "./redis/script.ts";

/** A key's record is kept this long past its expiry, so it answers "expired" rather than "unknown". */
export const KEPT_PAST_EXPIRY_MS = 7 * 24 * 3600 * 1000;

/** A key's ID as keyId makes it: `k-` and 12 hex characters. */
const KEY_ID = /^k-[0-9a-f]{12}$/;

export const isKeyId = (id: string): boolean => KEY_ID.test(id);

/** What a new key's binding must hold; each problem named, or null. */
export function newKeyProblem(b: NewKey, now: number): string | null {
  for (const field of ["tenant", "agent", "tree_id", "job_id", "run_id", "created_by"] as const) {
    const v = b[field] as unknown;
    if (typeof v !== "string" || v.trim() === "") return `a key is bound to a ${field}: it is empty`;
  }
  if (!Number.isFinite(b.expires_at) || b.expires_at <= now) return `a key's expires_at (${String(b.expires_at)}) must be later than now (${now})`;
  return null;
}

/** The binding a new key is made with. */
function bindingOf(id: string, b: NewKey, now: number): KeyBinding {
  return { id, tenant: b.tenant, agent: b.agent, tree_id: b.tree_id, job_id: b.job_id, run_id: b.run_id, created_by: b.created_by, created_at: now, expires_at: b.expires_at, revoked_at: null, revoked_by: null };
}

interface Revocation {
  readonly at: number;
  readonly by: string;
}

const withRevocation = (b: KeyBinding, r: Revocation | null): KeyBinding => (r ? { ...b, revoked_at: r.at, revoked_by: r.by } : b);

/** Newest first; the ID breaks ties, so a list reads the same every time. */
const newestFirst = (a: KeyBinding, b: KeyBinding): number => b.created_at - a.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  return x.length === y.length && timingSafeEqual(x, y);
}

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
  async function guarded<T>(what: string, key: string, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (err) {
      throw redisFailure(err, what, key);
    }
  }
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
      guarded(`making an API key for job ${b.job_id} of tenant ${b.tenant}`, keys.apiKeys(), async () => {
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
      const found = await guarded(`checking API key ${id}`, keys.apiKey(id), () => record(id));
      return checkBinding(found && sameHash(found.hash, hash) ? found.binding : null, now);
    },
    list: (filter) => {
      const index = filter.tenant === undefined ? keys.apiKeys() : filter.job_id === undefined ? keys.apiKeysOfTenant(filter.tenant) : keys.apiKeysOfJob(filter.tenant, filter.job_id);
      return guarded("listing API keys", index, async () => {
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
      return guarded(within.what, within.key, async () => (await revokeOne(id, by, now, within))?.binding ?? null);
    },
    revokeJob: (tenant, jobId, by, now) =>
      guarded(`revoking the API keys of job ${jobId} of tenant ${tenant}`, keys.apiKeysOfJob(tenant, jobId), async () => {
        const within = { what: `revoking the API keys of job ${jobId} of tenant ${tenant}`, key: keys.apiKeysOfJob(tenant, jobId) };
        // One script per key: each is idempotent, so a revocation cut short is finished by the next.
        const ids = await redis.zrangebyscore(keys.apiKeysOfJob(tenant, jobId), now, "+inf");
        let revoked = 0;
        for (const id of ids) if ((await revokeOne(id, by, now, within))?.now) revoked++;
        return revoked;
      }),
  };
}

/** The same in memory, for unit tests and the test driver. */
export function memoryKeyStore(): KeyStore & { readonly kept: ReadonlyMap<string, { readonly hash: string; readonly binding: KeyBinding }> } {
  const kept = new Map<string, { hash: string; binding: KeyBinding }>();
  // A record goes a week past its expiry, as Redis lets it go.
  const live = (now: number) => [...kept.values()].filter((r) => r.binding.expires_at + KEPT_PAST_EXPIRY_MS > now);
  const revokeOne = (id: string, by: string, now: number): { now: boolean; binding: KeyBinding } | null => {
    const r = kept.get(id);
    if (!r || r.binding.expires_at + KEPT_PAST_EXPIRY_MS <= now) return null;
    if (r.binding.revoked_at !== null) return { now: false, binding: r.binding };
    r.binding = withRevocation(r.binding, { at: now, by });
    return { now: true, binding: r.binding };
  };
  return {
    kept,
    create: (b, now) => {
      const problem = newKeyProblem(b, now);
      if (problem) return Promise.reject(new Error(problem));
      for (;;) {
        const key = newKey();
        const hash = keyHash(key);
        const id = keyId(hash);
        if (kept.has(id)) continue;
        const binding = bindingOf(id, b, now);
        kept.set(id, { hash, binding });
        return Promise.resolve({ key, binding });
      }
    },
    check: (key, now) => {
      if (!key.startsWith(KEY_PREFIX)) return Promise.resolve(checkBinding(null, now));
      const hash = keyHash(key);
      const r = kept.get(keyId(hash));
      const found = r && r.binding.expires_at + KEPT_PAST_EXPIRY_MS > now && sameHash(r.hash, hash) ? r.binding : null;
      return Promise.resolve<KeyCheck>(checkBinding(found, now));
    },
    list: (filter) =>
      Promise.resolve(
        live(Date.now())
          .map((r) => r.binding)
          .filter((b) => (filter.tenant === undefined || b.tenant === filter.tenant) && (filter.job_id === undefined || b.job_id === filter.job_id))
          .sort(newestFirst),
      ),
    revoke: (id, by, now) => Promise.resolve(revokeOne(id, by, now)?.binding ?? null),
    revokeJob: (tenant, jobId, by, now) => {
      let revoked = 0;
      for (const r of live(now)) if (r.binding.tenant === tenant && r.binding.job_id === jobId && revokeOne(r.binding.id, by, now)?.now) revoked++;
      return Promise.resolve(revoked);
    },
  };
}
