import { describe, expect, it } from "vitest";
import type { AgentDefinition } from "../../../config/agent.ts";
import type { TenantSettings } from "../../../config/tenant.ts";
import { limitsJobsProcessor } from "../../../processors/limits/jobs-processor.ts";
import { limitsTreeKey, memoryLimitsStore } from "../../../processors/limits/memory-store.ts";
import { limitsModelCallsProcessor } from "../../../processors/limits/model-calls-processor.ts";
import { DEFAULT_PRICES } from "../../../processors/limits/prices.ts";
import type { LimitsEnv } from "../../../processors/limits/env.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { Decision, JobEvent, ModelCall } from "../../../schemas/types.ts";
import { uid } from "../../support/events.ts";

function agent(name: string, over: Partial<AgentDefinition> = {}): AgentDefinition {
  return { name, tools: [], limits: { tree: {} }, delegation: { allow: [] }, loops: {}, spend: {}, ...over };
}

const tenant: TenantSettings = { id: "acme", limits: { tree: { fan_out: 5 } }, loops: {}, spend: {}, offload: {} };

function setup(agents: AgentDefinition[]) {
  const config = staticConfig([{ kind: "tenant", id: "acme", value: tenant }, ...agents.map((a) => ({ kind: "agent" as const, id: a.name, value: a }))]);
  const env: LimitsEnv = { store: memoryLimitsStore(), config, prices: DEFAULT_PRICES };
  return { env, calls: new TestDriver(limitsModelCallsProcessor, env), jobs: new TestDriver(limitsJobsProcessor, env) };
}

function job(tree: string, over: Partial<JobEvent>): JobEvent {
  return { id: uid("evt"), tenant: "acme", tree_id: tree, job_id: tree, parent_job_id: null, run_id: "run-root", agent: "boss", kind: "started", started_by: "app", delegation: "none", depth: 0, outcome: null, principal: null, team: null, permissions: [], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts: 1_000, ...over };
}

function call(tree: string, over: Partial<ModelCall>): ModelCall {
  return { id: uid("evt"), tenant: "acme", tree_id: tree, job_id: tree, run_id: "run-root", request_id: uid("req"), kind: "ask", model: "claude-sonnet-4", input_tokens: 1_000, max_output_tokens: 1_000, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, agent: "boss", ts: 1_000, ...over };
}

const last = (d: TestDriver<never, LimitsEnv> | TestDriver<ModelCall, LimitsEnv> | TestDriver<JobEvent, LimitsEnv>): Decision | undefined => d.read<Decision>("oz0.admissions").at(-1);

describe("limits processors (in memory)", () => {
  it("LIM-7 asks are admitted with their worst case reserved until the budget; the last call goes through, the next is stopped", async () => {
    // sonnet: 1,000 in + 1,000 out worst case = $0.018 a call.
    const { calls, jobs } = setup([agent("boss", { limits: { tree: {}, max_cost_usd: 0.05 } })]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    for (let i = 0; i < 4; i++) await calls.pipe(call(tree, {}), { key: tree });
    const verdicts = calls.read<Decision>("oz0.admissions").map((d) => [d.verdict, d.limit]);
    expect(verdicts).toEqual([["allow", null], ["allow", null], ["allow", "limits.reserve"], ["stop", "limits.max_cost_usd"]]);
    expect(last(calls)?.reason_code).toBe("BudgetExceeded");
    expect(last(calls)?.message).toMatch(/max_cost_usd/);
  });

  it("LIM-7 on_budget waits for a person when a person started the tree", async () => {
    const { calls, jobs } = setup([agent("boss", { limits: { tree: {}, max_cost_usd: 0.01, reserve: "strict" } })]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, { started_by: "person" }), { key: tree });
    await calls.pipe(call(tree, {}), { key: tree });
    expect(last(calls)).toMatchObject({ verdict: "wait", reason_code: "BudgetExceeded" });
  });

  it("LIM-2 a call past the tree's model calls is refused with 402 oz0_tree_limit", async () => {
    const { calls, jobs } = setup([agent("boss", { limits: { tree: { model_calls: 1 } } })]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    await calls.pipe([call(tree, {}), call(tree, {})], { key: tree });
    expect(last(calls)).toMatchObject({ verdict: "refuse", reason_code: "oz0_tree_limit", limit: "limits.tree.model_calls" });
    expect(last(calls)?.message).toMatch(/402 oz0_tree_limit.*TreeLimitExceeded/);
  });

  it("LIM-1 the run's max_steps stops the job with UsageLimitExceeded", async () => {
    const { calls } = setup([agent("boss", { limits: { tree: {}, max_steps: 1 } })]);
    const tree = uid("tree");
    await calls.pipe([call(tree, {}), call(tree, {})], { key: tree });
    expect(last(calls)).toMatchObject({ verdict: "stop", reason_code: "UsageLimitExceeded", limit: "limits.max_steps" });
  });

  it("LIM-1 a job past its limits.timeout, counted from its start, stops with AgentTimeout; a child's counts from its own start", async () => {
    const { calls, jobs } = setup([agent("boss", { limits: { tree: {}, timeout: 600_000 } }), agent("worker", { limits: { tree: {}, timeout: 90_000 } })]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, { ts: 1_000 }), { key: tree });
    await calls.pipe([call(tree, { ts: 601_000 }), call(tree, { ts: 601_001 })], { key: tree });
    const [inTime, late] = calls.read<Decision>("oz0.admissions");
    expect(inTime).toMatchObject({ verdict: "allow" });
    expect(late).toMatchObject({ verdict: "stop", reason_code: "AgentTimeout", limit: "limits.timeout" });
    expect(late?.numbers).toMatchObject({ timeout_ms: 600_000, elapsed_ms: 600_001 });
    expect(late?.message).toMatch(/ran past its 10m \(limits.timeout\).*AgentTimeout.*Raise limits.timeout/);
    // A child started at 500,000 has 90 s of its own; the root's clock does not count for it.
    const kid = `${tree}-kid`;
    await jobs.pipe(job(tree, { job_id: kid, parent_job_id: tree, agent: "worker", depth: 1, run_id: "run-kid", ts: 500_000 }), { key: tree });
    await calls.pipe([call(tree, { job_id: kid, run_id: "run-kid", agent: "worker", ts: 590_000 }), call(tree, { job_id: kid, run_id: "run-kid", agent: "worker", ts: 590_001 })], { key: tree });
    expect(calls.read<Decision>("oz0.admissions").slice(2).map((d) => [d.verdict, d.reason_code])).toEqual([
      ["allow", null],
      ["stop", "AgentTimeout"],
    ]);
  });

  it("LIM-1 LIM-5 a job past its timeout starts no child: refused at the ask, stopped at an unasked start, with AgentTimeout", async () => {
    const { jobs } = setup([agent("boss", { limits: { tree: {}, timeout: 60_000 } }), agent("worker")]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, { ts: 1_000 }), { key: tree });
    const kid = (n: number, over: Partial<JobEvent>) => job(tree, { job_id: `${tree}-kid-${n}`, parent_job_id: tree, agent: "worker", depth: 1, run_id: `run-kid-${n}`, ...over });
    await jobs.pipe([kid(1, { kind: "child_ask", ts: 61_000 }), kid(2, { kind: "child_ask", ts: 61_001 }), kid(3, { kind: "started", ts: 61_001 })], { key: tree });
    expect(jobs.read<Decision>("oz0.admissions").map((d) => [d.subject, d.verdict, d.reason_code, d.limit])).toEqual([
      [`${tree}-kid-1`, "allow", null, null],
      [`${tree}-kid-2`, "refuse", "AgentTimeout", "limits.timeout"],
      [`${tree}-kid-3`, "stop", "AgentTimeout", "limits.timeout"],
    ]);
  });

  it("LIM-1 run --timeout on a job's start adds on top of its agent's limits.timeout: whichever ends first stops it, and the decision names which", async () => {
    const { calls, jobs } = setup([agent("boss", { limits: { tree: {}, timeout: 600_000 } }), agent("worker")]);
    const [short, long] = [uid("tree"), uid("tree")];
    await jobs.pipe(job(short, { ts: 1_000, timeout_ms: 60_000 }), { key: short });
    await jobs.pipe(job(long, { ts: 1_000, timeout_ms: 3_600_000 }), { key: long });
    await calls.pipe([call(short, { ts: 61_000 }), call(short, { ts: 61_001 })], { key: short });
    await calls.pipe([call(long, { ts: 601_000 }), call(long, { ts: 601_001 })], { key: long });
    const d = calls.read<Decision>("oz0.admissions");
    expect(d.map((x) => [x.tree_id, x.verdict, x.limit])).toEqual([
      [short, "allow", null],
      [short, "stop", "run --timeout"],
      [long, "allow", null],
      [long, "stop", "limits.timeout"],
    ]);
    expect(d[1]?.numbers).toMatchObject({ timeout_ms: 60_000, elapsed_ms: 60_001 });
    expect(d[1]?.message).toMatch(/ran past its 1m \(run --timeout\).*AgentTimeout.*start it again with a longer one/);
    // A child's own --timeout counts from its start, and its agent sets none.
    const kid = `${short}-kid`;
    await jobs.pipe(job(short, { job_id: kid, parent_job_id: short, agent: "worker", depth: 1, run_id: "run-kid", ts: 30_000, timeout_ms: 10_000 }), { key: short });
    await calls.pipe([call(short, { job_id: kid, run_id: "run-kid", agent: "worker", ts: 40_000 }), call(short, { job_id: kid, run_id: "run-kid", agent: "worker", ts: 40_001 })], { key: short });
    expect(calls.read<Decision>("oz0.admissions").slice(4).map((x) => [x.verdict, x.limit])).toEqual([
      ["allow", null],
      ["stop", "run --timeout"],
    ]);
  });

  it("LIM-1 a job past its run --timeout starts no child, and the refusal names run --timeout", async () => {
    const { jobs } = setup([agent("boss"), agent("worker")]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, { ts: 1_000, timeout_ms: 5_000 }), { key: tree });
    await jobs.pipe(job(tree, { kind: "child_ask", job_id: `${tree}-kid`, parent_job_id: tree, agent: "worker", depth: 1, ts: 6_001 }), { key: tree });
    expect(last(jobs)).toMatchObject({ verdict: "refuse", reason_code: "AgentTimeout", limit: "run --timeout" });
    expect(last(jobs)?.message).toMatch(/ran past its run --timeout/);
  });

  it("LIM-1 a job its start marks as a session times out after 2h when its agent sets no limits.timeout; the agent's own timeout wins; other jobs have none", async () => {
    const { calls, jobs } = setup([agent("boss"), agent("timed", { limits: { tree: {}, timeout: 10_800_000 } })]);
    const [session, timedSession, plain] = [uid("tree"), uid("tree"), uid("tree")];
    await jobs.pipe(job(session, { ts: 0, session: true }), { key: session });
    await jobs.pipe(job(timedSession, { ts: 0, session: true, agent: "timed" }), { key: timedSession });
    await jobs.pipe(job(plain, { ts: 0 }), { key: plain });
    const twoHours = 7_200_000;
    await calls.pipe([call(session, { ts: twoHours }), call(session, { ts: twoHours + 1 })], { key: session });
    await calls.pipe(call(timedSession, { ts: twoHours + 1, agent: "timed" }), { key: timedSession });
    await calls.pipe(call(plain, { ts: 10 * twoHours }), { key: plain });
    const d = calls.read<Decision>("oz0.admissions");
    expect(d.map((x) => [x.tree_id, x.verdict, x.reason_code])).toEqual([
      [session, "allow", null],
      [session, "stop", "AgentTimeout"],
      [timedSession, "allow", null],
      [plain, "allow", null],
    ]);
    expect(d[1]?.message).toMatch(/ran past its 2h \(limits.timeout\)/);
  });

  it("LIM-1 run --budget on a root's start is its tree's budget instead of the root agent's max_cost_usd; a replayed start changes nothing", async () => {
    // sonnet: $0.018 worst case a call.
    const { calls, jobs, env } = setup([agent("boss", { limits: { tree: {}, max_cost_usd: 1, reserve: "strict" } })]);
    const [small, plain] = [uid("tree"), uid("tree")];
    const start = job(small, { budget_usd: 0.03 });
    await jobs.pipe([start, start], { key: small });
    await jobs.pipe(job(plain, {}), { key: plain });
    expect((await env.store.read("acme", small, small)).settings?.budget).toBe(30_000);
    expect((await env.store.read("acme", plain, plain)).settings?.budget).toBe(1_000_000);
    await calls.pipe([call(small, {}), call(small, {})], { key: small });
    expect(calls.read<Decision>("oz0.admissions").map((x) => [x.verdict, x.reason_code])).toEqual([
      ["allow", null],
      ["stop", "BudgetExceeded"],
    ]);
    expect(last(calls)?.message).toMatch(/budget of \$0\.03/);
  });

  it("LIM-1 a job whose start was not seen, or with no timeout, is not timed out", async () => {
    const { calls } = setup([agent("boss", { limits: { tree: {}, timeout: 1_000 } })]);
    const tree = uid("tree");
    await calls.pipe(call(tree, { ts: 10 ** 9 }), { key: tree });
    expect(last(calls)).toMatchObject({ verdict: "allow" });
  });

  it("LIM-7 an ask replayed answers the same decision with the same ID and reserves nothing more", async () => {
    const { env, calls } = setup([agent("boss", { limits: { tree: {}, max_cost_usd: 1 } })]);
    const tree = uid("tree");
    const ask = call(tree, {});
    await calls.pipe(ask, { key: tree });
    await calls.pipe(ask, { key: tree });
    const [a, b] = calls.read<Decision>("oz0.admissions");
    expect(b).toEqual(a);
    expect((env.store as ReturnType<typeof memoryLimitsStore>).trees.get(limitsTreeKey("acme", tree))?.reserved).toBe(18_000);
  });

  it("LIM-8 crossing the warning share and the soft wall is reported once each", async () => {
    const { calls, jobs } = setup([agent("boss", { limits: { tree: {}, max_cost_usd: 0.1 } })]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    // Each usage costs 1,000 in + 1,000 out = $0.018: 0.072 (72%), 0.09 (90%).
    for (let i = 0; i < 5; i++) {
      const ask = call(tree, { max_output_tokens: 100 });
      await calls.pipe([ask, { ...ask, id: uid("evt"), kind: "usage", output_tokens: 1_000 }], { key: tree });
    }
    const reports = calls.read<Decision>("oz0.admissions").filter((d) => d.verdict === "report");
    expect(reports.map((d) => d.limit)).toEqual(["spend.warn_share", "spend.soft_wall"]);
  });

  it("LIM-9 a re-warm adds no model call but spends", async () => {
    const { env, calls, jobs } = setup([agent("boss", { limits: { tree: { model_calls: 1 }, max_cost_usd: 1 } })]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    await calls.pipe(call(tree, { kind: "rewarm", cache_write_tokens: 10_000, input_tokens: 0 }), { key: tree });
    await calls.pipe(call(tree, {}), { key: tree });
    expect(last(calls)?.verdict).toBe("allow");
    expect((env.store as ReturnType<typeof memoryLimitsStore>).trees.get(limitsTreeKey("acme", tree))?.spent).toBe(37_500);
  });

  it("LIM-3 a child past fan_out is refused and the parent's model reads which limit and how to raise it", async () => {
    const { jobs } = setup([agent("boss"), agent("worker")]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    for (let i = 0; i < 6; i++) await jobs.pipe(job(tree, { kind: "child_ask", job_id: uid("child"), parent_job_id: tree, agent: "worker", depth: 1 }), { key: tree });
    const d = last(jobs);
    expect(d).toMatchObject({ verdict: "refuse", reason_code: "TreeLimitExceeded", limit: "limits.tree.fan_out", job_id: tree });
    expect(d?.message).toMatch(/--tree-fan-out/);
  });

  it("LIM-5 a child never asked about is stopped at its start when past the tree's limits", async () => {
    const { jobs } = setup([agent("boss", { limits: { tree: { depth: 1 } } })]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    await jobs.pipe(job(tree, { kind: "started", job_id: uid("child"), parent_job_id: tree, agent: "worker", depth: 2 }), { key: tree });
    expect(last(jobs)).toMatchObject({ verdict: "stop", reason_code: "TreeLimitExceeded", limit: "limits.tree.depth" });
  });

  it("LIM-6 the parent's delegation.max_children holds delegations and flow tools per run, not reviewers", async () => {
    const { jobs } = setup([agent("boss", { delegation: { allow: ["worker"], max_children: 1 } })]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    const childAsk = (delegation: JobEvent["delegation"]) => job(tree, { kind: "child_ask", job_id: uid("child"), parent_job_id: tree, agent: "worker", depth: 1, delegation });
    await jobs.pipe([childAsk("delegation"), childAsk("reviewer"), childAsk("flow_tool")], { key: tree });
    expect(jobs.read<Decision>("oz0.admissions").map((d) => d.limit)).toEqual([null, null, "delegation.max_children"]);
  });

  it("LIM-3 a job whose waits for people add up past the tree's wait fails with TreeLimitExceeded", async () => {
    const { jobs } = setup([agent("boss", { limits: { tree: { wait: 60_000 } } })]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    await jobs.pipe([job(tree, { kind: "wait_started", ts: 0 }), job(tree, { kind: "wait_ended", ts: 30_000 })], { key: tree });
    expect(jobs.read("oz0.admissions")).toEqual([]);
    await jobs.pipe([job(tree, { kind: "wait_started", ts: 40_000 }), job(tree, { kind: "wait_ended", ts: 80_000 })], { key: tree });
    expect(last(jobs)).toMatchObject({ verdict: "stop", reason_code: "TreeLimitExceeded", limit: "limits.tree.wait", job_id: tree });
  });

  it("LIM-11 an outcome that cannot be known waits for a person when a person started the tree, else fails", async () => {
    for (const [startedBy, verdict] of [["person", "wait"], ["app", "stop"]] as const) {
      const { jobs } = setup([agent("boss")]);
      const tree = uid("tree");
      await jobs.pipe(job(tree, { started_by: startedBy }), { key: tree });
      await jobs.pipe(job(tree, { kind: "ended", outcome: "unknown" }), { key: tree });
      expect(last(jobs)).toMatchObject({ verdict, reason_code: "unknown_outcome" });
    }
  });

  it("LIM-4 a tree's first model call before its root's start holds the tree to the caller's limits until the start arrives", async () => {
    const { env, calls, jobs } = setup([agent("boss", { limits: { tree: { fan_out: 9 } } })]);
    const tree = uid("tree");
    await calls.pipe(call(tree, {}), { key: tree });
    const store = env.store as ReturnType<typeof memoryLimitsStore>;
    expect(store.trees.get(limitsTreeKey("acme", tree))?.settings.fanOut).toBe(9);
    await jobs.pipe(job(tree, { started_by: "person" }), { key: tree });
    expect(store.trees.get(limitsTreeKey("acme", tree))?.settings.startedByPerson).toBe(true);
    expect(store.trees.get(limitsTreeKey("acme", tree))?.modelCalls).toBe(1);
  });

  it("LIM-7 an event with negative tokens goes to the dead letters with the reason", async () => {
    const { calls } = setup([agent("boss")]);
    await calls.pipe(call(uid("tree"), { input_tokens: -1 }));
    expect(calls.deadLetters[0]?.reason).toMatch(/input_tokens is -1/);
  });
});
