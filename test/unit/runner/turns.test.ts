import { describe, expect, it } from "vitest";
import { batchesAtOnceFromEnv, DEFAULT_BATCHES_AT_ONCE, Turns } from "../../../processors/runner/kafka-thread.ts";

/** A promise and the hand that settles it. */
function gate(): { promise: Promise<void>; open(): void; fail(err: Error): void } {
  let open = (): void => undefined;
  let fail = (_: Error): void => undefined;
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

describe("turns to decide a processor's batches (the Kafka thread)", () => {
  it("SYS-1 decides at most N batches at once, the rest in the order they came", async () => {
    const turns = new Turns(2);
    const started: number[] = [];
    const gates = [gate(), gate(), gate(), gate(), gate()];
    const done = gates.map((g, i) =>
      turns.run(async () => {
        started.push(i);
        await g.promise;
        return i;
      }),
    );
    await settle();
    expect(started).toEqual([0, 1]);
    gates[1]?.open();
    await settle();
    expect(started).toEqual([0, 1, 2]);
    gates[0]?.open();
    await settle();
    expect(started).toEqual([0, 1, 2, 3]);
    for (const g of gates) g.open();
    expect(await Promise.all(done)).toEqual([0, 1, 2, 3, 4]);
    expect(started).toEqual([0, 1, 2, 3, 4]);
  });

  it("SYS-1 a batch that fails gives its turn to the next, and its error to its caller", async () => {
    const turns = new Turns(1);
    const first = gate();
    const failing = turns.run(async () => {
      await first.promise;
    });
    let secondRan = false;
    const second = turns.run(() => {
      secondRan = true;
      return Promise.resolve("second");
    });
    await settle();
    expect(secondRan).toBe(false);
    first.fail(new Error("Redis went away"));
    await expect(failing).rejects.toThrow("Redis went away");
    await expect(second).resolves.toBe("second");
    // The turn is free again: a newcomer runs at once.
    let thirdRan = false;
    const third = turns.run(() => {
      thirdRan = true;
      return Promise.resolve();
    });
    expect(thirdRan).toBe(true);
    await third;
  });

  it("SYS-1 OZ0_BATCHES_AT_ONCE sets N, 16 by default, refusing anything but 1 to 64", () => {
    expect(batchesAtOnceFromEnv({})).toBe(DEFAULT_BATCHES_AT_ONCE);
    expect(DEFAULT_BATCHES_AT_ONCE).toBe(16);
    expect(batchesAtOnceFromEnv({ OZ0_BATCHES_AT_ONCE: "4" })).toBe(4);
    for (const bad of ["0", "65", "1.5", "many"]) {
      expect(() => batchesAtOnceFromEnv({ OZ0_BATCHES_AT_ONCE: bad })).toThrow(`OZ0_BATCHES_AT_ONCE=${bad} is not a whole number from 1 to 64`);
    }
  });
});
