import { describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { loopsPipelineEntries, RedisLoopStore } from "../../../processors/loops/index.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { Keys } from "../../../store/redis/keys.ts";
import { topic } from "../../../topology/topics.ts";

describe("loop detector wiring", () => {
  it("LOOP-1 three processors, one per input, each writing decisions, trace entries and what else it owes, sharing one store per Redis connection", () => {
    expect(loopsPipelineEntries.map((e) => [e.processor.name, e.processor.input])).toEqual([
      ["loop-calls", "oz0.tool-calls"],
      ["loop-results", "oz0.tool-results"],
      ["loop-approvals", "oz0.loop-approvals"],
    ]);
    // LOOP-7: a call not made gets a failed result, and every result goes on to fit-results (the one
    // that crossed the no-progress line with its words); LOOP-9: loops acted on go to the audit log.
    expect(loopsPipelineEntries.map((e) => e.processor.outputs)).toEqual([
      ["oz0.call-decisions", "oz0.trace", "oz0.results-delivered", "oz0.audit"],
      ["oz0.tool-results.watched", "oz0.call-decisions", "oz0.trace", "oz0.audit"],
      ["oz0.call-decisions", "oz0.trace", "oz0.results-delivered"],
    ]);
    expect(topic("oz0.loop-approvals")).toMatchObject({ schema: "Decision", key: "run_id" });
    expect(topic("oz0.tool-results.watched")).toMatchObject({ schema: "ToolResult", key: "run_id", partitions: topic("oz0.tool-results").partitions });

    const redis = new Redis({ lazyConnect: true });
    const config = staticConfig([]);
    const envs = loopsPipelineEntries.map((e) => e.env({ redis, config }));
    expect(envs[0]?.store).toBeInstanceOf(RedisLoopStore);
    expect(new Set(envs.map((e) => e.store)).size).toBe(1);
    redis.disconnect();
  });

  it("LOOP-1 a run's loop keys share the run's hash tag (its tenant and run), so one script may touch them on Redis Cluster", () => {
    const k = new Keys("oz0");
    expect([k.loopLane("acme", "r-1", "calls"), k.loopLane("acme", "r-1", "results"), k.loopFlags("acme", "r-1")]).toEqual(["oz0:{run:acme/r-1}:loop:calls", "oz0:{run:acme/r-1}:loop:results", "oz0:{run:acme/r-1}:loop:flags"]);
    expect(k.loopStats("2026-11-30", "counts")).toBe("oz0:{loopstats}:2026-11-30:counts");
    expect(() => k.loopStats("30/11/2026", "counts")).toThrow(/YYYY-MM-DD/);
  });
});
