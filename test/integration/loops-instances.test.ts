import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Consumer, Producer } from "kafkajs";
import { loopCallsProcessor, type LoopEnv } from "../../processors/loops/calls-processor.ts";
import { MemoryLoopStore } from "../../processors/loops/memory-store.ts";
import { RedisLoopStore } from "../../processors/loops/redis-store.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { startProcessor, type RunningProcessor } from "../../processors/runner/runner.ts";
import { TestDriver } from "../../processors/runner/test-driver.ts";
import { KafkaTransport } from "../../processors/runner/transport.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { Decision, ToolCall } from "../../schemas/types.ts";
import { Keys } from "../../store/redis/keys.ts";
import { toolCall, uid } from "../support/events.ts";
import { endpoints, groupAtEnd, kafka, serde, TEST_FETCH_WAIT_MS } from "../support/kafka.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { until } from "../support/promises.ts";

const config = staticConfig([
  { kind: "agent", id: "reporter", value: { on_loop: "report" } },
  { kind: "agent", id: "stopper", value: { on_loop: "stop" } },
]);
const TS = Date.UTC(2026, 10, 30, 9);

/** A run's six calls, by its agent's on_loop: a repeat that waits, a cycle that is reported, a repeat that stops. */
function runCalls(run: string, kind: number): ToolCall[] {
  const c = (fn: string, args: object, agent: string) => toolCall({ run_id: run, tenant: `tenant-${kind}`, agent, function: fn, arguments: JSON.stringify(args), ts: TS });
  if (kind === 0) return [c("get_page", { p: "a" }, "w"), c("get_page", { p: "a" }, "w"), c("search", { q: 1 }, "w"), c("get_page", { p: "a" }, "w"), c("search", { q: 2 }, "w"), c("get_page", { p: "b" }, "w")];
  if (kind === 1) return [c("search", { q: 1 }, "reporter"), c("get_page", { p: "a" }, "reporter"), c("search", { q: 1 }, "reporter"), c("get_page", { p: "a" }, "reporter"), c("get_page", { p: "c" }, "reporter"), c("get_page", { p: "c" }, "reporter")];
  return [c("get_page", { p: "x" }, "stopper"), c("get_page", { p: "x" }, "stopper"), c("get_page", { p: "x" }, "stopper"), c("get_page", { p: "y" }, "stopper"), c("search", { q: 3 }, "stopper"), c("get_page", { p: "z" }, "stopper")];
}

describe("the loop processors as several instances", () => {
  let s: Serde;
  let redis: RedisClient;
  let producer: Producer;
  let watcher: Consumer;
  const seen: Decision[] = [];
  const ids = new Set<string>();
  const keys = new Keys(uid("t").replace(/-/g, "_"));
  const log = createLogger({ test: "loops-instances" }, () => {});

  beforeAll(async () => {
    s = await serde();
    redis = redisClient(endpoints());
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    // One reader of the decisions for the whole test, from the topic's end: committed records only.
    const group = uid("decisions");
    await groupAtEnd(group, "oz0.call-decisions");
    watcher = kafka().consumer({ groupId: group, readUncommitted: false });
    await watcher.connect();
    await watcher.subscribe({ topic: "oz0.call-decisions" });
    await watcher.run({
      eachMessage: async ({ message }) => {
        const d = await s.decode<Decision>("Decision", message.value).catch(() => undefined);
        // Another pipeline replaying the topic may decide the same calls again, under the same IDs and later: the first of each ID is ours.
        if (d?.processor === "loop-calls" && !ids.has(d.id)) {
          ids.add(d.id);
          seen.push(d);
        }
      },
    });
  });

  afterAll(async () => {
    await watcher?.disconnect();
    await producer?.disconnect();
    redis?.disconnect();
  });

  it("LOOP-2 LOOP-3 LOOP-5 LOOP-6 two instances of loop-calls in one consumer group split the runs and decide exactly as one instance does", async () => {
    const runs = Array.from({ length: 24 }, (_, i) => ({ run: uid(`run${i}`), kind: i % 3 }));
    const inputs = new Map(runs.map(({ run, kind }) => [run, runCalls(run, kind)]));

    // One instance, in memory, every run's calls in order.
    const expected = new Map<string, Decision[]>();
    for (const [run, calls] of inputs) {
      const driver = new TestDriver(loopCallsProcessor, { config, store: new MemoryLoopStore() } satisfies LoopEnv);
      await driver.pipe(calls, { key: run });
      expected.set(run, driver.read<Decision>("oz0.call-decisions"));
    }
    expect([...expected.values()].flat().filter((d) => d.verdict !== "allow").length).toBeGreaterThan(24);

    const group = uid("loop-calls");
    await groupAtEnd(group, "oz0.tool-calls");
    const env: LoopEnv = { config, store: new RedisLoopStore(redis, keys) };
    const instance = async (): Promise<RunningProcessor> => startProcessor(loopCallsProcessor, env, { transport: new KafkaTransport({ kafka: kafka(group), groupId: group, topics: ["oz0.tool-calls"], log, maxWaitMs: TEST_FETCH_WAIT_MS }), serde: s, log });
    const instances = [await instance(), await instance()];
    try {
      const admin = kafka().admin();
      await admin.connect();
      try {
        // Both members hold partitions once the group is stable with two members.
        await until(
          "the group to settle with two members",
          async () => {
            const { groups } = await admin.describeGroups([group]);
            return groups[0]?.state === "Stable" && groups[0].members.length === 2 && groups[0].members.every((m) => m.memberAssignment.length > 0);
          },
          60_000,
        );
      } finally {
        await admin.disconnect();
      }

      // The runs' calls in three waves, so each run's state passes from batch to batch in Redis.
      const ours = (d: Decision) => inputs.has(d.run_id ?? "");
      for (let wave = 0; wave < 3; wave++) {
        await producer.send({
          topic: "oz0.tool-calls",
          messages: [...inputs].flatMap(([run, calls]) => calls.slice(2 * wave, 2 * wave + 2).map((c) => ({ key: run, value: s.encode("ToolCall", c) }))),
        });
        await until(`wave ${wave + 1} decided`, () => seen.filter(ours).length >= runs.length * 2 * (wave + 1), 60_000);
      }
      await new Promise((r) => setTimeout(r, 1_000));

      const got = new Map<string, Decision[]>();
      for (const d of seen.filter(ours)) got.set(d.run_id ?? "", [...(got.get(d.run_id ?? "") ?? []), d]);
      for (const { run } of runs) expect(got.get(run), run).toEqual(expected.get(run));
      // The partitions were split: each instance decided some of the calls (and the equality above shows no call decided twice).
      expect(instances.map((i) => i.stats.in).every((n) => n > 0)).toBe(true);
      expect(instances.reduce((sum, i) => sum + i.stats.in, 0)).toBeGreaterThanOrEqual(runs.length * 6);
    } finally {
      for (const i of instances) await i.stop();
    }
  });
});
