import { readFileSync } from "node:fs";
import { beforeEach, describe, expect, it } from "vitest";
import { parsePlugin } from "../../../config/plugin.ts";
import { fromCallDecision, fromLoopApproval } from "../../../processors/audit-sink/derive.ts";
import { memoryStandingStore } from "../../../processors/limits/memory-store.ts";
import { loopApprovalsProcessor } from "../../../processors/loops/approvals-processor.ts";
import { loopCallsProcessor, type LoopEnv } from "../../../processors/loops/calls-processor.ts";
import { APPROVAL_CLOSED, closingAnswer, closingOf, jobEnding } from "../../../processors/loops/closing.ts";
import { sweepEnded } from "../../../processors/loops/deadlines.ts";
import { MemoryLoopStore, runKey } from "../../../processors/loops/memory-store.ts";
import { flagsFromHash } from "../../../processors/loops/store.ts";
import { approvalState, deadlineEntries, personAnswer, waitingOf } from "../../../processors/loops/waiting.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { Decision, ResultDelivered, ToolCall } from "../../../schemas/types.ts";
import { toolCall, uid } from "../../support/events.ts";

const T0 = Date.UTC(2026, 11, 2, 12);
const MIN = 60_000;
const manifest = parsePlugin(readFileSync("config/examples/plugins/acme_docs.yaml", "utf8"), "acme_docs.yaml");
if (!manifest.ok) throw new Error("the example manifest does not parse");

let store: MemoryLoopStore;
let standing: ReturnType<typeof memoryStandingStore>;
let calls: TestDriver<ToolCall, LoopEnv>;
let answers: TestDriver<Decision, LoopEnv>;
let run: string;
let job: string;

beforeEach(() => {
  store = new MemoryLoopStore();
  standing = memoryStandingStore();
  const config = staticConfig([
    { kind: "agent", id: "acme-reviewer", value: { name: "acme-reviewer", tools: ["acme_docs"], limits: { timeout: 30 * MIN } } },
    { kind: "plugin", id: "acme_docs", value: manifest.ok ? manifest.value : null },
    { kind: "tenant", id: "acme", value: { loops: {}, approvals: { deadline: 60 * MIN, escalation: [{ after: 15 * MIN, to: "team-leads" }] } } },
  ]);
  const env: LoopEnv = { config, store };
  calls = new TestDriver(loopCallsProcessor, env);
  answers = new TestDriver(loopApprovalsProcessor, env);
  run = uid("run");
  job = uid("job");
});

const flags = () => flagsFromHash(Object.fromEntries(store.flags.get(runKey({ tenant: "acme", run })) ?? []));
const waitingNow = () => deadlineEntries([...store.deadlines.values()]).flatMap((e) => waitingOf(e, flags()) ?? []);
const call = (over: Partial<ToolCall> = {}): ToolCall => toolCall({ run_id: run, job_id: job, tree_id: job, ts: T0, ...over });
/** The job's tree's limits hash, as limits-jobs keeps it. */
const jobHash = () => {
  const k = `acme/${job}`;
  if (!standing.hashes.has(k)) standing.hashes.set(k, new Map());
  return standing.hashes.get(k) as Map<string, string>;
};

async function sweep(now: number, agentOf: Parameters<typeof jobEnding>[2] = null): Promise<Decision[]> {
  const published: Decision[] = [];
  await sweepEnded(store, { watched: () => store.watched(), standing, agentOf }, (a) => Promise.resolve(void published.push(...a)), now);
  return published;
}

async function answer(a: Decision) {
  const { emits, rejected } = await answers.pipe(a, { key: run });
  return {
    decisions: emits.filter((e) => e.to === "oz0.call-decisions").map((e) => e.value as Decision),
    results: emits.filter((e) => e.to === "oz0.results-delivered").map((e) => e.value as ResultDelivered),
    rejected: rejected.length,
  };
}

describe("LOOP-5 TOOL-3 an approval whose job ended is closed with the job's end", () => {
  it("LOOP-5 a loop waiting for a person whose job's runtime reported its end is closed: the held call and the calls behind it are refused with the ending, audited as closed", async () => {
    const loop = [1, 2, 3].map((i) => call({ arguments: '{"path":"a.md"}', ts: T0 + i }));
    const behind = call({ function: "search", arguments: '{"q":"x"}', ts: T0 + 4 });
    await calls.pipe([...loop, behind], { key: run });
    const [w] = waitingNow();
    if (!w) throw new Error("nothing waits");
    // While the job runs, nothing is closed.
    expect(await sweep(T0 + MIN)).toEqual([]);

    jobHash().set(`job:${job}:ended`, "1");
    const published = await sweep(T0 + 2 * MIN);
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({ processor: "loop-deadlines", subject: w.approval, verdict: "stop", reason_code: APPROVAL_CLOSED, job_id: job, run_id: run });
    expect(closingOf(published[0] as Decision)).toMatchObject({ code: "JobEnded" });
    // Its deadline and its ladder's steps are no longer watched.
    expect([...store.deadlines.values()].filter((e) => e.approval === w.approval)).toEqual([]);

    const out = await answer(published[0] as Decision);
    expect(out.rejected).toBe(0);
    expect(out.decisions.map((d) => [d.verdict, d.reason_code, d.subject])).toEqual([
      ["refuse", "JobEnded", loop[2]?.call_id],
      ["refuse", "JobEnded", behind.call_id],
    ]);
    expect(out.decisions[0]?.message).toMatch(new RegExp(`Approval ${w.approval} \\(kind loop\\) is closed with the job's end: Job ${job} has ended \\(JobEnded\\)`));
    expect(out.results.map((r) => [r.input_id, r.is_error])).toEqual([
      [loop[2]?.id, true],
      [behind.id, true],
    ]);
    expect(approvalState(flags(), w.approval)).toBe("closed");
    expect(waitingNow()).toEqual([]);

    const decided = fromCallDecision(out.decisions[0] as Decision);
    expect(decided).toMatchObject({ kind: "approval.decided", facts: { approval: w.approval, outcome: "closed", ending: "JobEnded", reason_code: "JobEnded" } });
    expect(fromLoopApproval(published[0] as Decision)).toMatchObject({ kind: "approval.answered", facts: { approval: w.approval, answer: "closed" } });
    expect(fromLoopApproval(published[0] as Decision)?.reason).toContain("has ended (JobEnded)");

    // Closed twice (a restart, two timers) is one closing; a person's answer after it changes nothing.
    expect((await answer(published[0] as Decision)).decisions).toEqual([]);
    expect((await answer(personAnswer({ ...w, kind: "loop" }, { verdict: "allow", person: "alice", now: T0 + 3 * MIN }))).decisions).toEqual([]);
  });

  it("TOOL-3 a tool call waiting for approval is closed with the ending a stop kept, and a person's answer that came first wins", async () => {
    const quote = call({ function: "quote", arguments: JSON.stringify({ plan: "pro" }) });
    await calls.pipe(quote, { key: run });
    const [w] = waitingNow();
    expect(w).toMatchObject({ kind: "tool" });
    if (!w) throw new Error("nothing waits");
    jobHash().set(`job:${job}:end`, JSON.stringify({ code: "BudgetExceeded", limit: "limits.max_cost_usd", message: "The budget is spent.", by: "evt-x" }));
    const [closing] = await sweep(T0 + MIN);
    if (!closing) throw new Error("not closed");
    const out = await answer(closing);
    expect(out.decisions).toHaveLength(1);
    expect(out.decisions[0]).toMatchObject({ verdict: "refuse", reason_code: "BudgetExceeded", limit: "limits.max_cost_usd", subject: quote.call_id });
    expect(JSON.parse(out.decisions[0]?.evidence ?? "{}")).toMatchObject({ approval: { id: w.approval, kind: "tool" }, closed: { code: "BudgetExceeded" } });
    expect(out.results[0]).toMatchObject({ input_id: quote.id, is_error: true });

    // Another tool call, approved before the timer closes it: the person's answer holds.
    const second = call({ function: "quote", arguments: JSON.stringify({ plan: "basic" }), ts: T0 + 2 * MIN });
    await calls.pipe(second, { key: run });
    const w2 = waitingNow().find((x) => x.call_id === second.call_id);
    if (!w2) throw new Error("nothing waits");
    await answer(personAnswer({ ...w2, kind: "tool" }, { verdict: "allow", person: "alice", now: T0 + 3 * MIN }));
    expect((await answer(closingAnswer(w2, { code: "JobEnded", limit: null, message: "" }, T0 + 4 * MIN))).decisions).toEqual([]);
    expect(approvalState(flags(), w2.approval)).toBe("approved");
  });

  it("LOOP-5 a job past its limits.timeout ends with AgentTimeout when the agent's definition is known; without it only the endings kept close an approval", () => {
    const fields = [null, null, "acme-reviewer", String(T0), "-1", "0", null, null, null];
    const agentOf = (name: string) => (name === "acme-reviewer" ? { name, tools: [], limits: { tree: {}, timeout: 30 * MIN }, delegation: { allow: [] }, loops: {}, spend: {} } : undefined);
    expect(jobEnding(fields, T0 + 10 * MIN, agentOf)).toBeNull();
    expect(jobEnding(fields, T0 + 31 * MIN, agentOf)).toMatchObject({ code: "AgentTimeout", limit: "limits.timeout" });
    expect(jobEnding(fields, T0 + 31 * MIN, null)).toBeNull();
    expect(jobEnding(["", "1"], T0, null)).toMatchObject({ code: "JobEnded" });
  });

  it("LOOP-5 a closing answer without the job's ending is dead-lettered with why; one for an approval no longer kept changes nothing", async () => {
    const bad: Decision = { ...closingAnswer({ approval: "a-x", tenant: "acme", tree_id: job, job_id: job, run_id: run }, { code: "JobEnded", limit: null, message: "" }, T0), evidence: "{}" };
    const { rejected } = await answers.pipe(bad, { key: run });
    expect(rejected[0]?.reason).toMatch(/evidence names no ending/);
    const gone = await answer(closingAnswer({ approval: "a-gone", tenant: "acme", tree_id: job, job_id: job, run_id: run }, { code: "JobEnded", limit: null, message: "" }, T0));
    expect(gone).toEqual({ decisions: [], results: [], rejected: 0 });
  });
});
