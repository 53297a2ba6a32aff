/**
 * A key the store refuses for good (a string planted with SET where oz0 keeps a hash, as an
 * operator's mistake or another version would leave it) dead-letters the inputs that touch it,
 * with the server's words and the key, and only those: every other input of the batch is
 * decided as in the same batch without the planted key. Real Redis, two labs of keys.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { limitsEnv } from "../../processors/limits/index.ts";
import { limitsModelCallsProcessor } from "../../processors/limits/model-calls-processor.ts";
import { loopCallsProcessor } from "../../processors/loops/calls-processor.ts";
import { RedisLoopStore } from "../../processors/loops/redis-store.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { TestDriver } from "../../processors/runner/test-driver.ts";
import type { Decision, ModelCall, ToolCall } from "../../schemas/types.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { toolCall, uid } from "../support/events.ts";
import { endpoints } from "../support/kafka.ts";

let redis: RedisClient;
beforeAll(() => {
  redis = redisClient(endpoints());
});
afterAll(() => redis?.disconnect());

const lab = () => new Keys(uid("rk").replace(/-/g, "_"));

describe("a key refused for good, in a batch of many", () => {
  it("SYS-4 a WRONGTYPE tree key dead-letters that tree's asks only: the other 24 trees of the batch are answered as without it", async () => {
    const tenant = uid("load-acme");
    const config = staticConfig([{ kind: "agent", id: "boss", value: { name: "boss", tools: [], limits: { tree: {}, max_cost_usd: 0.05 }, delegation: { allow: [] }, loops: {}, spend: {} } }]);
    const trees = ["poison-tree", ...Array.from({ length: 24 }, (_, i) => `healthy-${i}`)];
    // Three asks and usages a tree, interleaved: the budget runs out part way, so each answer depends on the tree's state.
    const calls: ModelCall[] = [];
    for (let round = 0; round < 3; round++) {
      for (const tree of trees) {
        const ask: ModelCall = { id: `ask-${tree}-${round}`, tenant, tree_id: tree, job_id: tree, run_id: "run", request_id: `req-${tree}-${round}`, kind: "ask", model: "claude-sonnet-4", input_tokens: 1_000, max_output_tokens: 1_000, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, agent: "boss", ts: Date.UTC(2026, 10, 30) + round };
        calls.push(ask, { ...ask, id: `use-${tree}-${round}`, kind: "usage", output_tokens: 1_000 });
      }
    }
    const decide = async (keys: Keys) => {
      const driver = new TestDriver(limitsModelCallsProcessor, limitsEnv({ redis, config, keys }));
      await driver.pipe(calls);
      return { decisions: driver.read<Decision>("oz0.admissions"), dead: driver.deadLetters };
    };
    const clean = await decide(lab());
    const poisonedKeys = lab();
    const key = poisonedKeys.limits(tenant, "poison-tree");
    await redis.set(key, "planted by hand");
    const poisoned = await decide(poisonedKeys);

    const words = (ds: Decision[]) => ds.map((d) => [d.input_id, d.verdict, d.limit, d.reason_code]);
    expect(clean.dead).toEqual([]);
    expect(words(poisoned.decisions)).toEqual(words(clean.decisions.filter((d) => !d.input_id.includes("poison-tree"))));
    expect(new Set(words(clean.decisions).map((d) => d[1])).size).toBeGreaterThan(1);
    // Each of the poisoned tree's six inputs, dead-lettered with the server's words and the key.
    expect(poisoned.dead.map((d) => Number(d.offset))).toEqual(calls.flatMap((c, i) => (c.tree_id === "poison-tree" ? [i] : [])));
    for (const d of poisoned.dead) {
      expect(d.error).toBe("failed");
      expect(d.reason).toContain(`on key ${key}`);
      expect(d.reason).toContain("WRONGTYPE Operation against a key holding the wrong kind of value");
    }
    await redis.del(key);
  });

  it("SYS-3 a WRONGTYPE loop lane dead-letters that run's calls only: every other run of the batch is decided as without it", async () => {
    const config = staticConfig([{ kind: "agent", id: "acme-reviewer", value: { on_loop: "stop" } }]);
    const runs = Array.from({ length: 6 }, (_, i) => `run-${i}-${uid("r")}`);
    const poisonRun = runs[3] as string;
    // Each run repeats one call: the loop detector stops it part way, so each decision depends on the run's state.
    const calls: ToolCall[] = [];
    for (let i = 0; i < 8; i++) for (const run of runs) calls.push(toolCall({ id: `c-${run}-${i}`, run_id: run, function: "search", arguments: JSON.stringify({ q: "same" }), ts: Date.UTC(2026, 10, 30, 12) + i }));
    const decide = async (keys: Keys) => {
      const driver = new TestDriver(loopCallsProcessor, { config, store: new RedisLoopStore(redis, keys) });
      await driver.pipe(calls);
      return { decisions: driver.read<Decision>("oz0.call-decisions"), dead: driver.deadLetters };
    };
    const clean = await decide(lab());
    const poisonedKeys = lab();
    const key = poisonedKeys.loopLane("acme", poisonRun, "calls");
    await redis.set(key, "planted by hand");
    const poisoned = await decide(poisonedKeys);

    const words = (ds: Decision[]) => ds.map((d) => [d.input_id, d.verdict, d.limit, d.reason_code]);
    expect(clean.dead).toEqual([]);
    expect(new Set(words(clean.decisions).map((d) => d[1]))).toEqual(new Set(["allow", "stop"]));
    expect(words(poisoned.decisions)).toEqual(words(clean.decisions.filter((d) => !d.input_id.includes(poisonRun))));
    expect(poisoned.dead.map((d) => Number(d.offset))).toEqual(calls.flatMap((c, i) => (c.run_id === poisonRun ? [i] : [])));
    for (const d of poisoned.dead) {
      expect(d.error).toBe("failed");
      expect(d.reason).toContain(key);
      expect(d.reason).toContain("WRONGTYPE Operation against a key holding the wrong kind of value");
    }
    await redis.del(key);
  });
});
