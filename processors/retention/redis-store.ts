/**
 * The retention sweep's state in Redis (`store.ts`; `{retention}` slot, keys in
 * store/redis/keys.ts):
 *
 * - a lock per tenant, `SET NX PX` with a value of its own (`<instance>\n<token>`), lengthened
 *   while the sweep runs and released by compare-and-delete (`retentionUnlock`), so at most one
 *   instance sweeps a tenant at a time and none releases another's lock;
 * - each tenant's last sweep, one hash (`retentionRecord`: a later sweep's record stands).
 */
import { randomUUID } from "node:crypto";
import type { RedisClient } from "../../store/redis/client.ts";
import type { Keys } from "../../store/redis/keys.ts";
import { defineScript, flag } from "../../store/redis/script.ts";
import type { SweepRecord } from "./status.ts";
import type { RetentionStore } from "./store.ts";

/** Lengthens a tenant's lock by `ms` when it still holds `value`: true when it did. */
export const retentionExtend = defineScript({
  name: "retentionExtend",
  keys: (k, i: { readonly tenant: string; readonly value: string; readonly ms: number }) => [k.retentionLock(i.tenant)],
  args: (i) => [i.value, i.ms],
  reply: flag,
  what: (i) => `lengthening the retention lock of tenant ${i.tenant}`,
});

/** Releases a tenant's lock when it still holds `value`: true when it did. */
export const retentionUnlock = defineScript({
  name: "retentionUnlock",
  keys: (k, i: { readonly tenant: string; readonly value: string }) => [k.retentionLock(i.tenant)],
  args: (i) => [i.value],
  reply: flag,
  what: (i) => `releasing the retention lock of tenant ${i.tenant}`,
});

/** Keeps a tenant's last sweep unless a later one is kept: true when kept. */
export const retentionRecord = defineScript({
  name: "retentionRecord",
  keys: (k, _r: SweepRecord) => [k.retentionLast()],
  args: (r) => [r.tenant, JSON.stringify(r)],
  reply: flag,
  what: (r) => `recording the retention sweep of tenant ${r.tenant}`,
});

export function redisRetentionStore(redis: RedisClient, keys: Keys): RetentionStore {
  return {
    async lock(tenant, instance, ms) {
      const key = keys.retentionLock(tenant);
      const value = `${instance}\n${randomUUID()}`;
      const took = await redis.set(key, value, "PX", ms, "NX");
      if (took !== "OK") {
        const holder = await redis.get(key);
        return { heldBy: holder === null ? "an instance whose lock just expired" : (holder.split("\n")[0] ?? holder) };
      }
      return {
        lock: {
          value,
          extend: (more) => retentionExtend.run(redis, keys, { tenant, value, ms: more }),
          release: async () => void (await retentionUnlock.run(redis, keys, { tenant, value })),
        },
      };
    },
    async record(r) {
      return retentionRecord.run(redis, keys, r);
    },
    async last(tenant) {
      if (tenant !== undefined) {
        const one = await redis.hget(keys.retentionLast(), tenant);
        return one === null ? [] : [parseRecord(one, tenant)];
      }
      const all = await redis.hgetall(keys.retentionLast());
      return Object.entries(all)
        .map(([t, v]) => parseRecord(v, t))
        .sort((a, b) => a.tenant.localeCompare(b.tenant));
    },
  };
}

function parseRecord(text: string, tenant: string): SweepRecord {
  try {
    const r = JSON.parse(text) as SweepRecord;
    if (typeof r.at !== "number" || typeof r.instance !== "string") throw new Error("no at or instance");
    return r;
  } catch (err) {
    throw new Error(`the last retention sweep kept for tenant ${tenant} is not a sweep record (${err instanceof Error ? err.message : String(err)})`, { cause: err });
  }
}
