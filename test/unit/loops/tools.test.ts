import { readFileSync } from "node:fs";
import { beforeEach, describe, expect, it } from "vitest";
import { parsePlugin } from "../../../config/plugin.ts";
import { fromCallDecision, fromLoopApproval } from "../../../processors/audit-sink/derive.ts";
import { loopApprovalsProcessor } from "../../../processors/loops/approvals-processor.ts";
import { loopCallsProcessor, type LoopEnv } from "../../../processors/loops/calls-processor.ts";
import { sweepDeadlines } from "../../../processors/loops/deadlines.ts";
import { MemoryLoopStore, runKey } from "../../../processors/loops/memory-store.ts";
import { flagsFromHash, type TimerEntry } from "../../../processors/loops/store.ts";
import { approvedArguments, toolApprovalId } from "../../../processors/loops/tool-approval.ts";
import { deadlineEntries, formatWaiting, listed, personAnswer, waitingOf } from "../../../processors/loops/waiting.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import type { InputRecord } from "../../../processors/runner/processor.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { Decision, ResultDelivered, ToolCall } from "../../../schemas/types.ts";
import { toolCall, uid } from "../../support/events.ts";

const T0 = Date.UTC(2026, 10, 30, 12);
const MIN = 60_000;
const manifest = parsePlugin(readFileSync("config/examples/plugins/acme_docs.yaml", "utf8"), "acme_docs.yaml");
if (!manifest.ok) throw new Error("the example manifest does not parse");

let store: MemoryLoopStore;
let config: ReturnType<typeof staticConfig>;
let env: LoopEnv;
let calls: TestDriver<ToolCall, LoopEnv>;
let answers: TestDriver<Decision, LoopEnv>;
let run: string;

beforeEach(() => {
  store = new MemoryLoopStore();
  config = staticConfig([
    { kind: "agent", id: "acme-reviewer", value: { name: "acme-reviewer", tools: ["acme_docs", "search"] } },
    { kind: "agent", id: "bare", value: { name: "bare", tools: [] } },
    { kind: "plugin", id: "acme_docs", value: manifest.ok ? manifest.value : null },
    { kind: "tenant", id: "acme", value: { loops: {}, approvals: { deadline: 60 * MIN, escalation: [{ after: 15 * MIN, to: "team-leads" }] } } },
  ]);
  env = { config, store };
  calls = new TestDriver(loopCallsProcessor, env);
  answers = new TestDriver(loopApprovalsProcessor, env);
  run = uid("run");
});

const call = (over: Partial<ToolCall> = {}): ToolCall => toolCall({ run_id: run, ts: T0, ...over });
const quote = (over: Partial<ToolCall> = {}): ToolCall => call({ function: "quote", arguments: JSON.stringify({ plan: "pro", budget: 2.5 }), ...over });
const billing = (over: Partial<ToolCall> = {}): ToolCall => call({ plugin: "billing", tool: "billing", function: "refund", arguments: JSON.stringify({ order: 7 }), ...over });

async function decide(...cs: ToolCall[]): Promise<{ decisions: Decision[]; results: ResultDelivered[] }> {
  const { emits } = await calls.pipe(cs, { key: run });
  return { decisions: emits.filter((e) => e.to === "oz0.call-decisions").map((e) => e.value as Decision), results: emits.filter((e) => e.to === "oz0.results-delivered").map((e) => e.value as ResultDelivered) };
}

async function answer(a: Decision): Promise<{ decisions: Decision[]; results: ResultDelivered[]; rejected: number }> {
  const { emits, rejected } = await answers.pipe(a, { key: run });
  return { decisions: emits.filter((e) => e.to === "oz0.call-decisions").map((e) => e.value as Decision), results: emits.filter((e) => e.to === "oz0.results-delivered").map((e) => e.value as ResultDelivered), rejected: rejected.length };
}

const evidence = (d: Decision | undefined): Record<string, unknown> & { approval: { id: string } } => JSON.parse(d?.evidence ?? "null") as Record<string, unknown> & { approval: { id: string } };

function flags() {
  return flagsFromHash(Object.fromEntries(store.flags.get(runKey({ tenant: "acme", run })) ?? []));
}

describe("TOOL-1 an agent calls only the tools it lists", () => {
  it("TOOL-1 a call of a tool the agent does not list is refused with the tools it may call named, and the model reads the words as its failed result", async () => {
    const c = billing();
    const { decisions, results } = await decide(c);
    expect(decisions).toHaveLength(1);
    expect(decisions[0]).toMatchObject({ verdict: "refuse", reason_code: "ToolNotAllowed", limit: "tools", subject: c.call_id, input_id: c.id, processor: "loop-calls" });
    expect(decisions[0]?.message).toBe(
      "The agent acme-reviewer does not list the tool billing (billing/billing.refund): it may call only acme_docs, search (and the answer and oz.read_result). The call was not made; use one of those tools or answer with what you have.",
    );
    expect(evidence(decisions[0])).toEqual({ agent: "acme-reviewer", tool: "billing", allowed: ["acme_docs", "search"] });
    // No result will come from a server: the refusal is the call's result, by the call's event ID.
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ input_id: c.id, call_id: c.call_id, is_error: true });
    expect(JSON.parse(results[0]?.content ?? "null")).toEqual({ content: [{ type: "text", text: decisions[0]?.message }], isError: true });
    // Audited as other refusals of calls are.
    expect(fromCallDecision(decisions[0] as Decision)).toMatchObject({ kind: "call.refused", facts: { reason_code: "ToolNotAllowed" } });
  });

  it("TOOL-1 a listed tool is allowed, of every origin", async () => {
    const { decisions } = await decide(call(), call({ tool: "search", plugin: "search", function: "find" }), call({ origin: "harness" }));
    expect(decisions.map((d) => d.verdict)).toEqual(["allow", "allow", "allow"]);
  });

  it("TOOL-1 the platform's own tools (the answer, a routine's output, oz.read_result) are allowed to an agent that lists none", async () => {
    const bare = { agent: "bare" };
    const { decisions } = await decide(
      call({ ...bare, plugin: "oz0", tool: "oz0", function: "answer", arguments: "{}" }),
      call({ ...bare, plugin: "oz0", tool: "oz0", function: "output", arguments: "{}" }),
      call({ ...bare, plugin: "oz", tool: "oz", function: "read_result", arguments: '{"ref":"oz0-file:sha256:00"}' }),
      call({ ...bare }),
    );
    expect(decisions.map((d) => `${d.verdict}:${d.reason_code ?? ""}`)).toEqual(["allow:", "allow:", "allow:", "refuse:ToolNotAllowed"]);
    expect(decisions[3]?.message).toMatch(/it may call none of the plugins' tools \(only the answer and oz\.read_result\)/);
  });

  it("TOOL-1 an agent the pipeline holds no definition for is not held to a tool list", async () => {
    const { decisions } = await decide(billing({ agent: "never-published" }), call({ agent: "never-published" }));
    expect(decisions.map((d) => d.verdict)).toEqual(["allow", "allow"]);
  });

  it("TOOL-1 a refusal is remembered: replayed the same even after the agent's list changed", async () => {
    const records: InputRecord<ToolCall>[] = [billing(), call()].map((value, i) => ({ topic: "oz0.tool-calls", partition: 0, offset: String(10 + i), key: run, value, timestamp: "0" }));
    const first = await loopCallsProcessor.process(records, env);
    config.set("agent", "acme-reviewer", { name: "acme-reviewer", tools: ["acme_docs", "billing"] });
    expect(await loopCallsProcessor.process(records, env)).toEqual(first);
    expect((first[0] as unknown as { emits: Array<{ value: Decision }> }).emits[0]?.value.verdict).toBe("refuse");
  });
});

describe("TOOL-3 a function in requires_approval waits for a person", () => {
  async function waitingQuote(over: Partial<ToolCall> = {}): Promise<{ c: ToolCall; wait: Decision; approval: string }> {
    const c = quote(over);
    const { decisions, results } = await decide(c);
    const wait = decisions[0] as Decision;
    expect(results).toEqual([]);
    return { c, wait, approval: evidence(wait).approval.id };
  }

  const person = (approval: string, verdict: "allow" | "stop", extra: { arguments?: Record<string, unknown>; comment?: string } = {}): Decision =>
    personAnswer({ approval, kind: "tool", tenant: "acme", tree_id: "job-root", job_id: "job-root", run_id: run }, { verdict, person: "anna", now: T0 + MIN, ...extra });

  it("TOOL-3 the call waits: a wait decision naming an approval of kind tool, its deadline the tenant's, held in the run's flags and listed for people", async () => {
    const { c, wait, approval } = await waitingQuote();
    expect(wait).toMatchObject({ verdict: "wait", reason_code: "ToolApproval", limit: "requires_approval", subject: c.call_id, input_id: c.id, numbers: { deadline: T0 + 60 * MIN } });
    expect(approval).toBe(toolApprovalId(c));
    expect(approval).toMatch(/^t-/);
    expect(evidence(wait)).toEqual({
      approval: { id: approval, kind: "tool", deadline: "2026-11-30T13:00:00.000Z", escalation: [{ at: "2026-11-30T12:15:00.000Z", to: "team-leads" }] },
      function: "acme_docs/acme_docs.quote",
      arguments: { plan: "pro", budget: 2.5 },
    });
    expect(wait.message).toMatch(/acme_docs\/acme_docs\.quote requires a person's approval before it runs: the call waits \(approval t-\S+, kind tool\)/);
    // The deadline and the ladder's step are watched by the timer.
    const entries = [...store.deadlines.values()];
    expect(entries.map((e) => e.at).sort()).toEqual([T0 + 15 * MIN, T0 + 60 * MIN]);
    // oz0 approval list shows it as kind tool, with the arguments as asked.
    const shown = deadlineEntries(entries).map((e: TimerEntry) => waitingOf(e, flags()));
    expect(shown).toEqual([expect.objectContaining({ approval, kind: "tool", job_id: "job-root", call: { plugin: "acme_docs", tool: "acme_docs", function: "quote" }, arguments: { plan: "pro", budget: 2.5 } })]);
    expect(listed(shown.filter((w) => w !== null), { kind: "tool" })).toHaveLength(1);
    expect(listed(shown.filter((w) => w !== null), { kind: "loop" })).toHaveLength(0);
    const text = formatWaiting(shown.filter((w) => w !== null), T0);
    expect(text).toMatch(/t-\S+ {2}tool {2}job job-root/);
    expect(text).toMatch(/arguments \{"plan":"pro","budget":2\.5\}/);
    expect(text).toMatch(/oz0 approval approve job-root t-\S+ \[--arguments JSON\]/);
    // Audited as an approval asked.
    expect(fromCallDecision(wait)).toMatchObject({ kind: "approval.requested", facts: { approval } });
  });

  it("TOOL-3 only the held call waits: the run's other calls go on, and a person's own call is not held", async () => {
    await waitingQuote();
    const { decisions } = await decide(call(), quote({ origin: "person" }));
    expect(decisions.map((d) => d.verdict)).toEqual(["allow", "allow"]);
  });

  it("TOOL-3 approve: the call is allowed with the arguments as asked, the deadline dropped, and the answer audited with who gave it", async () => {
    const { c, approval } = await waitingQuote();
    const a = person(approval, "allow");
    const { decisions, results } = await answer(a);
    expect(decisions).toHaveLength(1);
    expect(decisions[0]).toMatchObject({ verdict: "allow", reason_code: "ToolApproved", subject: c.call_id, processor: "loop-approvals" });
    expect(evidence(decisions[0])).toMatchObject({ approval: { id: approval, kind: "tool" }, answered_by: "person:anna", arguments: { plan: "pro", budget: 2.5 }, arguments_changed: false });
    expect(approvedArguments(decisions[0] as Decision)).toBe(c.arguments);
    expect(results).toEqual([]);
    expect(store.deadlines.size).toBe(0);
    expect(fromLoopApproval(a)).toMatchObject({ kind: "approval.answered", actor: "person:anna", facts: { approval, answer: "approve" } });
    expect(fromCallDecision(decisions[0] as Decision)).toMatchObject({ kind: "approval.decided", facts: { approval, outcome: "approved", answered_by: "person:anna" } });
    // The first answer wins: a later deny changes nothing.
    expect((await answer(person(approval, "stop"))).decisions).toEqual([]);
  });

  it("TOOL-3 approve with arguments: the call is made with the arguments the person approved, the asked call's _meta (files handed) kept", async () => {
    const { approval } = await waitingQuote({ arguments: JSON.stringify({ plan: "pro", budget: 2.5, _meta: { "oz0/files": { spec: "/oz0/files/ab" } } }) });
    const { decisions } = await answer(person(approval, "allow", { arguments: { plan: "basic" } }));
    expect(decisions[0]).toMatchObject({ verdict: "allow", reason_code: "ToolApproved" });
    expect(decisions[0]?.message).toMatch(/with changed arguments/);
    expect(JSON.parse(approvedArguments(decisions[0] as Decision) ?? "null")).toEqual({ plan: "basic", _meta: { "oz0/files": { spec: "/oz0/files/ab" } } });
  });

  it("TOOL-3 approved arguments that are no JSON object are dead-lettered, and the approval still waits", async () => {
    const { approval } = await waitingQuote();
    const bad = { ...person(approval, "allow"), evidence: JSON.stringify({ arguments: ["basic"] }) };
    const r = await answer(bad);
    expect(r.rejected).toBe(1);
    expect(r.decisions).toEqual([]);
    expect((await answer(person(approval, "allow"))).decisions[0]?.verdict).toBe("allow");
  });

  it("TOOL-3 deny: the call is refused with the comment, the model reads the refusal as its result, and the job goes on", async () => {
    const { c, approval } = await waitingQuote();
    const { decisions, results } = await answer(person(approval, "stop", { comment: "not this quarter" }));
    expect(decisions[0]).toMatchObject({ verdict: "refuse", reason_code: "ToolDenied", subject: c.call_id });
    expect(decisions[0]?.message).toBe("A person denied the call of acme_docs/acme_docs.quote (approval " + approval + "): not this quarter. The call was not made; do without it, or answer with what you have.");
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ input_id: c.id, call_id: c.call_id, is_error: true, function: "quote" });
    expect(approvedArguments(decisions[0] as Decision)).toBeNull();
    expect(fromCallDecision(decisions[0] as Decision)).toMatchObject({ kind: "approval.decided", facts: { outcome: "denied", answered_by: "person:anna" } });
    expect(flags().stopped).toBeNull();
    expect((await decide(call())).decisions[0]?.verdict).toBe("allow");
  });

  it("TOOL-3 no decision by the deadline: the escalation step is taken once, then the call is refused", async () => {
    const { c, approval } = await waitingQuote();
    const published: Decision[] = [];
    const publish = (ds: Decision[]): Promise<void> => {
      published.push(...ds);
      return Promise.resolve();
    };
    expect(await sweepDeadlines(store, publish, T0 + 15 * MIN)).toBe(1);
    const step = await answer(published[0] as Decision);
    expect(step.decisions[0]).toMatchObject({ verdict: "wait", reason_code: "ToolApprovalEscalated", subject: c.call_id, numbers: { step: 1, deadline: T0 + 60 * MIN } });
    expect(step.decisions[0]?.message).toMatch(/goes to team-leads as well \(step 1 of the escalation ladder\)/);
    expect((await answer({ ...(published[0] as Decision), id: uid("again") })).decisions).toEqual([]);
    expect(await sweepDeadlines(store, publish, T0 + 60 * MIN)).toBe(1);
    const { decisions, results } = await answer(published[1] as Decision);
    expect(decisions[0]).toMatchObject({ verdict: "refuse", reason_code: "ToolApprovalExpired", subject: c.call_id });
    expect(decisions[0]?.message).toMatch(new RegExp(`Nobody decided on the call of acme_docs/acme_docs\\.quote \\(approval ${approval}\\) by 2026-11-30T13:00:00\\.000Z`));
    expect(results.map((r) => r.input_id)).toEqual([c.id]);
    expect(fromCallDecision(decisions[0] as Decision)).toMatchObject({ kind: "approval.decided", facts: { outcome: "deadline_passed" } });
    expect(flags().stopped).toBeNull();
  });

  it("TOOL-3 replays give the same outputs: the wait (even after the tenant's deadline changed) and the answer", async () => {
    const rec = (value: ToolCall, offset: number): InputRecord<ToolCall> => ({ topic: "oz0.tool-calls", partition: 0, offset: String(offset), key: run, value, timestamp: "0" });
    const batch = [rec(quote(), 5), rec(call(), 6)];
    const first = await loopCallsProcessor.process(batch, env);
    config.set("tenant", "acme", { loops: {}, approvals: { deadline: 5 * MIN } });
    expect(await loopCallsProcessor.process(batch, env)).toEqual(first);
    const approval = evidence((first[0] as unknown as { emits: Array<{ value: Decision }> }).emits[0]?.value).approval.id;
    const a: InputRecord<Decision> = { topic: "oz0.loop-approvals", partition: 0, offset: "3", key: run, value: person(approval, "allow", { arguments: { plan: "basic" } }), timestamp: "0" };
    const decided = await loopApprovalsProcessor.process([a], env);
    expect(await loopApprovalsProcessor.process([a], env)).toEqual(decided);
    expect((decided[0] as unknown as { emits: Array<{ value: Decision }> }).emits[0]?.value.verdict).toBe("allow");
  });

  it("TOOL-3 a person's answer carries approved arguments only for a tool approval's approve", () => {
    const a = person("t-x", "allow", { arguments: { plan: "basic" } });
    expect(JSON.parse(a.evidence ?? "null")).toEqual({ arguments: { plan: "basic" } });
    expect(person("t-x", "stop").reason_code).toBe("ToolDenied");
    expect(() => personAnswer({ approval: "a-x", tenant: "acme", tree_id: "t", job_id: "j", run_id: "r" }, { verdict: "allow", person: "anna", now: T0, arguments: {} })).toThrow(/only with the approval of a tool call/);
  });
});
