import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { Redis } from "ioredis";
import { memoryLimitsStore } from "../../processors/limits/memory-store.ts";
import { redisLimitsStore } from "../../processors/limits/redis-store.ts";
import { spendShare } from "../../processors/limits/spend.ts";
import type { LimitsStore } from "../../processors/limits/store.ts";
import { NO_LIMIT, type TreeSettings } from "../../processors/limits/tree-settings.ts";
import { Keys } from "../../store/redis/keys.ts";
import { uid } from "../support/events.ts";
import { endpoints } from "../support/kafka.ts";

function settings(over: Partial<TreeSettings> = {}): TreeSettings {
  return { tenant: "acme", rootAgent: "root", startedByPerson: false, budget: NO_LIMIT, reserve: "last_call", onBudget: "fail", modelCalls: NO_LIMIT, tokens: NO_LIMIT, children: 500, fanOut: 100, depth: 10, wait: NO_LIMIT, warnShare: 800_000, softWall: 850_000, ...over };
}

const limit = (max: number) => fc.oneof(fc.constant(NO_LIMIT), fc.integer({ min: 0, max }));

const settingsArb = fc.record({
  budget: limit(2_000),
  reserve: fc.constantFrom("last_call" as const, "strict" as const),
  modelCalls: limit(12),
  tokens: limit(3_000),
  children: limit(6),
  fanOut: limit(4),
  depth: limit(3),
  wait: limit(1_000),
});

type Op =
  | { op: "ask"; req: number; run: number; input: number; worst: number; maxSteps: number; maxTokens: number }
  | { op: "usage"; req: number; run: number; input: number; output: number; cost: number }
  | { op: "rewarm"; req: number; cost: number }
  | { op: "child"; phase: "ask" | "start"; job: number; parent: number; parentRun: number; depth: number; delegating: boolean; maxDepth: number; maxChildren: number }
  | { op: "end"; job: number }
  | { op: "wait"; event: number; job: number; kind: "started" | "ended"; ts: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("ask" as const), req: fc.nat(15), run: fc.nat(2), input: fc.nat(400), worst: fc.nat(500), maxSteps: fc.constantFrom(NO_LIMIT, 3, 50), maxTokens: fc.constantFrom(NO_LIMIT, 800) }),
  fc.record({ op: fc.constant("usage" as const), req: fc.nat(15), run: fc.nat(2), input: fc.nat(400), output: fc.nat(400), cost: fc.nat(500) }),
  fc.record({ op: fc.constant("rewarm" as const), req: fc.nat(5), cost: fc.nat(200) }),
  fc.record({ op: fc.constant("child" as const), phase: fc.constantFrom("ask" as const, "start" as const), job: fc.integer({ min: 1, max: 8 }), parent: fc.nat(3), parentRun: fc.nat(1), depth: fc.integer({ min: 1, max: 4 }), delegating: fc.boolean(), maxDepth: fc.nat(2), maxChildren: fc.constantFrom(NO_LIMIT, 1, 2) }),
  fc.record({ op: fc.constant("end" as const), job: fc.nat(8) }),
  fc.record({ op: fc.constant("wait" as const), event: fc.nat(10), job: fc.nat(3), kind: fc.constantFrom("started" as const, "ended" as const), ts: fc.nat(2_000) }),
);

async function apply(store: LimitsStore, tree: string, o: Op): Promise<unknown> {
  switch (o.op) {
    case "ask":
      return store.admitCall(tree, { requestId: `r${o.req}`, runId: `run${o.run}`, inputTokens: o.input, worst: o.worst, maxSteps: o.maxSteps, maxTokens: o.maxTokens });
    case "usage":
      return store.settleCall(tree, { requestId: `r${o.req}`, runId: `run${o.run}`, inputTokens: o.input, outputTokens: o.output, cost: o.cost });
    case "rewarm":
      return store.rewarm(tree, `w${o.req}`, o.cost);
    case "child":
      return store.child(tree, o.phase, { jobId: `j${o.job}`, parentJobId: `j${o.parent}`, parentRunId: o.phase === "ask" ? `pr${o.parentRun}` : "", runId: o.phase === "start" ? `cr${o.job}` : "", agent: "a", depth: o.depth, delegating: o.delegating, parentMaxDepth: o.maxDepth, parentMaxChildren: o.maxChildren });
    case "end":
      await store.endJob(tree, `j${o.job}`, o.job === 0);
      return null;
    case "wait":
      return store.wait(tree, `e${o.event}-${o.kind}`, `j${o.job}`, o.kind, o.ts);
  }
}

describe("limits state in real Redis", () => {
  let redis: Redis;
  let keys: Keys;
  beforeAll(() => {
    redis = new Redis(endpoints().redisUrl);
    keys = new Keys(uid("lim").replace(/-/g, "_"));
  });
  afterAll(() => redis?.disconnect());

  it("LIM-7 the Lua scripts answer exactly as the pure admission logic, for random inputs and replays", async () => {
    const red = redisLimitsStore(redis, keys, { ttlSeconds: 120 });
    await fc.assert(
      fc.asyncProperty(settingsArb, fc.array(opArb, { minLength: 1, maxLength: 40 }), async (over, ops) => {
        const tree = uid("tree");
        const mem = memoryLimitsStore();
        for (const store of [mem, red]) await store.init(tree, settings(over), true, { jobId: "j0", agent: "root", runId: "pr0" });
        for (const o of ops) {
          const want = await apply(mem, tree, o);
          const got = await apply(red, tree, o);
          expect(got, JSON.stringify(o)).toEqual(want);
        }
        expect(await red.spent(tree)).toBe(mem.trees.get(tree)?.spent);
      }),
      { numRuns: 60 },
    );
  });

  it("LIM-7 concurrent asks, usages and replays never admit spend past the budget but for the one last call, nor children past the limits", async () => {
    const red = redisLimitsStore(redis, keys, { ttlSeconds: 120 });
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 3_000 }),
        fc.constantFrom("last_call" as const, "strict" as const),
        fc.integer({ min: 0, max: 5 }),
        fc.integer({ min: 0, max: 3 }),
        fc.array(fc.record({ worst: fc.integer({ min: 1, max: 600 }), actualShare: fc.double({ min: 0, max: 1, noNaN: true }), replays: fc.nat(2) }), { minLength: 1, maxLength: 30 }),
        fc.array(fc.record({ replays: fc.nat(2), start: fc.boolean() }), { maxLength: 12 }),
        async (budget, reserve, children, fanOut, calls, kids) => {
          const tree = uid("tree");
          await red.init(tree, settings({ budget, reserve, children, fanOut }), true, { jobId: "root", agent: "root", runId: "run" });
          // Every caller races every other: each call asks (maybe several times), then reports what it cost, at most its worst case.
          const callers = calls.map(async (c, i) => {
            const ask = { requestId: `r${i}`, runId: `run${i % 3}`, inputTokens: 1, worst: c.worst, maxSteps: NO_LIMIT, maxTokens: NO_LIMIT };
            const answers = await Promise.all(Array.from({ length: 1 + c.replays }, () => red.admitCall(tree, ask)));
            expect(new Set(answers.map((a) => a.code)).size).toBe(1);
            const admitted = answers[0]?.code === "allow" || answers[0]?.code === "allow_last_call";
            if (!admitted) return { admitted, cost: 0, worst: c.worst };
            const cost = Math.floor(c.worst * c.actualShare);
            await Promise.all(Array.from({ length: 1 + c.replays }, () => red.settleCall(tree, { requestId: ask.requestId, runId: ask.runId, inputTokens: 1, outputTokens: 1, cost })));
            return { admitted, cost, worst: c.worst, last: answers[0]?.code === "allow_last_call" };
          });
          const children_ = kids.map(async (k, i) => {
            const a = { jobId: `c${i}`, parentJobId: "root", parentRunId: "run", runId: "", agent: "w", depth: 1, delegating: false, parentMaxDepth: 1, parentMaxChildren: NO_LIMIT };
            const answers = await Promise.all(Array.from({ length: 1 + k.replays }, () => red.child(tree, k.start ? "start" : "ask", a)));
            expect(new Set(answers.map((x) => x.code)).size).toBe(1);
            return answers[0]?.code === "allow";
          });
          const results = await Promise.all(callers);
          const admittedKids = (await Promise.all(children_)).filter(Boolean).length;
          const spent = results.reduce((s, r) => s + r.cost, 0);
          expect(await red.spent(tree)).toBe(spent);
          const lastCalls = results.filter((r) => r.last);
          expect(lastCalls.length).toBeLessThanOrEqual(reserve === "strict" ? 0 : 1);
          const maxWorst = Math.max(0, ...lastCalls.map((r) => r.worst));
          expect(spent).toBeLessThanOrEqual(budget + maxWorst);
          expect(admittedKids).toBeLessThanOrEqual(Math.min(children, fanOut));
          const state = (await redis.hmget(keys.limits(tree), "reserved", "children", "running")).map((v) => Number(v ?? 0));
          expect(state).toEqual([0, admittedKids, admittedKids]);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("LIM-8 spendShare reads the share of the budget a tree has spent, and null without state or budget", async () => {
    const red = redisLimitsStore(redis, keys, { ttlSeconds: 60 });
    const tree = uid("tree");
    expect(await spendShare(redis, keys, tree)).toBeNull();
    await red.init(tree, settings({ budget: 1_000 }), true, null);
    await red.rewarm(tree, "w", 250);
    expect(await spendShare(redis, keys, tree)).toBe(0.25);
    const none = uid("tree");
    await red.init(none, settings(), true, null);
    expect(await spendShare(redis, keys, none)).toBeNull();
    expect(await redis.ttl(keys.limits(tree))).toBeGreaterThan(0);
  });
});
