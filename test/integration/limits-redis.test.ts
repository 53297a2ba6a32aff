import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { newForecastState, recordTree, statsOf } from "../../processors/limits/forecast.ts";
import { limitsEnv } from "../../processors/limits/index.ts";
import { limitsTreeKey, memoryLimitsStore } from "../../processors/limits/memory-store.ts";
import { limitsJobsProcessor } from "../../processors/limits/jobs-processor.ts";
import { limitsModelCallsProcessor } from "../../processors/limits/model-calls-processor.ts";
import { newQuotaMonth, quotaAsk, quotaCheck, quotaRelease, quotaSettle } from "../../processors/limits/quota.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { PIPELINE_REDIS } from "../../processors/runner/endpoints.ts";
import { TestDriver } from "../../processors/runner/test-driver.ts";
import type { Decision, JobEvent, ModelCall } from "../../schemas/types.ts";
import { redisLimitsStore } from "../../processors/limits/redis-store.ts";
import { spendShare } from "../../processors/limits/spend.ts";
import type { LimitsStore, TreeStep } from "../../processors/limits/store.ts";
import { newTenantMonth, tenantAsk, tenantRelease, tenantSettle } from "../../processors/limits/tenant-budget.ts";
import { NO_LIMIT, type TreeSettings } from "../../processors/limits/tree-settings.ts";
import { Keys } from "../../store/redis/keys.ts";
import { uid } from "../support/events.ts";
import { endpoints } from "../support/kafka.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";

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
  | { op: "ask"; req: number; run: number; input: number; worst: number; maxSteps: number; maxTokens: number; deadline: number; now: number }
  | { op: "usage"; req: number; run: number; input: number; output: number; cost: number }
  | { op: "rewarm"; req: number; cost: number }
  | { op: "child"; phase: "ask" | "start"; job: number; parent: number; parentRun: number; depth: number; delegating: boolean; maxDepth: number; maxChildren: number; at: number; parentDeadline: number; quotaSpent: boolean; timeout: number; session: boolean }
  | { op: "read"; job: number }
  | { op: "end"; job: number }
  | { op: "wait"; event: number; job: number; kind: "started" | "ended"; ts: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("ask" as const), req: fc.nat(15), run: fc.nat(2), input: fc.nat(400), worst: fc.nat(500), maxSteps: fc.constantFrom(NO_LIMIT, 3, 50), maxTokens: fc.constantFrom(NO_LIMIT, 800), deadline: fc.constantFrom(NO_LIMIT, NO_LIMIT, 1_000), now: fc.nat(2_000) }),
  fc.record({ op: fc.constant("usage" as const), req: fc.nat(15), run: fc.nat(2), input: fc.nat(400), output: fc.nat(400), cost: fc.nat(500) }),
  fc.record({ op: fc.constant("rewarm" as const), req: fc.nat(5), cost: fc.nat(200) }),
  fc.record({ op: fc.constant("child" as const), phase: fc.constantFrom("ask" as const, "start" as const), job: fc.integer({ min: 1, max: 8 }), parent: fc.nat(3), parentRun: fc.nat(1), depth: fc.integer({ min: 1, max: 4 }), delegating: fc.boolean(), maxDepth: fc.nat(2), maxChildren: fc.constantFrom(NO_LIMIT, 1, 2), at: fc.nat(2_000), parentDeadline: fc.constantFrom(NO_LIMIT, NO_LIMIT, 1_000), quotaSpent: fc.boolean(), timeout: fc.constantFrom(NO_LIMIT, 0, 600), session: fc.boolean() }),
  fc.record({ op: fc.constant("read" as const), job: fc.nat(8) }),
  fc.record({ op: fc.constant("end" as const), job: fc.nat(8) }),
  fc.record({ op: fc.constant("wait" as const), event: fc.nat(10), job: fc.nat(3), kind: fc.constantFrom("started" as const, "ended" as const), ts: fc.nat(2_000) }),
);

async function apply(store: LimitsStore, tree: string, o: Op): Promise<unknown> {
  switch (o.op) {
    case "ask":
      return store.admitCall("acme", tree, { requestId: `r${o.req}`, runId: `run${o.run}`, inputTokens: o.input, worst: o.worst, maxSteps: o.maxSteps, maxTokens: o.maxTokens, deadline: o.deadline, now: o.now });
    case "usage":
      return store.settleCall("acme", tree, { requestId: `r${o.req}`, runId: `run${o.run}`, inputTokens: o.input, outputTokens: o.output, cost: o.cost });
    case "rewarm":
      return store.rewarm("acme", tree, `w${o.req}`, o.cost);
    case "child":
      return store.child("acme", tree, o.phase, { jobId: `j${o.job}`, parentJobId: `j${o.parent}`, parentRunId: o.phase === "ask" ? `pr${o.parentRun}` : "", runId: o.phase === "start" ? `cr${o.job}` : "", agent: "a", depth: o.depth, delegating: o.delegating, parentMaxDepth: o.maxDepth, parentMaxChildren: o.maxChildren, at: o.at, parentDeadline: o.parentDeadline, quotaSpent: o.quotaSpent, timeout: o.timeout, session: o.session });
    case "read":
      return store.read("acme", tree, `j${o.job}`);
    case "end":
      await store.endJob("acme", tree, `j${o.job}`, o.job === 0);
      return null;
    case "wait":
      return store.wait("acme", tree, `e${o.event}-${o.kind}`, `j${o.job}`, o.kind, o.ts);
  }
}

describe("limits state in real Redis", () => {
  let redis: RedisClient;
  let keys: Keys;
  beforeAll(() => {
    redis = redisClient(endpoints());
    keys = new Keys(uid("lim").replace(/-/g, "_"));
  });
  afterAll(() => redis?.disconnect());

  it("LIM-7 the Lua scripts answer exactly as the pure admission logic, for random inputs and replays", async () => {
    const red = redisLimitsStore(redis, keys, { ttlSeconds: 120 });
    await fc.assert(
      fc.asyncProperty(settingsArb, fc.array(opArb, { minLength: 1, maxLength: 40 }), async (over, ops) => {
        const tree = uid("tree");
        const mem = memoryLimitsStore();
        for (const store of [mem, red]) await store.init("acme", tree, settings(over), true, { jobId: "j0", agent: "root", runId: "pr0", at: 1_000, timeout: 900, session: true });
        for (const o of ops) {
          const want = await apply(mem, tree, o);
          const got = await apply(red, tree, o);
          expect(got, JSON.stringify(o)).toEqual(want);
        }
        expect(await red.spent("acme", tree)).toBe(mem.trees.get(limitsTreeKey("acme", tree))?.spent);
      }),
      { numRuns: 60 },
    );
  });

  it("LIM-7 a tree's steps sent at once (treeSteps, one script) answer and change the tree exactly as the same steps one by one, replays included", async () => {
    const red = redisLimitsStore(redis, keys, { ttlSeconds: 120 });
    const callOps = opArb.filter((o): o is Extract<Op, { op: "ask" | "usage" | "rewarm" }> => o.op === "ask" || o.op === "usage" || o.op === "rewarm");
    const stepOf = (o: Extract<Op, { op: "ask" | "usage" | "rewarm" }>): TreeStep =>
      o.op === "ask"
        ? { kind: "ask", ask: { requestId: `r${o.req}`, runId: `run${o.run}`, inputTokens: o.input, worst: o.worst, maxSteps: o.maxSteps, maxTokens: o.maxTokens, deadline: o.deadline, now: o.now } }
        : o.op === "usage"
          ? { kind: "usage", usage: { requestId: `r${o.req}`, runId: `run${o.run}`, inputTokens: o.input, outputTokens: o.output, cost: o.cost } }
          : { kind: "rewarm", requestId: `w${o.req}`, cost: o.cost };
    await fc.assert(
      fc.asyncProperty(settingsArb, fc.array(fc.array(callOps, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 4 }), async (over, batches) => {
        const [alone, together] = [uid("tree"), uid("tree")];
        for (const tree of [alone, together]) await red.init("acme", tree, settings(over), true, { jobId: "j0", agent: "root", runId: "pr0", at: 1_000, timeout: 900, session: true });
        for (const ops of batches) {
          const want = [];
          for (const o of ops) want.push({ kind: stepOf(o).kind, answer: await apply(red, alone, o) });
          expect(await red.treeSteps("acme", together, ops.map(stepOf)), JSON.stringify(ops)).toEqual(want);
        }
        // The same fields and values (answers kept for replays included), and a replay of every batch changes nothing.
        const [a, b] = await Promise.all([redis.hgetall(keys.limits("acme", alone)), redis.hgetall(keys.limits("acme", together))]);
        expect(b).toEqual(a);
        for (const ops of batches) await red.treeSteps("acme", together, ops.map(stepOf));
        expect(await redis.hgetall(keys.limits("acme", together))).toEqual(a);
      }),
      { numRuns: 40 },
    );
    await expect(red.treeSteps("acme", uid("never-set"), [{ kind: "rewarm", requestId: "w", cost: 1 }])).rejects.toThrow(/lost its limits state/);
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
          await red.init("acme", tree, settings({ budget, reserve, children, fanOut }), true, { jobId: "root", agent: "root", runId: "run", at: 1_000, timeout: NO_LIMIT, session: false });
          // Every caller races every other: each call asks (maybe several times), then reports what it cost, at most its worst case.
          const callers = calls.map(async (c, i) => {
            const ask = { requestId: `r${i}`, runId: `run${i % 3}`, inputTokens: 1, worst: c.worst, maxSteps: NO_LIMIT, maxTokens: NO_LIMIT, deadline: NO_LIMIT, now: 0 };
            const answers = await Promise.all(Array.from({ length: 1 + c.replays }, () => red.admitCall("acme", tree, ask)));
            expect(new Set(answers.map((a) => a.code)).size).toBe(1);
            const admitted = answers[0]?.code === "allow" || answers[0]?.code === "allow_last_call";
            if (!admitted) return { admitted, cost: 0, worst: c.worst };
            const cost = Math.floor(c.worst * c.actualShare);
            await Promise.all(Array.from({ length: 1 + c.replays }, () => red.settleCall("acme", tree, { requestId: ask.requestId, runId: ask.runId, inputTokens: 1, outputTokens: 1, cost })));
            return { admitted, cost, worst: c.worst, last: answers[0]?.code === "allow_last_call" };
          });
          const children_ = kids.map(async (k, i) => {
            const a = { jobId: `c${i}`, parentJobId: "root", parentRunId: "run", runId: "", agent: "w", depth: 1, delegating: false, parentMaxDepth: 1, parentMaxChildren: NO_LIMIT, at: 0, parentDeadline: NO_LIMIT, quotaSpent: false, timeout: NO_LIMIT, session: false };
            const answers = await Promise.all(Array.from({ length: 1 + k.replays }, () => red.child("acme", tree, k.start ? "start" : "ask", a)));
            expect(new Set(answers.map((x) => x.code)).size).toBe(1);
            return answers[0]?.code === "allow";
          });
          const results = await Promise.all(callers);
          const admittedKids = (await Promise.all(children_)).filter(Boolean).length;
          const spent = results.reduce((s, r) => s + r.cost, 0);
          expect(await red.spent("acme", tree)).toBe(spent);
          const lastCalls = results.filter((r) => r.last);
          expect(lastCalls.length).toBeLessThanOrEqual(reserve === "strict" ? 0 : 1);
          const maxWorst = Math.max(0, ...lastCalls.map((r) => r.worst));
          expect(spent).toBeLessThanOrEqual(budget + maxWorst);
          expect(admittedKids).toBeLessThanOrEqual(Math.min(children, fanOut));
          const state = (await redis.hmget(keys.limits("acme", tree), "reserved", "children", "running")).map((v) => Number(v ?? 0));
          expect(state).toEqual([0, admittedKids, admittedKids]);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("LIM-8 spendShare reads the share of the budget a tree has spent, and null without state or budget", async () => {
    const red = redisLimitsStore(redis, keys, { ttlSeconds: 60 });
    const tree = uid("tree");
    expect(await spendShare(redis, keys, "acme", tree)).toBeNull();
    await red.init("acme", tree, settings({ budget: 1_000 }), true, null);
    await red.rewarm("acme", tree, "w", 250);
    expect(await spendShare(redis, keys, "acme", tree)).toBe(0.25);
    const none = uid("tree");
    await red.init("acme", none, settings(), true, null);
    expect(await spendShare(redis, keys, "acme", none)).toBeNull();
    expect(await redis.ttl(keys.limits("acme", tree))).toBeGreaterThan(0);
  });
});

describe("LIM-10 and LIM-8 state in real Redis", () => {
  let redis: RedisClient;
  let keys: Keys;
  beforeAll(() => {
    redis = redisClient(endpoints());
    keys = new Keys(uid("lim").replace(/-/g, "_"));
  });
  afterAll(() => redis?.disconnect());

  type TenantOp = { op: "ask"; req: number; worst: number } | { op: "release"; req: number } | { op: "usage" | "rewarm"; req: number; cost: number };
  const tenantOpArb: fc.Arbitrary<{ o: TenantOp; dt: number }> = fc.record({
    o: fc.oneof(
      fc.record({ op: fc.constant("ask" as const), req: fc.nat(10), worst: fc.nat(400) }),
      fc.record({ op: fc.constant("release" as const), req: fc.nat(10) }),
      fc.record({ op: fc.constantFrom("usage" as const, "rewarm" as const), req: fc.nat(10), cost: fc.nat(400) }),
    ),
    dt: fc.nat(40),
  });

  it("LIM-10 the tenant script answers exactly as the pure logic, for random asks, releases, usages, re-warms, replays and expiries", async () => {
    const hold = { holdMs: 100, keepMs: 300 };
    const red = redisLimitsStore(redis, keys, { tenantHoldMs: hold.holdMs, tenantKeepMs: hold.keepMs, tenantTtlSeconds: 120 });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 1_500 }), fc.array(tenantOpArb, { minLength: 1, maxLength: 50 }), async (budget, ops) => {
        const tenant = uid("tenant");
        const m = newTenantMonth();
        let now = 1_000;
        for (const { o, dt } of ops) {
          now += dt;
          const req = `r${o.req}`;
          if (o.op === "ask") {
            expect(await red.tenantAsk(tenant, "2026-03", { requestId: req, worst: o.worst, budget, now }), JSON.stringify(o)).toEqual(tenantAsk(m, { requestId: req, worst: o.worst, budget, now, ...hold }));
          } else if (o.op === "release") {
            await red.tenantRelease(tenant, "2026-03", req);
            tenantRelease(m, req);
          } else {
            expect(await red.tenantSettle(tenant, "2026-03", { kind: o.op, requestId: req, cost: o.cost, now }), JSON.stringify(o)).toEqual(tenantSettle(m, { kind: o.op, requestId: req, cost: o.cost, now, ...hold }));
          }
        }
        const [spent, reserved] = await redis.hmget(keys.tenantMonth(tenant, "2026-03"), "spent", "reserved");
        expect([Number(spent ?? 0), Number(reserved ?? 0)]).toEqual([m.spent, m.reserved]);
      }),
      { numRuns: 60 },
    );
  });

  it("LIM-10 a tenant's usages and re-warms spent at once (tenantSpends, one script) answer and change the month exactly as one by one, among asks, releases and expiries", async () => {
    const hold = { holdMs: 100, keepMs: 300 };
    const red = redisLimitsStore(redis, keys, { tenantHoldMs: hold.holdMs, tenantKeepMs: hold.keepMs, tenantTtlSeconds: 120 });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 1_500 }), fc.array(tenantOpArb, { minLength: 1, maxLength: 50 }), async (budget, ops) => {
        const [alone, together] = [uid("tenant"), uid("tenant")];
        let now = 1_000;
        let run: Array<{ kind: "usage" | "rewarm"; requestId: string; cost: number; now: number }> = [];
        const flush = async () => {
          const want = [];
          for (const spend of run) want.push(await red.tenantSettle(alone, "2026-03", spend));
          expect(await red.tenantSpends(together, "2026-03", run), JSON.stringify(run)).toEqual(want);
          run = [];
        };
        for (const { o, dt } of ops) {
          now += dt;
          const req = `r${o.req}`;
          if (o.op === "usage" || o.op === "rewarm") {
            run.push({ kind: o.op, requestId: req, cost: o.cost, now });
            continue;
          }
          await flush();
          for (const t of [alone, together]) {
            if (o.op === "ask") await red.tenantAsk(t, "2026-03", { requestId: req, worst: o.worst, budget, now });
            else await red.tenantRelease(t, "2026-03", req);
          }
        }
        await flush();
        const state = async (t: string) => [await redis.hgetall(keys.tenantMonth(t, "2026-03")), await redis.zrange(keys.tenantMonthTimers(t, "2026-03"), 0, -1, "WITHSCORES")];
        expect(await state(together)).toEqual(await state(alone));
      }),
      { numRuns: 60 },
    );
  });

  it("LIM-10 concurrent asks of many trees, replays and usages never spend past the tenant's monthly budget", async () => {
    const red = redisLimitsStore(redis, keys, { tenantTtlSeconds: 120 });
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 3_000 }),
        fc.array(fc.record({ worst: fc.integer({ min: 1, max: 600 }), actualShare: fc.double({ min: 0, max: 1, noNaN: true }), replays: fc.nat(2), treeRefuses: fc.boolean() }), { minLength: 1, maxLength: 40 }),
        async (budget, calls) => {
          const tenant = uid("tenant");
          const month = "2026-03";
          const callers = calls.map(async (c, i) => {
            const ask = { requestId: `r${i}`, worst: c.worst, budget, now: 1_000 };
            const answers = await Promise.all(Array.from({ length: 1 + c.replays }, () => red.tenantAsk(tenant, month, ask)));
            expect(new Set(answers.map((a) => a.code)).size).toBe(1);
            if (answers[0]?.code !== "allow") return 0;
            if (c.treeRefuses) {
              await Promise.all(Array.from({ length: 1 + c.replays }, () => red.tenantRelease(tenant, month, ask.requestId)));
              return 0;
            }
            const cost = Math.floor(c.worst * c.actualShare);
            await Promise.all(Array.from({ length: 1 + c.replays }, () => red.tenantSettle(tenant, month, { kind: "usage", requestId: ask.requestId, cost, now: 1_000 })));
            return cost;
          });
          const spent = (await Promise.all(callers)).reduce((a, b) => a + b, 0);
          const state = (await redis.hmget(keys.tenantMonth(tenant, month), "spent", "reserved")).map((v) => Number(v ?? 0));
          expect(state).toEqual([spent, 0]);
          expect(spent).toBeLessThanOrEqual(budget);
          expect(await redis.ttl(keys.tenantMonthTimers(tenant, month))).toBeGreaterThan(0);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("LIM-7 LIM-10 a call whose worst case is 0 settles in the tree and the tenant (Lua's -0 is no integer to Redis)", async () => {
    const red = redisLimitsStore(redis, keys, { ttlSeconds: 60, tenantTtlSeconds: 60 });
    const tree = uid("tree");
    const tenant = uid("tenant");
    await red.init("acme", tree, settings({ budget: 100 }), true, null);
    await red.admitCall("acme", tree, { requestId: "r", runId: "run", inputTokens: 0, worst: 0, maxSteps: NO_LIMIT, maxTokens: NO_LIMIT, deadline: NO_LIMIT, now: 0 });
    await red.tenantAsk(tenant, "2026-03", { requestId: "r", worst: 0, budget: 100, now: 1 });
    expect((await red.settleCall("acme", tree, { requestId: "r", runId: "run", inputTokens: 0, outputTokens: 0, cost: 0 })).reserved).toBe(0);
    expect((await red.tenantSettle(tenant, "2026-03", { kind: "usage", requestId: "r", cost: 0, now: 1 })).reserved).toBe(0);
  });

  it("LIM-10 trees of one tenant asking at once through the processor never spend past its monthly budget; past it, every call is refused 402", async () => {
    const tenant = uid("tenant");
    const config = staticConfig([
      { kind: "tenant", id: tenant, value: { id: tenant, limits: { tree: {} }, loops: {}, spend: {}, offload: {}, monthly_budget_usd: 0.1 } },
      { kind: "agent", id: "boss", value: { name: "boss", tools: [], limits: { tree: {}, max_cost_usd: 1 }, delegation: { allow: [] }, loops: {}, spend: {} } },
    ]);
    const env = limitsEnv({ redis, config, keys });
    const ts = Date.UTC(2026, 2, 15);
    const call = (tree: string): ModelCall => ({ id: uid("evt"), tenant, tree_id: tree, job_id: tree, run_id: "run", request_id: uid("req"), kind: "ask", model: "claude-sonnet-4", input_tokens: 1_000, max_output_tokens: 1_000, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, agent: "boss", ts });
    // 8 trees x 3 calls at $0.018 worst and $0.018 spent: the $0.10 admits 5 in all.
    const trees = Array.from({ length: 8 }, () => uid("tree"));
    const decided = await Promise.all(
      trees.map(async (tree) => {
        const driver = new TestDriver(limitsModelCallsProcessor, env);
        for (let i = 0; i < 3; i++) {
          const ask = call(tree);
          await Promise.all([driver.pipe(ask, { key: tree }), driver.pipe(ask, { key: tree })]);
          const d = driver.read<Decision>("oz0.admissions").at(-1);
          if (d?.verdict === "allow") await driver.pipe({ ...ask, id: uid("evt"), kind: "usage", output_tokens: 1_000 }, { key: tree });
        }
        return driver.read<Decision>("oz0.admissions").filter((d) => d.processor === "limits-model-calls" && d.verdict !== "report");
      }),
    );
    const all = decided.flat();
    const bySubject = new Map(all.map((d) => [d.subject, d.verdict]));
    expect([...bySubject.values()].filter((v) => v === "allow")).toHaveLength(5);
    expect(all.filter((d) => d.verdict === "refuse").every((d) => d.reason_code === "BudgetExceeded" && d.limit === "tenant.monthly_budget_usd")).toBe(true);
    const [spent, reserved] = await redis.hmget(keys.tenantMonth(tenant, "2026-03"), "spent", "reserved");
    expect([Number(spent), Number(reserved)]).toEqual([90_000, 0]);
  });

  it("LIM-8 the forecast keeps the same window as the pure logic, and concurrent asks give a tree's forecast to one request", async () => {
    const red = redisLimitsStore(redis, keys, { forecastWindow: 4, forecastTtlSeconds: 120 });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ tree: fc.nat(8), bucket: fc.integer({ min: -1, max: 19 }) }), { maxLength: 30 }), async (trees) => {
        const agentName = uid("agent");
        const f = newForecastState(4);
        for (const t of trees) expect(await red.recordFinished("acme", agentName, `t${t.tree}`, t.bucket)).toBe(recordTree(f, `t${t.tree}`, t.bucket));
        expect(await red.forecastStats("acme", agentName)).toEqual(statsOf(f));
      }),
      { numRuns: 40 },
    );
    const tree = uid("tree");
    expect(await red.forecastOnce("acme", tree, "r0", { chance: 0.9 })).toMatchObject({ given: false, spent: -1 });
    await red.init("acme", tree, settings({ budget: 1_000 }), true, null);
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => red.forecastOnce("acme", tree, `r${i}`, { chance: 0.9 })));
    expect(answers.filter((a) => a.given)).toHaveLength(1);
    const holder = answers.findIndex((a) => a.given);
    expect(await red.forecastOnce("acme", tree, `r${holder}`, null)).toEqual({ given: true, taken: false, chance: 0.9, spent: 0 });
  });
});

describe("LIM-10 monthly quotas per person and team in real Redis", () => {
  let redis: RedisClient;
  let keys: Keys;
  beforeAll(() => {
    // The pipeline's own connection settings (auto-pipelining): concurrent scripts stay atomic through it.
    redis = redisClient(endpoints(), PIPELINE_REDIS);
    keys = new Keys(uid("lim").replace(/-/g, "_"));
  });
  afterAll(() => redis?.disconnect());

  type QuotaOp = { op: "ask"; req: number; worst: number } | { op: "check"; req: number } | { op: "release"; req: number } | { op: "usage" | "rewarm"; req: number; cost: number };
  const quotaOpArb: fc.Arbitrary<{ o: QuotaOp; dt: number }> = fc.record({
    o: fc.oneof(
      fc.record({ op: fc.constant("ask" as const), req: fc.nat(10), worst: fc.nat(400) }),
      fc.record({ op: fc.constant("check" as const), req: fc.nat(10) }),
      fc.record({ op: fc.constant("release" as const), req: fc.nat(10) }),
      fc.record({ op: fc.constantFrom("usage" as const, "rewarm" as const), req: fc.nat(10), cost: fc.nat(400) }),
    ),
    dt: fc.nat(40),
  });
  const quotaArb = fc.oneof(fc.constant(-1), fc.integer({ min: 0, max: 1_500 }));

  it("LIM-10 the quota script answers exactly as the pure logic, with and without a team, for random asks, children's checks, releases, usages, replays and expiries", async () => {
    const hold = { holdMs: 100, keepMs: 300 };
    const red = redisLimitsStore(redis, keys, { tenantHoldMs: hold.holdMs, tenantKeepMs: hold.keepMs, tenantTtlSeconds: 120 });
    await fc.assert(
      fc.asyncProperty(quotaArb, quotaArb, fc.boolean(), fc.array(quotaOpArb, { minLength: 1, maxLength: 50 }), async (personQuota, teamQuota, hasTeam, ops) => {
        const who = { tenant: uid("tenant"), principal: "alice@acme.com", team: hasTeam ? "research" : "" };
        const [person, team] = [newQuotaMonth(), hasTeam ? newQuotaMonth() : null];
        let now = 1_000;
        for (const { o, dt } of ops) {
          now += dt;
          const req = `r${o.req}`;
          if (o.op === "ask") {
            const want = quotaAsk(person, team, { requestId: req, worst: o.worst, personQuota, teamQuota: hasTeam ? teamQuota : -1, now, ...hold });
            expect(await red.quotaAsk(who, "2026-03", { requestId: req, worst: o.worst, personQuota, teamQuota: hasTeam ? teamQuota : -1, now }), JSON.stringify(o)).toEqual(want);
          } else if (o.op === "check") {
            const want = quotaCheck(person, team, { requestId: req, personQuota, teamQuota: hasTeam ? teamQuota : -1, now, ...hold });
            expect(await red.quotaCheck(who, "2026-03", { requestId: req, personQuota, teamQuota: hasTeam ? teamQuota : -1, now }), JSON.stringify(o)).toEqual(want);
          } else if (o.op === "release") {
            await red.quotaRelease(who, "2026-03", req);
            quotaRelease(person, team, req);
          } else {
            const want = quotaSettle(person, team, { kind: o.op, requestId: req, cost: o.cost, now, ...hold });
            expect(await red.quotaSettle(who, "2026-03", { kind: o.op, requestId: req, cost: o.cost, now }), JSON.stringify(o)).toEqual(want);
          }
        }
        const read = async (key: string) => (await redis.hmget(key, "spent", "reserved")).map((v) => Number(v ?? 0));
        expect(await read(keys.quotaMonth(who.tenant, "person", who.principal, "2026-03"))).toEqual([person.spent, person.reserved]);
        if (team) expect(await read(keys.quotaMonth(who.tenant, "team", who.team, "2026-03"))).toEqual([team.spent, team.reserved]);
      }),
      { numRuns: 60 },
    );
  });

  it("LIM-10 concurrent asks of many trees of several people of one team, with replays, releases and usages, never spend past any quota", async () => {
    const red = redisLimitsStore(redis, keys, { tenantTtlSeconds: 120 });
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 2_000 }),
        fc.integer({ min: 0, max: 4_000 }),
        fc.array(fc.record({ person: fc.nat(3), worst: fc.integer({ min: 1, max: 600 }), actualShare: fc.double({ min: 0, max: 1, noNaN: true }), replays: fc.nat(2), treeRefuses: fc.boolean() }), { minLength: 1, maxLength: 40 }),
        async (personQuota, teamQuota, calls) => {
          const tenant = uid("tenant");
          const month = "2026-03";
          const callers = calls.map(async (c, i) => {
            const who = { tenant, principal: `p${c.person}`, team: "research" };
            const ask = { requestId: `r${i}`, worst: c.worst, personQuota, teamQuota, now: 1_000 };
            const answers = await Promise.all(Array.from({ length: 1 + c.replays }, () => red.quotaAsk(who, month, ask)));
            expect(new Set(answers.map((a) => a.code)).size).toBe(1);
            if (answers[0]?.code !== "allow") return { person: c.person, cost: 0 };
            if (c.treeRefuses) {
              await Promise.all(Array.from({ length: 1 + c.replays }, () => red.quotaRelease(who, month, ask.requestId)));
              return { person: c.person, cost: 0 };
            }
            const cost = Math.floor(c.worst * c.actualShare);
            await Promise.all(Array.from({ length: 1 + c.replays }, () => red.quotaSettle(who, month, { kind: "usage", requestId: ask.requestId, cost, now: 1_000 })));
            return { person: c.person, cost };
          });
          const results = await Promise.all(callers);
          const read = async (key: string) => (await redis.hmget(key, "spent", "reserved")).map((v) => Number(v ?? 0));
          for (const p of new Set(results.map((r) => r.person))) {
            const spent = results.filter((r) => r.person === p).reduce((s, r) => s + r.cost, 0);
            expect(await read(keys.quotaMonth(tenant, "person", `p${p}`, month))).toEqual([spent, 0]);
            expect(spent).toBeLessThanOrEqual(personQuota);
          }
          const teamSpent = results.reduce((s, r) => s + r.cost, 0);
          expect(await read(keys.quotaMonth(tenant, "team", "research", month))).toEqual([teamSpent, 0]);
          expect(teamSpent).toBeLessThanOrEqual(teamQuota);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("LIM-10 trees of one person started at once, asking at once through both processors, never spend past the person's quota; past it the job waits", async () => {
    const tenant = uid("tenant");
    const config = staticConfig([
      { kind: "tenant", id: tenant, value: { id: tenant, limits: { tree: {} }, loops: {}, spend: {}, offload: {}, quotas: { person: 1, per_person: { alice: 0.1 } } } },
      { kind: "agent", id: "boss", value: { name: "boss", tools: [], limits: { tree: {}, max_cost_usd: 1 }, delegation: { allow: [] }, loops: {}, spend: {} } },
    ]);
    const env = limitsEnv({ redis, config, keys });
    const ts = Date.UTC(2026, 2, 15);
    const trees = Array.from({ length: 8 }, () => uid("tree"));
    const jobs = new TestDriver(limitsJobsProcessor, env);
    await jobs.pipe(trees.map((tree): JobEvent => ({ id: uid("evt"), tenant, tree_id: tree, job_id: tree, parent_job_id: null, run_id: "run", agent: "boss", kind: "started", started_by: "person", delegation: "none", depth: 0, outcome: null, principal: "alice", team: "research", permissions: [], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts })));
    expect(await redis.hmget(keys.limits(tenant, trees[0] ?? ""), "s:principal", "s:team")).toEqual(["alice", "research"]);
    const call = (tree: string): ModelCall => ({ id: uid("evt"), tenant, tree_id: tree, job_id: tree, run_id: "run", request_id: uid("req"), kind: "ask", model: "claude-sonnet-4", input_tokens: 1_000, max_output_tokens: 1_000, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, agent: "boss", ts });
    // 8 trees x 3 calls at $0.018 worst and $0.018 spent: alice's $0.10 admits 5 in all.
    const decided = await Promise.all(
      trees.map(async (tree) => {
        const driver = new TestDriver(limitsModelCallsProcessor, env);
        for (let i = 0; i < 3; i++) {
          const ask = call(tree);
          await Promise.all([driver.pipe(ask, { key: tree }), driver.pipe(ask, { key: tree })]);
          const d = driver.read<Decision>("oz0.admissions").at(-1);
          if (d?.verdict === "allow") await driver.pipe({ ...ask, id: uid("evt"), kind: "usage", output_tokens: 1_000 }, { key: tree });
        }
        return driver.read<Decision>("oz0.admissions").filter((d) => d.processor === "limits-model-calls" && d.verdict !== "report");
      }),
    );
    const all = decided.flat();
    const bySubject = new Map(all.map((d) => [d.subject, d.verdict]));
    expect([...bySubject.values()].filter((v) => v === "allow")).toHaveLength(5);
    const waits = all.filter((d) => d.verdict !== "allow");
    expect(waits.length).toBeGreaterThan(0);
    expect(waits.every((d) => d.verdict === "wait" && d.reason_code === "quota_exceeded" && d.limit === "quotas.per_person.alice")).toBe(true);
    const read = async (key: string) => (await redis.hmget(key, "spent", "reserved")).map(Number);
    expect(await read(keys.quotaMonth(tenant, "person", "alice", "2026-03"))).toEqual([90_000, 0]);
    expect(await read(keys.quotaMonth(tenant, "team", "research", "2026-03"))).toEqual([90_000, 0]);
  });
});
