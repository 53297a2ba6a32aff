import { describe, expect, it } from "vitest";
import { MessageChannel } from "node:worker_threads";
import { Yielding, yieldingTransport } from "../../../processors/runner/yielding.ts";
import type { BatchHandler, RawRecord, Transport } from "../../../processors/runner/transport.ts";

const busy = (ms: number): void => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

describe("SYS-5 the sinks' batches yield to the deciding ones", () => {
  it("runs what it is given in the order given, at most atOnce at a time", async () => {
    const lane = new Yielding(2);
    const order: string[] = [];
    let inHand = 0;
    let most = 0;
    const job = (n: number) =>
      lane.run(async () => {
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
    expect(lane.queued).toBe(0);
  });

  it("gives a place back when what ran threw, and passes the error on", async () => {
    const lane = new Yielding(1);
    await expect(lane.run(() => Promise.reject(new Error("the store is down")))).rejects.toThrow("the store is down");
    await expect(lane.run(() => Promise.resolve("next"))).resolves.toBe("next");
  });

  it("refuses a lane with no place", () => {
    expect(() => new Yielding(0)).toThrow(/at least one/);
  });

  it("lets a timer that fell due during one holder's work run before the next holder starts", async () => {
    const lane = new Yielding(1);
    const log: string[] = [];
    const work = (name: string) =>
      lane.run(() => {
        log.push(name);
        setTimeout(() => log.push(`timer after ${name}`), 0);
        busy(5);
        return Promise.resolve();
      });
    await Promise.all([work("a"), work("b"), work("c")]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(log).toEqual(["a", "timer after a", "b", "timer after b", "c", "timer after c"]);
  });

  it("lets a message from another thread's port in between two holders (as a deciding batch comes)", async () => {
    // Places for all three at once: each still starts on a turn of its own.
    const lane = new Yielding(3);
    const { port1, port2 } = new MessageChannel();
    const log: string[] = [];
    const came = new Promise<void>((resolve) =>
      port2.once("message", (m: string) => {
        log.push(m);
        resolve();
      }),
    );
    const first = lane.run(() => {
      log.push("sink batch 1");
      port1.postMessage("deciding batch");
      busy(5);
      return Promise.resolve();
    });
    // Several turns asked for at once, as a fetch's batches are: the message still gets in before the second.
    const rest = [2, 3].map((n) =>
      lane.run(() => {
        log.push(`sink batch ${n}`);
        return Promise.resolve();
      }),
    );
    await Promise.all([first, ...rest, came]);
    port1.close();
    expect(log[0]).toBe("sink batch 1");
    expect(log.indexOf("deciding batch")).toBeLessThan(log.indexOf("sink batch 2"));
  });

  it("a yielding transport hands every batch to the handler, on a turn of its own, and passes its outputs back", async () => {
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
    const lane = new Yielding(1);
    const t = yieldingTransport(inner, lane);
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
    expect(lane.queued).toBe(2);
    const outs = await Promise.all(pending);
    expect(seen).toEqual(["1", "2,3"]);
    expect(outs.map((o) => o[0]?.value?.toString())).toEqual(["1", "2"]);
    await t.stop();
    expect(stopped).toBe(true);
  });
});
