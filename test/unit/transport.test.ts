import type { Producer } from "kafkajs";
import { describe, expect, it } from "vitest";
import { concurrencyFromEnv, consumersFromEnv, DEFAULT_CONCURRENCY, ProducerPool } from "../../processors/runner/transport.ts";

/** Stand-ins for producers: the pool only hands them out and takes them back. */
function producers(n: number): Producer[] {
  return Array.from({ length: n }, (_, i) => ({ id: i }) as unknown as Producer);
}

describe("the transport's producer pool", () => {
  it("SYS-1 never hands one transactional producer to two batches at once", async () => {
    const pool = new ProducerPool(producers(2));
    const inUse = new Set<Producer>();
    let most = 0;
    const batch = async (): Promise<void> => {
      const p = await pool.take();
      expect(inUse.has(p)).toBe(false);
      inUse.add(p);
      most = Math.max(most, inUse.size);
      await new Promise((r) => setTimeout(r, 2));
      inUse.delete(p);
      pool.give(p);
    };
    await Promise.all(Array.from({ length: 20 }, batch));
    expect(most).toBe(2);
    expect(inUse.size).toBe(0);
  });

  it("SYS-1 hands a returned producer to the batch that waited longest", async () => {
    const [a] = producers(1) as [Producer];
    const pool = new ProducerPool([a]);
    const first = await pool.take();
    const order: number[] = [];
    const waiters = [1, 2, 3].map((n) => pool.take().then((p) => (order.push(n), pool.give(p))));
    pool.give(first);
    await Promise.all(waiters);
    expect(order).toEqual([1, 2, 3]);
  });

  it("SYS-1 reads the partitions handled at once from the environment, refusing nonsense", () => {
    expect(concurrencyFromEnv({})).toBe(DEFAULT_CONCURRENCY);
    expect(concurrencyFromEnv({ OZ0_PARTITIONS_CONCURRENTLY: "1" })).toBe(1);
    expect(concurrencyFromEnv({ OZ0_PARTITIONS_CONCURRENTLY: "8" })).toBe(8);
    for (const bad of ["0", "-2", "1.5", "many", "257"]) {
      expect(() => concurrencyFromEnv({ OZ0_PARTITIONS_CONCURRENTLY: bad })).toThrow(/OZ0_PARTITIONS_CONCURRENTLY/);
    }
  });
});

describe("SYS-1 consumers of a group in one instance", () => {
  it("OZ0_CONSUMERS sets them, 1 to 16, else the caller's default", () => {
    expect(consumersFromEnv({})).toBe(1);
    expect(consumersFromEnv({}, 2)).toBe(2);
    expect(consumersFromEnv({ OZ0_CONSUMERS: "3" }, 2)).toBe(3);
    for (const bad of ["0", "17", "1.5", "two"]) expect(() => consumersFromEnv({ OZ0_CONSUMERS: bad })).toThrow(/OZ0_CONSUMERS/);
  });
});
