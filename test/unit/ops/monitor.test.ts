import type { Admin } from "kafkajs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Health } from "../../../processors/ops/health.ts";
import { lagsOf, Monitor, topicsByGroup, type Watched } from "../../../processors/ops/monitor.ts";
import { createLogger } from "../../../processors/runner/log.ts";

const WATCHED: Watched[] = [
  { name: "budget-fill-in", group: "oz0.pipeline", input: "oz0.tool-calls.requested" },
  { name: "loop-calls", group: "oz0.pipeline", input: "oz0.tool-calls.requested" },
  { name: "limits-jobs", group: "oz0.pipeline", input: "oz0.jobs" },
  { name: "files-jobs", group: "oz0.pipeline", input: "oz0.jobs" },
  { name: "trace-sink-jobs", group: "oz0.sinks", input: "oz0.jobs" },
  { name: "audit-sink-audit", group: "oz0.sinks", input: "oz0.audit" },
];

/** An admin that answers from tables and counts its asks: the round's logic, with no broker. */
function fakeAdmin(committed: Record<string, Record<string, string[]>>, ends: Record<string, string[]>) {
  const asks = { fetchOffsets: [] as string[], fetchTopicOffsets: [] as string[], describeGroups: [] as string[][] };
  const admin = {
    fetchOffsets: ({ groupId, topics }: { groupId: string; topics: string[] }) => {
      asks.fetchOffsets.push(groupId);
      return Promise.resolve(topics.map((topic) => ({ topic, partitions: (committed[groupId]?.[topic] ?? []).map((offset, partition) => ({ partition, offset, metadata: null })) })));
    },
    fetchTopicOffsets: (topic: string) => {
      asks.fetchTopicOffsets.push(topic);
      return Promise.resolve((ends[topic] ?? []).map((high, partition) => ({ partition, offset: high, high, low: "0" })));
    },
    describeGroups: (ids: string[]) => {
      asks.describeGroups.push(ids);
      return Promise.resolve({ groups: ids.map((groupId) => ({ groupId, state: "Stable", members: [{}] })) });
    },
  };
  return { admin: admin as unknown as Admin, asks };
}

describe("the lag monitor", () => {
  it("lists each group's topics once, in the order first watched", () => {
    expect(topicsByGroup(WATCHED)).toEqual(
      new Map([
        ["oz0.pipeline", ["oz0.tool-calls.requested", "oz0.jobs"]],
        ["oz0.sinks", ["oz0.jobs", "oz0.audit"]],
      ]),
    );
  });

  it("gives each processor its group's lag on its input, and NaN where the round had no answer", () => {
    const committed = new Map([["oz0.pipeline", new Map([["oz0.jobs", 7]])]]);
    const lags = lagsOf(WATCHED, committed, new Map([["oz0.jobs", 10]]));
    expect(lags.get("limits-jobs")).toBe(3);
    expect(lags.get("files-jobs")).toBe(3);
    expect(lags.get("trace-sink-jobs")).toBeNaN();
    expect(lags.get("loop-calls")).toBeNaN();
  });

  it("asks once a group for committed offsets and once a topic for its ends, however many processors share them", async () => {
    const { admin, asks } = fakeAdmin(
      {
        "oz0.pipeline": { "oz0.tool-calls.requested": ["4", "-1"], "oz0.jobs": ["2", "2"] },
        "oz0.sinks": { "oz0.jobs": ["1", "0"], "oz0.audit": ["5"] },
      },
      { "oz0.tool-calls.requested": ["6", "3"], "oz0.jobs": ["2", "3"], "oz0.audit": ["5"] },
    );
    const health = new Health({ staleAfterMs: 60_000 });
    const monitor = new Monitor({ admin, health, log: createLogger({}, () => {}) });
    for (const w of WATCHED) monitor.watch(w);
    await monitor.refresh();

    expect(asks.fetchOffsets.sort()).toEqual(["oz0.pipeline", "oz0.sinks"]);
    expect(asks.fetchTopicOffsets.sort()).toEqual(["oz0.audit", "oz0.jobs", "oz0.tool-calls.requested"]);
    expect(asks.describeGroups).toEqual([["oz0.pipeline", "oz0.sinks"]]);
    // A partition with nothing committed ("-1") counts from 0.
    expect(monitor.lag("budget-fill-in")).toBe(9 - 4);
    expect(monitor.lag("loop-calls")).toBe(5);
    expect(monitor.lag("limits-jobs")).toBe(1);
    expect(monitor.lag("trace-sink-jobs")).toBe(4);
    expect(monitor.lag("audit-sink-audit")).toBe(0);
  });

  describe("its rounds", () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it("come a period after the last one, so a round asked for in between puts the next off", async () => {
      vi.useFakeTimers();
      const { admin, asks } = fakeAdmin({}, {});
      const monitor = new Monitor({ admin, log: createLogger({}, () => {}), periodMs: 5_000 });
      monitor.watch(WATCHED[0] as Watched);
      const rounds = () => asks.describeGroups.length;
      monitor.start();
      await vi.advanceTimersByTimeAsync(0);
      expect(rounds()).toBe(1);
      await vi.advanceTimersByTimeAsync(4_000);
      await monitor.refresh();
      expect(rounds()).toBe(2);
      // The round due at 5 s was put off to 9 s.
      await vi.advanceTimersByTimeAsync(4_500);
      expect(rounds()).toBe(2);
      await vi.advanceTimersByTimeAsync(600);
      expect(rounds()).toBe(3);
      await monitor.stop();
      await vi.advanceTimersByTimeAsync(20_000);
      expect(rounds()).toBe(3);
    });
  });
});
