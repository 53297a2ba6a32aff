import { describe, expect, it } from "vitest";
import type { AgentDefinition } from "../../../config/agent.ts";
import type { TenantSettings } from "../../../config/tenant.ts";
import type { LimitsEnv } from "../../../processors/limits/env.ts";
import { limitsJobsProcessor } from "../../../processors/limits/jobs-processor.ts";
import { memoryLimitsStore, memoryStandingStore } from "../../../processors/limits/memory-store.ts";
import { limitsModelCallsProcessor } from "../../../processors/limits/model-calls-processor.ts";
import { DEFAULT_PRICES } from "../../../processors/limits/prices.ts";
import { endingFor, endingsOf, NO_STANDING, standingOf, type Ending } from "../../../processors/limits/standing.ts";
import { standingFields } from "../../../processors/limits/store.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import type { Emit } from "../../../processors/runner/processor.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { Decision, JobEvent, ModelCall } from "../../../schemas/types.ts";
import { uid } from "../../support/events.ts";

function agent(name: string, over: Partial<AgentDefinition> = {}): AgentDefinition {
  return { name, tools: [], limits: { tree: {} }, delegation: { allow: [] }, loops: {}, spend: {}, ...over };
}

const tenant: TenantSettings = { id: "acme", limits: { tree: { fan_out: 5 } }, loops: {}, spend: {}, offload: {} };

function setup(agents: AgentDefinition[]) {
  const config = staticConfig([{ kind: "tenant", id: "acme", value: tenant }, ...agents.map((a) => ({ kind: "agent" as const, id: a.name, value: a }))]);
  const standing = memoryStandingStore();
  const env: LimitsEnv = { store: memoryLimitsStore(), config, prices: DEFAULT_PRICES, standing };
  return { env, standing, calls: new TestDriver(limitsModelCallsProcessor, env), jobs: new TestDriver(limitsJobsProcessor, env) };
}

function job(tree: string, over: Partial<JobEvent>): JobEvent {
  return { id: uid("evt"), tenant: "acme", tree_id: tree, job_id: tree, parent_job_id: null, run_id: "run-root", agent: "boss", kind: "started", started_by: "app", delegation: "none", depth: 0, outcome: null, principal: null, team: null, permissions: [], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts: 1_000, ...over };
}

function ask(tree: string, over: Partial<ModelCall> = {}): ModelCall {
  return { id: uid("evt"), tenant: "acme", tree_id: tree, job_id: tree, run_id: "run-root", request_id: uid("req"), kind: "ask", model: "claude-sonnet-4", input_tokens: 1_000, max_output_tokens: 1_000, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, agent: "boss", ts: 1_000, ...over };
}

/** The hash's fields of `standingFields` for one job, by name. */
function fields(jobId: string, set: Record<string, string>): Array<string | null> {
  return standingFields(jobId).map((f) => set[f.replace(`job:${jobId}:`, "job:")] ?? null);
}

const noAgent = () => undefined;
const ending = (over: Partial<Ending> = {}): Ending => ({ code: "UsageLimitExceeded", limit: "limits.max_steps", message: "The run made its 1 model calls.", by: "evt-1", ...over });

function admission(over: Partial<Decision>): Emit {
  const d: Decision = { id: uid("d"), input_id: "evt-9", processor: "limits-jobs", tenant: "acme", tree_id: "t", job_id: "t", run_id: null, subject: "t", verdict: "stop", reason_code: "X", limit: null, numbers: {}, message: "m", evidence: null, ts: 1, ...over };
  return { to: "oz0.admissions", key: "t", value: d };
}

describe("a job's standing (endings bind)", () => {
  it("LIM-1 a kept ending is what the job's later inputs meet; the input that ended it is decided as the first time (replay)", () => {
    const s = standingOf(fields("j", { "job:end": JSON.stringify(ending()) }), 5_000, noAgent, "");
    expect(s.ending).toMatchObject({ code: "UsageLimitExceeded", limit: "limits.max_steps" });
    expect(endingFor(s, "evt-2")?.code).toBe("UsageLimitExceeded");
    expect(endingFor(s, "evt-1")).toBeNull();
    expect(endingFor(NO_STANDING, "evt-2")).toBeNull();
  });

  it("LIM-1 a job whose runtime reported its end is ended (JobEnded)", () => {
    expect(standingOf(fields("j", { "job:ended": "1" }), 5_000, noAgent, "").ending?.code).toBe("JobEnded");
  });

  it("LIM-1 limits.timeout and run --timeout are checked against each input's time, from the job's start", () => {
    const agents = (name: string) => (name === "boss" ? agent("boss", { limits: { tree: {}, timeout: 60_000 } }) : undefined);
    const started = { "job:agent": "boss", "job:at": "1000", "job:tmo": "-1", "job:sess": "0" };
    expect(standingOf(fields("j", started), 61_000, agents, "").ending).toBeNull();
    expect(standingOf(fields("j", started), 61_001, agents, "").ending).toMatchObject({ code: "AgentTimeout", limit: "limits.timeout" });
    // Its own --timeout, shorter, ends it first and is named.
    expect(standingOf(fields("j", { ...started, "job:tmo": "5000" }), 6_001, agents, "").ending).toMatchObject({ code: "AgentTimeout", limit: "run --timeout" });
    // A session whose agent sets none times out after 2h.
    expect(standingOf(fields("j", { "job:at": "0", "job:tmo": "-1", "job:sess": "1" }), 2 * 3600_000 + 1, noAgent, "").ending?.code).toBe("AgentTimeout");
    // Left to the tree's scripts where they check it.
    expect(standingOf(fields("j", started), 61_001, agents, "", { timeout: false }).ending).toBeNull();
  });

  it("LIM-8 a tree past its soft wall leaves only the answer; below it, nothing", () => {
    const tree = { "s:budget": "1000000", "s:wall": "850000" };
    expect(standingOf(fields("j", { ...tree, spent: "849999" }), 1, noAgent, "").finishOnly).toBeNull();
    expect(standingOf(fields("j", { ...tree, spent: "850000" }), 1, noAgent, "").finishOnly).toMatch(/spend.soft_wall.*only the answer is left/);
    expect(standingOf(fields("j", { "s:budget": "-1", "s:wall": "850000", spent: "9999999" }), 1, noAgent, "").finishOnly).toBeNull();
  });

  it("LIM-3 TOOL-2 FILE-5 which decisions end which job: a stop its job, a child's refusal the child, a tree limit its job; not a wait, a report, a fan_out ask", () => {
    const jobs = (emits: Emit[], child = true) => endingsOf(emits, child).map((e) => [e.job, e.ending.code, e.ending.by]);
    expect(jobs([admission({ verdict: "stop", reason_code: "UsageLimitExceeded" })])).toEqual([["t", "UsageLimitExceeded", "evt-9"]]);
    expect(jobs([admission({ job_id: "parent", subject: "kid", verdict: "refuse", reason_code: "DelegationNotAllowed" })])).toEqual([["kid", "DelegationNotAllowed", "evt-9"]]);
    expect(jobs([admission({ verdict: "refuse", reason_code: "oz0_tree_limit" })], false)).toEqual([["t", "oz0_tree_limit", "evt-9"]]);
    expect(jobs([admission({ verdict: "refuse", reason_code: "tree_holds_files" })], false)).toEqual([["t", "tree_holds_files", "evt-9"]]);
    expect(jobs([admission({ verdict: "wait" }), admission({ verdict: "report" }), admission({ verdict: "refuse", reason_code: "BudgetExceeded", limit: "tenant.monthly_budget_usd" })], false)).toEqual([]);
    expect(jobs([admission({ job_id: "parent", subject: "kid", verdict: "refuse", reason_code: "TreeLimitExceeded", limit: "limits.tree.fan_out" })])).toEqual([]);
  });
});

describe("endings bind in the limits processors (in memory)", () => {
  it("LIM-1 after UsageLimitExceeded every later ask of the job and every child it asks for is refused with the ending; its replay is unchanged", async () => {
    const { calls, jobs, standing } = setup([agent("boss", { limits: { tree: {}, max_steps: 1 } }), agent("worker")]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    const stopping = ask(tree);
    // Each ask its own batch: a batch's asks are read before it, so an ending binds from the next batch.
    for (const a of [ask(tree), stopping, ask(tree)]) await calls.pipe(a, { key: tree });
    const [, stopped, later] = calls.read<Decision>("oz0.admissions");
    expect(stopped).toMatchObject({ verdict: "stop", reason_code: "UsageLimitExceeded" });
    // The tree's own state holds the run stopped, in order, whatever the batches.
    expect(later).toMatchObject({ verdict: "stop", reason_code: "UsageLimitExceeded", limit: "limits.max_steps" });
    expect([...(standing.hashes.values().next().value?.keys() ?? [])]).toContain(`job:${tree}:end`);
    // The input that ended the job, handled again, is decided as before (same ID, same words).
    await calls.pipe(stopping, { key: tree });
    expect(calls.read<Decision>("oz0.admissions").at(-1)).toEqual(stopped);
    await jobs.pipe(job(tree, { kind: "child_ask", job_id: `${tree}-kid`, parent_job_id: tree, agent: "worker", depth: 1 }), { key: tree });
    expect(jobs.read<Decision>("oz0.admissions").at(-1)).toMatchObject({ verdict: "refuse", reason_code: "UsageLimitExceeded", subject: `${tree}-kid` });
    expect(jobs.read<Decision>("oz0.admissions").at(-1)?.message).toMatch(/The child job is not started: the job that asks for it.*has ended/);
  });

  it("LIM-2 after 402 oz0_tree_limit the job's next ask is refused too, in a later batch as in the same one", async () => {
    const { calls, jobs } = setup([agent("boss", { limits: { tree: { model_calls: 1 } } })]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    await calls.pipe([ask(tree), ask(tree)], { key: tree });
    await calls.pipe(ask(tree), { key: tree });
    expect(calls.read<Decision>("oz0.admissions").map((d) => [d.verdict, d.reason_code])).toEqual([
      ["allow", null],
      ["refuse", "oz0_tree_limit"],
      ["refuse", "oz0_tree_limit"],
    ]);
  });

  it("LOOP-6 FILE-5 an ending another processor kept (a loop that stopped the job) refuses the job's model asks with its words, and reserves nothing", async () => {
    const { calls, jobs, standing } = setup([agent("boss")]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    await standing.record([{ tenant: "acme", tree, job: tree, ending: { code: "LoopDetected", limit: "loops.repeats", message: "The same call three times.", by: "evt-loop", processor: "loop-calls" } }]);
    await calls.pipe(ask(tree), { key: tree });
    const refused = calls.read<Decision>("oz0.admissions").at(-1);
    expect(refused).toMatchObject({ verdict: "stop", reason_code: "LoopDetected", limit: "loops.repeats" });
    expect(refused?.message).toBe(`Job ${tree} has ended (LoopDetected): nothing more runs in it. The same call three times.`);
    expect(refused?.numbers.reserved_usd).toBeUndefined();
  });

  it("LIM-3 LIM-5 a child refused at its ask is stopped at its start, with the ask's reason", async () => {
    const { jobs } = setup([agent("boss", { limits: { tree: { depth: 1 } } }), agent("worker")]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    const kid = { job_id: `${tree}-kid`, parent_job_id: tree, agent: "worker", depth: 2 };
    await jobs.pipe([job(tree, { ...kid, kind: "child_ask" }), job(tree, { ...kid, kind: "started", depth: 1 })], { key: tree });
    const [refused, stopped] = jobs.read<Decision>("oz0.admissions");
    expect(refused).toMatchObject({ verdict: "refuse", reason_code: "TreeLimitExceeded", limit: "limits.tree.depth" });
    // At depth 1 the start alone would pass; the ask's refusal binds it.
    expect(stopped).toMatchObject({ verdict: "stop", reason_code: "TreeLimitExceeded", limit: "limits.tree.depth", subject: `${tree}-kid` });
  });

  it("TOOL-2 a delegation to an agent outside delegation.allow is refused at the ask and stopped at the start; an allowed one and a flow step go ahead", async () => {
    const { jobs } = setup([agent("boss", { delegation: { allow: ["worker"], max_depth: 3 } }), agent("worker"), agent("stranger")]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    const kid = (n: string, over: Partial<JobEvent>) => job(tree, { job_id: `${tree}-${n}`, parent_job_id: tree, depth: 1, delegation: "delegation", run_id: `run-${n}`, ...over });
    await jobs.pipe(
      [
        kid("a", { kind: "child_ask", agent: "stranger" }),
        kid("b", { kind: "started", agent: "stranger" }),
        kid("c", { kind: "child_ask", agent: "worker" }),
        kid("d", { kind: "child_ask", agent: "stranger", delegation: "flow_step" }),
      ],
      { key: tree },
    );
    const d = jobs.read<Decision>("oz0.admissions");
    expect(d.map((x) => [x.subject, x.verdict, x.reason_code, x.limit])).toEqual([
      [`${tree}-a`, "refuse", "DelegationNotAllowed", "delegation.allow"],
      [`${tree}-b`, "stop", "DelegationNotAllowed", "delegation.allow"],
      [`${tree}-c`, "allow", null, null],
      [`${tree}-d`, "allow", null, null],
    ]);
    expect(d[0]?.message).toMatch(/agent boss may delegate only to worker \(delegation.allow\), and stranger is not among them/);
    // The refused child's own start is stopped too.
    await jobs.pipe(kid("a", { kind: "started", agent: "stranger" }), { key: tree });
    expect(jobs.read<Decision>("oz0.admissions").at(-1)).toMatchObject({ subject: `${tree}-a`, verdict: "stop", reason_code: "DelegationNotAllowed" });
  });

  it("TOOL-2 a parent whose agent has no definition is not held to a delegation list", async () => {
    const { jobs } = setup([]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, { agent: "nobody" }), { key: tree });
    await jobs.pipe(job(tree, { kind: "child_ask", job_id: `${tree}-kid`, parent_job_id: tree, agent: "anyone", depth: 1, delegation: "delegation" }), { key: tree });
    expect(jobs.read<Decision>("oz0.admissions").at(-1)).toMatchObject({ verdict: "allow" });
  });

  it("LIM-1 an ask above the agent's max_output_tokens reserves only the agent's limit, and says so", async () => {
    const { calls, jobs } = setup([agent("boss", { limits: { tree: {}, max_output_tokens: 100 } })]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    await calls.pipe([ask(tree, { max_output_tokens: 100_000 }), ask(tree, { max_output_tokens: 100 }), ask(tree, { max_output_tokens: 50 })], { key: tree });
    const [capped, at, below] = calls.read<Decision>("oz0.admissions");
    expect(capped?.numbers).toMatchObject({ max_output_tokens: 100, asked_output_tokens: 100_000 });
    expect(capped?.numbers.worst_usd).toBe(at?.numbers.worst_usd);
    expect(at?.numbers.max_output_tokens).toBeUndefined();
    expect(below?.numbers.worst_usd).toBeLessThan(at?.numbers.worst_usd ?? 0);
  });

  it("LIM-1 an ask that names no output cap reserves the agent's max_output_tokens, and names it as the cap to call with", async () => {
    const { calls, jobs } = setup([agent("boss", { limits: { tree: {}, max_output_tokens: 100 } })]);
    const tree = uid("tree");
    await jobs.pipe(job(tree, {}), { key: tree });
    await calls.pipe([ask(tree, { max_output_tokens: null }), ask(tree, { max_output_tokens: 100 })], { key: tree });
    const [unnamed, named] = calls.read<Decision>("oz0.admissions");
    expect(unnamed?.numbers.max_output_tokens).toBe(100);
    expect(unnamed?.numbers.asked_output_tokens).toBeUndefined();
    expect(unnamed?.numbers.worst_usd).toBe(named?.numbers.worst_usd);
  });
});
