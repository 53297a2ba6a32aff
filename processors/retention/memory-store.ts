import { randomUUID } from "node:crypto";
import type { SweepRecord } from "./status.ts";
import type { RetentionStore } from "./store.ts";

/**
 * The retention sweep's state in memory, for tests: the same locks (taken when absent or
 * expired, lengthened and released only by the sweep that holds them) and the same records (a
 * later sweep's record stands) as Redis keeps, on the clock given.
 */
export function memoryRetentionStore(now: () => number = Date.now): RetentionStore & { readonly locks: ReadonlyMap<string, { readonly value: string; readonly until: number }> } {
  const locks = new Map<string, { value: string; until: number }>();
  const records = new Map<string, SweepRecord>();
  const held = (tenant: string): { value: string; until: number } | undefined => {
    const lock = locks.get(tenant);
    if (lock && lock.until <= now()) {
      locks.delete(tenant);
      return undefined;
    }
    return lock;
  };
  return {
    locks,
    lock(tenant, instance, ms) {
      const holder = held(tenant);
      if (holder) return Promise.resolve({ heldBy: holder.value.split("\n")[0] ?? holder.value });
      const value = `${instance}\n${randomUUID()}`;
      locks.set(tenant, { value, until: now() + ms });
      return Promise.resolve({
        lock: {
          value,
          extend: (more) => {
            const lock = held(tenant);
            if (lock?.value !== value) return Promise.resolve(false);
            lock.until = now() + more;
            return Promise.resolve(true);
          },
          release: () => {
            if (held(tenant)?.value === value) locks.delete(tenant);
            return Promise.resolve();
          },
        },
      });
    },
    record(r) {
      const was = records.get(r.tenant);
      if (was && was.at > r.at) return Promise.resolve(false);
      records.set(r.tenant, r);
      return Promise.resolve(true);
    },
    last(tenant) {
      if (tenant !== undefined) {
        const one = records.get(tenant);
        return Promise.resolve(one ? [one] : []);
      }
      return Promise.resolve([...records.values()].sort((a, b) => a.tenant.localeCompare(b.tenant)));
    },
  };
}
