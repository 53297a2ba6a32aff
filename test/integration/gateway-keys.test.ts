/**
 * The project's API keys kept in the real Redis (client/gateway/redis-store.ts): the same behaviour as
 * the memory store's, each key's record and indexes in the `{keys}` slot, and a record kept a
 * week past its expiry and no longer.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { hashTag, scanKeys } from "../../store/redis/slots.ts";
import { redisKeyStore } from "../../client/gateway/redis-store.ts";
import { KEPT_PAST_EXPIRY_MS } from "../../client/gateway/store.ts";
import { uid } from "../support/events.ts";
import { endpoints } from "../support/kafka.ts";
import { keyStoreBehaviour } from "../support/key-store.ts";

describe("redisKeyStore: the project's API keys in the real Redis", () => {
  let redis: RedisClient;
  const keys = new Keys(uid("keys").replace(/-/g, "_"));
  beforeAll(() => {
    redis = redisClient(endpoints());
  });
  afterAll(async () => {
    const found: string[] = [];
    for await (const batch of scanKeys(redis, `${keys.prefix}:*`)) found.push(...batch);
    if (found.length > 0) await Promise.all(found.map((k) => redis.del(k)));
    redis?.disconnect();
  });

  /** Every field and member the store keeps under this test's prefix. */
  async function kept(): Promise<string[]> {
    const out: string[] = [];
    for await (const batch of scanKeys(redis, `${keys.prefix}:*`)) {
      for (const k of batch) {
        const type = await redis.type(k);
        out.push(k, ...(type === "hash" ? Object.entries(await redis.hgetall(k)).flat() : await redis.zrange(k, 0, -1)));
      }
    }
    return out;
  }

  keyStoreBehaviour(() => ({ store: redisKeyStore(redis, keys), kept }));

  it("a key's record and its indexes share the {keys} slot, and each is kept until a week past the key's expiry", async () => {
    const store = redisKeyStore(redis, keys);
    const now = Date.now();
    const expires = now + 3_600_000;
    const { binding } = await store.create({ tenant: "acme {x}", agent: "a", tree_id: "t", job_id: "j/1", run_id: "r", created_by: "alice", expires_at: expires }, now);
    const names = [keys.apiKey(binding.id), keys.apiKeys(), keys.apiKeysOfTenant("acme {x}"), keys.apiKeysOfJob("acme {x}", "j/1")];
    expect(new Set(names.map(hashTag))).toEqual(new Set(["keys"]));
    for (const n of names) {
      expect(await redis.exists(n)).toBe(1);
      const at = await redis.pexpiretime(n);
      expect(at).toBeGreaterThanOrEqual(expires + KEPT_PAST_EXPIRY_MS - 1);
    }
    expect(await redis.hget(keys.apiKey(binding.id), "binding")).toBe(JSON.stringify(binding));
  });

  it("SYS-3 the making script kept again with the same hash changes nothing, and an ID held by another hash is refused (the store makes another key)", async () => {
    const store = redisKeyStore(redis, keys);
    const now = Date.now();
    const { binding } = await store.create({ tenant: "acme", agent: "a", tree_id: "t", job_id: "j-replay", run_id: "r", created_by: "alice", expires_at: now + 60_000 }, now);
    const { runScript } = await import("../../store/redis/scripts.ts");
    const hash = await redis.hget(keys.apiKey(binding.id), "hash");
    const args = (h: string) => runScript(redis, "apiKeyCreate", [keys.apiKey(binding.id), keys.apiKeys(), keys.apiKeysOfTenant("acme"), keys.apiKeysOfJob("acme", "j-replay")], [h, JSON.stringify({ ...binding, agent: "other" }), binding.id, now + 60_000 + KEPT_PAST_EXPIRY_MS, now]);
    expect(await args(hash as string)).toBe(0);
    expect(await args("f".repeat(64))).toBe(-1);
    expect(await redis.hget(keys.apiKey(binding.id), "hash")).toBe(hash);
    expect(JSON.parse((await redis.hget(keys.apiKey(binding.id), "binding")) as string)).toMatchObject({ agent: "a" });
  });

  it("entries of records that have gone leave the indexes at the next key made, and are never listed", async () => {
    const store = redisKeyStore(redis, keys);
    const now = Date.now();
    const { binding } = await store.create({ tenant: "prune", agent: "a", tree_id: "t", job_id: "j", run_id: "r", created_by: "alice", expires_at: now + 60_000 }, now);
    // As if a week and more had passed: the record goes, its entries stay until pruned.
    await redis.del(keys.apiKey(binding.id));
    await redis.zadd(keys.apiKeysOfTenant("prune"), now - 1, binding.id);
    expect(await store.list({ tenant: "prune" })).toEqual([]);
    await store.create({ tenant: "prune", agent: "a", tree_id: "t", job_id: "j", run_id: "r", created_by: "alice", expires_at: now + 60_000 }, now);
    expect(await redis.zscore(keys.apiKeysOfTenant("prune"), binding.id)).toBeNull();
  });
});
