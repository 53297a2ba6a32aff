import { describe, expect, it } from "vitest";
import { MessageChannel } from "node:worker_threads";
import { batchesAtOnceFromEnv, DEFAULT_BATCHES_AT_ONCE } from "../../../processors/runner/kafka-thread.ts";
import { MAX_SPREAD_GAP_MS, SPREAD_SHARE, takingTurns, Turns } from "../../../processors/runner/turns.ts";
import type { BatchHandler, RawRecord, Transport } from "../../../processors/runner/transport.ts";
import { DEFAULT_SINK_BATCH_GAP_MS, DEFAULT_SINK_BATCHES_AT_ONCE, sinkBatchesAtOnceFromEnv, sinkBatchGapFromEnv, sinkSpreadFromEnv } from "../../../topology/pipeline.ts";

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

const busy = (ms: number): void => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

/**
 * Holders that each set a timer due at once and then keep the thread 5 ms, all asked for at
 * once: the log says whether each timer ran before the next holder started.
 */
async function timersBetween(turns: Turns, names: readonly string[]): Promise<string[]> {
  const log: string[] = [];
  const work = (name: string) =>
    turns.run(() => {
      log.push(name);
      setTimeout(() => log.push(`timer after ${name}`), 0);
      busy(5);
      return Promise.resolve();
    });
  await Promise.all(names.map(work));
  await new Promise((resolve) => setTimeout(resolve, 5));
  return log;
}

describe("SYS-5 the sinks' batches yield to the deciding ones (turns of their own)", () => {
  it("runs what it is given in the order given, at most atOnce at a time", async () => {
    const turns = new Turns(2, { ownLoopTurn: true });
    const order: string[] = [];
    let inHand = 0;
    let most = 0;
    const job = (n: number) =>
      turns.run(async () => {
        inHand++;
        most = Math.max(most, inHand);
        order.push(`start ${n}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inHand--;
        return n;
      });
    const results = await Promise.all([1, 2, 3, 4, 5].map(job));
    expect(results).toEqual([1, 2, 3, 4, 5]);
    expect(order).toEqual(["start 1", "start 2", "start 3", "start 4", "start 5"]);
    expect(most).toBe(2);
  });

  it("gives a place back when what ran threw, and passes the error on", async () => {
    const turns = new Turns(1, { ownLoopTurn: true });
    await expect(turns.run(() => Promise.reject(new Error("the store is down")))).rejects.toThrow("the store is down");
    await expect(turns.run(() => Promise.resolve("next"))).resolves.toBe("next");
  });

  it("refuses turns with no place", () => {
    expect(() => new Turns(0, { ownLoopTurn: true })).toThrow(/at least one/);
    expect(() => new Turns(1.5)).toThrow(/at least one/);
  });

  it("without turns of their own, holders run back to back: a timer waits (the deciding batches' way)", async () => {
    expect(await timersBetween(new Turns(1), ["a", "b"])).toEqual(["a", "b", "timer after a", "timer after b"]);
  });

  it("OZ0_SINK_BATCHES_AT_ONCE sets the sinks' bound, 2 by default, refusing anything but 1 to 64", () => {
    expect(sinkBatchesAtOnceFromEnv({})).toBe(DEFAULT_SINK_BATCHES_AT_ONCE);
    expect(DEFAULT_SINK_BATCHES_AT_ONCE).toBe(2);
    expect(sinkBatchesAtOnceFromEnv({ OZ0_SINK_BATCHES_AT_ONCE: "1" })).toBe(1);
    for (const bad of ["0", "65", "two"]) {
      expect(() => sinkBatchesAtOnceFromEnv({ OZ0_SINK_BATCHES_AT_ONCE: bad })).toThrow(`OZ0_SINK_BATCHES_AT_ONCE=${bad} is not a whole number from 1 to 64`);
    }
  });

  it("starts each holder at least the gap after the one before started, with places for all; none without a gap", async () => {
    const startsOf = async (turns: Turns): Promise<number[]> => {
      const starts: number[] = [];
      await Promise.all([0, 1, 2, 3].map(() => turns.run(() => Promise.resolve(void starts.push(performance.now())))));
      return starts;
    };
    const gapped = await startsOf(new Turns(4, { ownLoopTurn: true, gapMs: 40 }));
    expect(gapped).toHaveLength(4);
    // At least 40 ms apart as performance.now() reads it (the test reads it a microtask after each start).
    for (let i = 1; i < gapped.length; i++) expect((gapped[i] as number) - (gapped[i - 1] as number), `start ${i}`).toBeGreaterThanOrEqual(39);
    // Without a gap, four holders with places for all start within a few loop turns.
    const together = await startsOf(new Turns(4, { ownLoopTurn: true }));
    expect((together[3] as number) - (together[0] as number)).toBeLessThan(39);
  });

  it("refuses a gap below 0, or a gap without turns of their own", () => {
    expect(() => new Turns(2, { ownLoopTurn: true, gapMs: -1 })).toThrow("the gap between turns is 0 ms or more, not -1");
    expect(() => new Turns(2, { gapMs: 10 })).toThrow("a gap between turns needs each turn on an event-loop turn of its own (ownLoopTurn)");
  });

  it("OZ0_SINK_BATCH_GAP_MS sets the least time between the starts of the sinks' batches, 50 ms by default, refusing anything but 0 to 1000", () => {
    expect(sinkBatchGapFromEnv({})).toBe(DEFAULT_SINK_BATCH_GAP_MS);
    expect(DEFAULT_SINK_BATCH_GAP_MS).toBe(50);
    expect(sinkBatchGapFromEnv({ OZ0_SINK_BATCH_GAP_MS: "0" })).toBe(0);
    for (const bad of ["-1", "1001", "soon"]) expect(() => sinkBatchGapFromEnv({ OZ0_SINK_BATCH_GAP_MS: bad })).toThrow(`OZ0_SINK_BATCH_GAP_MS=${bad}`);
  });

  /** When each of `n` holders asking at once started, in ms from the first. */
  const burst = async (turns: Turns, n: number): Promise<number[]> => {
    const starts: number[] = [];
    await Promise.all(Array.from({ length: n }, () => turns.run(() => Promise.resolve(void starts.push(performance.now())))));
    return starts.map((t) => t - (starts[0] as number));
  };
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

  it("spreads a burst's starts evenly over up to the spread, at most its share of the time since the burst before began", async () => {
    const turns = new Turns(2, { ownLoopTurn: true, gapMs: 5, spreadMs: 150 });
    // The first burst has no burst before it: only the gap.
    const first = await burst(turns, 4);
    expect(first[3]).toBeLessThan(60);
    // 250 ms after it began: 0.8 x 250 = 200, so the spread's 150 ms; four starts 50 ms apart.
    await sleep(250 - (first[3] as number));
    const second = await burst(turns, 4);
    for (let i = 1; i < 4; i++) {
      const gap = (second[i] as number) - (second[i - 1] as number);
      expect(gap, `start ${i}`).toBeGreaterThanOrEqual(45);
      expect(gap, `start ${i}`).toBeLessThan(90);
    }
    expect(second[3]).toBeGreaterThanOrEqual(140);
    // Bursts right after the last (a consumer behind, its fetches full at once): each spread
    // over at most 0.8 of the time since the last began, so less each time: the fourth after
    // the second over at most 0.8^4 of its 150 ms (61), where the spread alone gives 150.
    let last: number[] = second;
    for (let i = 0; i < 4; i++) {
      const next = await burst(turns, 4);
      expect(next[3], `burst ${i + 3}`).toBeLessThan(SPREAD_SHARE * ((last[3] as number) + 10) + 20);
      last = next;
    }
    expect(last[3]).toBeLessThan(SPREAD_SHARE ** 4 * 150 + 25);
  });

  it(`never spreads two starts more than ${MAX_SPREAD_GAP_MS} ms apart`, async () => {
    const turns = new Turns(1, { ownLoopTurn: true, spreadMs: 5_000 });
    await burst(turns, 1);
    await sleep(2_000);
    // A spread of 0.8 x 2,000 = 1,600 ms over two starts would put them 1,600 ms apart.
    const starts = await burst(turns, 2);
    expect(starts[1]).toBeGreaterThanOrEqual(MAX_SPREAD_GAP_MS - 5);
    expect(starts[1]).toBeLessThan(MAX_SPREAD_GAP_MS + 200);
  }, 10_000);

  it("hurried (the application stops), those waiting start one after the other, without the gap or the spread", async () => {
    const turns = new Turns(1, { ownLoopTurn: true, gapMs: 50, spreadMs: 5_000 });
    await burst(turns, 1);
    await sleep(1_000);
    // Spread over 0.8 x 1,000 = 800 ms: five starts some 160 ms apart, at least the gap.
    const starts: number[] = [];
    const all = Promise.all(Array.from({ length: 5 }, () => turns.run(() => Promise.resolve(void starts.push(performance.now())))));
    while (starts.length < 2) await sleep(5);
    turns.hurry();
    await all;
    const after = starts.map((t) => t - (starts[1] as number));
    expect(after[4]).toBeLessThan(40);
    // Once none waits, the next burst is spread again.
    await sleep(500);
    const again = await burst(turns, 3);
    expect(again[2]).toBeGreaterThanOrEqual(2 * 50 - 5);
  }, 10_000);

  it("a transport taking turns hurries them when it stops, and the batches it hands over while stopping", async () => {
    let given: BatchHandler | null = null;
    const inner: Transport = {
      start: (handler) => {
        given = handler;
        return Promise.resolve();
      },
      stop: () => Promise.resolve(),
    };
    const turns = new Turns(1, { ownLoopTurn: true, gapMs: 200 });
    const t = takingTurns(inner, turns);
    const starts: number[] = [];
    await t.start(() => Promise.resolve(void starts.push(performance.now())).then(() => []));
    const rec: RawRecord = { topic: "in", partition: 0, offset: "1", key: null, value: null, timestamp: "0" };
    const ctx = { heartbeat: () => Promise.resolve(), isRunning: () => true };
    const handler = given as unknown as BatchHandler;
    const first = [handler([rec], ctx), handler([rec], ctx), handler([rec], ctx)];
    while (starts.length < 1) await sleep(5);
    await t.stop();
    const late = handler([rec], ctx);
    await Promise.all([...first, late]);
    // 200 ms apart each, the four would take 600 ms.
    expect((starts[3] as number) - (starts[0] as number)).toBeLessThan(100);
  });

  it("refuses a spread below 0, or a spread without turns of their own", () => {
    expect(() => new Turns(2, { ownLoopTurn: true, spreadMs: -1 })).toThrow("the span a burst of turns is spread over is 0 ms or more, not -1");
    expect(() => new Turns(2, { spreadMs: 10 })).toThrow("a burst of turns spread out needs each turn on an event-loop turn of its own (ownLoopTurn)");
  });

  it("OZ0_SINK_SPREAD_MS sets the most a sinks' fetch is spread over, by default 0.8 of the fetch's wait, refusing anything but 0 to 30000", () => {
    expect(sinkSpreadFromEnv({})).toBe(8_000);
    expect(sinkSpreadFromEnv({ OZ0_SINK_MAX_WAIT_MS: "5000" })).toBe(4_000);
    expect(sinkSpreadFromEnv({ OZ0_SINK_SPREAD_MS: "0" })).toBe(0);
    expect(sinkSpreadFromEnv({ OZ0_SINK_SPREAD_MS: "12000" })).toBe(12_000);
    for (const bad of ["-1", "30001", "later"]) expect(() => sinkSpreadFromEnv({ OZ0_SINK_SPREAD_MS: bad })).toThrow(`OZ0_SINK_SPREAD_MS=${bad}`);
  });

  it("lets a timer that fell due during one holder's work run before the next holder starts", async () => {
    expect(await timersBetween(new Turns(1, { ownLoopTurn: true }), ["a", "b", "c"])).toEqual(["a", "timer after a", "b", "timer after b", "c", "timer after c"]);
  });

  it("lets a message from another thread's port in between two holders (as a deciding batch comes)", async () => {
    // Places for all three at once: each still starts on a turn of its own.
    const turns = new Turns(3, { ownLoopTurn: true });
    const { port1, port2 } = new MessageChannel();
    const log: string[] = [];
    const came = new Promise<void>((resolve) =>
      port2.once("message", (m: string) => {
        log.push(m);
        resolve();
      }),
    );
    const first = turns.run(() => {
      log.push("sink batch 1");
      port1.postMessage("deciding batch");
      busy(5);
      return Promise.resolve();
    });
    // Several turns asked for at once, as a fetch's batches are: the message still gets in before the second.
    const rest = [2, 3].map((n) =>
      turns.run(() => {
        log.push(`sink batch ${n}`);
        return Promise.resolve();
      }),
    );
    await Promise.all([first, ...rest, came]);
    port1.close();
    expect(log[0]).toBe("sink batch 1");
    expect(log.indexOf("deciding batch")).toBeLessThan(log.indexOf("sink batch 2"));
  });

  it("a transport taking turns hands every batch to the handler, on a turn of its own, and passes its outputs back", async () => {
    let given: BatchHandler | null = null;
    let stopped = false;
    const inner: Transport = {
      start: (handler) => {
        given = handler;
        return Promise.resolve();
      },
      stop: () => {
        stopped = true;
        return Promise.resolve();
      },
    };
    const turns = new Turns(1, { ownLoopTurn: true });
    const t = takingTurns(inner, turns);
    const seen: string[] = [];
    await t.start((records) => {
      seen.push(records.map((r) => r.offset).join(","));
      return Promise.resolve([{ topic: "out", key: null, value: Buffer.from(records[0]?.offset ?? "") }]);
    });
    const rec = (offset: string): RawRecord => ({ topic: "in", partition: 0, offset, key: null, value: null, timestamp: "0" });
    const ctx = { heartbeat: () => Promise.resolve(), isRunning: () => true };
    const handler = given as unknown as BatchHandler;
    const pending = [handler([rec("1")], ctx), handler([rec("2"), rec("3")], ctx)];
    // Nothing runs before the loop turns.
    expect(seen).toEqual([]);
    const outs = await Promise.all(pending);
    expect(seen).toEqual(["1", "2,3"]);
    expect(outs.map((o) => o[0]?.value?.toString())).toEqual(["1", "2"]);
    await t.stop();
    expect(stopped).toBe(true);
  });
});
