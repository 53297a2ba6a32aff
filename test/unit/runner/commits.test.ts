import { describe, expect, it } from "vitest";
import { setTimeout as sleep } from "node:timers/promises";
import { Commits, landedIn, offsetsOf, type Handed } from "../../../processors/runner/commits.ts";

const batch = (topic: string, partition: number, last: string, stale = false, bytes = 1): Handed => ({
  topic,
  partition,
  last,
  out: [{ topic: "out", key: null, value: Buffer.alloc(bytes) }],
  isStale: () => stale,
});

function recorder(delayMs = 0, fail?: Error) {
  const made: Handed[][] = [];
  return {
    made,
    commit: async (b: readonly Handed[]) => {
      made.push([...b]);
      if (delayMs > 0) await sleep(delayMs);
      if (fail) throw fail;
    },
  };
}

describe("SYS-1 batches of one fetch commit together", () => {
  it("commits once every batch begun was handed in, in one commit", async () => {
    const r = recorder();
    const c = new Commits({ commit: r.commit, intervalMs: 10_000, maxBytes: 1 << 20 });
    c.begin();
    c.begin();
    c.begin();
    const a = c.hand(batch("t", 0, "5"));
    const b = c.hand(batch("t", 1, "9"));
    await sleep(5);
    expect(r.made).toHaveLength(0);
    const d = c.hand(batch("u", 0, "2"));
    expect(await Promise.all([a, b, d])).toEqual([true, true, true]);
    expect(r.made).toHaveLength(1);
    expect(r.made[0]?.map((h) => `${h.topic}/${h.partition}`)).toEqual(["t/0", "t/1", "u/0"]);
    expect(c.stats).toEqual({ commits: 1, batches: 3, stale: 0 });
  });

  it("does not wait past the interval for a slow batch", async () => {
    const r = recorder();
    const c = new Commits({ commit: r.commit, intervalMs: 30, maxBytes: 1 << 20 });
    c.begin();
    c.begin();
    const started = Date.now();
    expect(await c.hand(batch("t", 0, "1"))).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    expect(r.made).toHaveLength(1);
    // The slow one goes in a commit of its own once handed in.
    expect(await c.hand(batch("t", 1, "1"))).toBe(true);
    expect(r.made).toHaveLength(2);
  });

  it("commits at once when the outputs waiting outgrow the cap", async () => {
    const r = recorder();
    const c = new Commits({ commit: r.commit, intervalMs: 10_000, maxBytes: 100 });
    c.begin();
    c.begin();
    expect(await c.hand(batch("t", 0, "1", false, 200))).toBe(true);
    expect(r.made).toHaveLength(1);
  });

  it("runs one commit at a time; batches handed in meanwhile go in the next", async () => {
    const r = recorder(30);
    const c = new Commits({ commit: r.commit, intervalMs: 10_000, maxBytes: 1 << 20 });
    c.begin();
    const first = c.hand(batch("t", 0, "1"));
    await sleep(5);
    c.begin();
    c.begin();
    const second = c.hand(batch("t", 1, "1"));
    const third = c.hand(batch("t", 2, "1"));
    expect(await Promise.all([first, second, third])).toEqual([true, true, true]);
    expect(r.made.map((m) => m.length)).toEqual([1, 2]);
  });

  it("leaves a stale batch out and answers false for it", async () => {
    const r = recorder();
    const c = new Commits({ commit: r.commit, intervalMs: 10_000, maxBytes: 1 << 20 });
    c.begin();
    c.begin();
    const stale = c.hand(batch("t", 0, "1", true));
    const fresh = c.hand(batch("t", 1, "1"));
    expect(await Promise.all([stale, fresh])).toEqual([false, true]);
    expect(r.made[0]?.map((h) => h.partition)).toEqual([1]);
    expect(c.stats.stale).toBe(1);
  });

  it("fails every batch of a failed commit, and commits the next ones again", async () => {
    const boom = new Error("transaction aborted");
    let fail = true;
    const made: number[] = [];
    const c = new Commits({
      commit: (b) => {
        made.push(b.length);
        return fail ? Promise.reject(boom) : Promise.resolve();
      },
      intervalMs: 10_000,
      maxBytes: 1 << 20,
    });
    c.begin();
    c.begin();
    const a = c.hand(batch("t", 0, "1"));
    const b = c.hand(batch("t", 1, "1"));
    await expect(a).rejects.toBe(boom);
    await expect(b).rejects.toBe(boom);
    fail = false;
    c.begin();
    expect(await c.hand(batch("t", 0, "1"))).toBe(true);
    expect(made).toEqual([2, 1]);
  });

  it("does not wait for a batch that was abandoned", async () => {
    const r = recorder();
    const c = new Commits({ commit: r.commit, intervalMs: 10_000, maxBytes: 1 << 20 });
    c.begin();
    c.begin();
    const a = c.hand(batch("t", 0, "1"));
    await sleep(5);
    expect(r.made).toHaveLength(0);
    c.abandon();
    expect(await a).toBe(true);
  });

  it("commits each partition's next offset, grouped by topic, the highest when a partition comes twice", () => {
    expect(offsetsOf([batch("t", 0, "5"), batch("t", 1, "9"), batch("u", 3, "0"), batch("t", 0, "3")])).toEqual([
      { topic: "t", partitions: [{ partition: 0, offset: "6" }, { partition: 1, offset: "10" }] },
      { topic: "u", partitions: [{ partition: 3, offset: "1" }] },
    ]);
    expect(offsetsOf([batch("t", 0, "9223372036854775806")])[0]?.partitions[0]?.offset).toBe("9223372036854775807");
  });
});

describe("SYS-1 whether a commit in doubt landed, from the group's offsets", () => {
  const batches = [
    { topic: "a", partition: 0, last: "9" },
    { topic: "b", partition: 2, last: "41" },
  ];
  it("landed when every batch's partition is committed past its last offset", () => {
    expect(landedIn(batches, [{ topic: "a", partitions: [{ partition: 0, offset: "10" }] }, { topic: "b", partitions: [{ partition: 2, offset: "42" }, { partition: 1, offset: "0" }] }])).toBe("all");
  });
  it("not landed when each is still at its batch's first offset or has none (-1)", () => {
    expect(landedIn(batches, [{ topic: "a", partitions: [{ partition: 0, offset: "9" }] }, { topic: "b", partitions: [{ partition: 2, offset: "-1" }] }])).toBe("none");
    expect(landedIn(batches, [])).toBe("none");
  });
  it("some when only one moved on (another member committed it since)", () => {
    expect(landedIn(batches, [{ topic: "a", partitions: [{ partition: 0, offset: "10" }] }, { topic: "b", partitions: [{ partition: 2, offset: "40" }] }])).toBe("some");
  });
  it("compares offsets as numbers past 2^53", () => {
    expect(landedIn([{ topic: "a", partition: 0, last: "9007199254740993" }], [{ topic: "a", partitions: [{ partition: 0, offset: "9007199254740994" }] }])).toBe("all");
    expect(landedIn([{ topic: "a", partition: 0, last: "9007199254740993" }], [{ topic: "a", partitions: [{ partition: 0, offset: "9007199254740993" }] }])).toBe("none");
  });
});
