import { describe, expect, it } from "vitest";
import type { Worker } from "node:worker_threads";
import { DEFAULT_THREAD_HEAP, heapFlags, threadHeapFromEnv, workerWithHeap, type ThreadHeap } from "../../../processors/runner/thread-heap.ts";

/** A thread that reports the size of its young generation's space and ends. */
const REPORT = `const v8 = require("node:v8"); const { parentPort } = require("node:worker_threads");
parentPort.postMessage(v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size);`;

function newSpaceOf(start: () => Worker): Promise<number> {
  return new Promise((resolve, reject) => {
    const w = start();
    w.once("error", reject);
    w.once("message", (size: number) => {
      resolve(size);
      void w.terminate();
    });
  });
}

const MB = 1024 * 1024;
const plain = (): Promise<number> => newSpaceOf(() => workerWithHeap(REPORT, { eval: true }, { youngMb: 0, oldMb: 0 }));
const sized = (heap: ThreadHeap): Promise<number> => newSpaceOf(() => workerWithHeap(REPORT, { eval: true }, heap));

describe("the Kafka thread's heap", () => {
  it("reads its sizes from the environment, 0 leaving V8's own, and refuses what is not a size", () => {
    expect(threadHeapFromEnv({})).toEqual(DEFAULT_THREAD_HEAP);
    expect(DEFAULT_THREAD_HEAP).toEqual({ youngMb: 16, oldMb: 128 });
    expect(threadHeapFromEnv({ OZ0_KAFKA_THREAD_YOUNG_MB: "0", OZ0_KAFKA_THREAD_OLD_MB: " " })).toEqual({ youngMb: 0, oldMb: 128 });
    expect(() => threadHeapFromEnv({ OZ0_KAFKA_THREAD_YOUNG_MB: "lots" })).toThrow(/OZ0_KAFKA_THREAD_YOUNG_MB=lots is not a whole number of MB from 0 to 512/);
    expect(() => threadHeapFromEnv({ OZ0_KAFKA_THREAD_OLD_MB: "-1" })).toThrow(/OZ0_KAFKA_THREAD_OLD_MB/);
  });

  it("sets V8's flags for the new heap and puts back what the process was started with, else V8's default", () => {
    expect(heapFlags({ youngMb: 16, oldMb: 128 }, [])).toEqual({
      set: ["--min-semi-space-size=16", "--initial-old-space-size=128"],
      back: ["--min-semi-space-size=0", "--initial-old-space-size=0"],
    });
    expect(heapFlags({ youngMb: 8, oldMb: 0 }, ["--min_semi_space_size=4", "--min-semi-space-size=2"])).toEqual({ set: ["--min-semi-space-size=8"], back: ["--min-semi-space-size=2"] });
    expect(heapFlags({ youngMb: 0, oldMb: 0 }, [])).toEqual({ set: [], back: [] });
  });

  it("starts a thread with a young generation of the size asked, and the threads after it with V8's own", async () => {
    const before = await plain();
    expect(before).toBeLessThan(16 * MB);
    expect(await sized({ youngMb: 16, oldMb: 128 })).toBeGreaterThanOrEqual(16 * MB);
    // The flags were put back once it ran: the next thread is made as the first was.
    expect(await plain()).toBe(before);
  });
});
