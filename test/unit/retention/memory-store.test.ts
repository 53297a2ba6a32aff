import { describe, expect, it } from "vitest";
import { memoryRetentionStore } from "../../../processors/retention/memory-store.ts";
import type { SweepRecord } from "../../../processors/retention/status.ts";

function record(tenant: string, at: number, instance = "pipe-1"): SweepRecord {
  return { tenant, at, instance, outcome: "swept", removed: { files: 1, grants: 0, traces: 0 }, held: { files: 0, traces: 0 }, duration_ms: 5, errors: [] };
}

describe("the retention sweep's state, in memory", () => {
  it("OFF-10 one lock per tenant: a second taker is told who holds it; only its holder lengthens or releases it", async () => {
    let clock = 1_000;
    const store = memoryRetentionStore(() => clock);
    const taken = await store.lock("acme", "pipe-1", 60_000);
    if (!("lock" in taken)) throw new Error(`the lock was not free: ${taken.heldBy}`);
    expect(taken.lock.value.split("\n")[0]).toBe("pipe-1");
    expect(await store.lock("acme", "pipe-2", 60_000)).toEqual({ heldBy: "pipe-1" });
    expect("lock" in (await store.lock("globex", "pipe-2", 60_000))).toBe(true);

    clock += 50_000;
    expect(await taken.lock.extend(60_000)).toBe(true);
    clock += 50_000;
    expect(await store.lock("acme", "pipe-2", 60_000)).toEqual({ heldBy: "pipe-1" });
    await taken.lock.release();
    expect(store.locks.has("acme")).toBe(false);
  });

  it("OFF-10 an expired lock is free to take, and its old holder can neither lengthen nor release the new one", async () => {
    let clock = 0;
    const store = memoryRetentionStore(() => clock);
    const first = await store.lock("acme", "pipe-1", 1_000);
    if (!("lock" in first)) throw new Error("the lock was not free");
    clock = 1_000;
    const second = await store.lock("acme", "pipe-2", 1_000);
    if (!("lock" in second)) throw new Error(`an expired lock was still held by ${second.heldBy}`);
    expect(await first.lock.extend(5_000)).toBe(false);
    await first.lock.release();
    expect(store.locks.get("acme")?.value).toBe(second.lock.value);
  });

  it("OFF-10 a tenant's last sweep: a later sweep's record stands against an earlier one finishing after it; every tenant's by name", async () => {
    const store = memoryRetentionStore();
    expect(await store.record(record("globex", 200))).toBe(true);
    expect(await store.record(record("acme", 300, "pipe-2"))).toBe(true);
    expect(await store.record(record("acme", 100))).toBe(false);
    expect(await store.record(record("acme", 300, "pipe-2"))).toBe(true);
    expect((await store.last("acme")).map((r) => [r.at, r.instance])).toEqual([[300, "pipe-2"]]);
    expect(await store.last("initech")).toEqual([]);
    expect((await store.last()).map((r) => r.tenant)).toEqual(["acme", "globex"]);
  });
});
