import { beforeEach, describe, expect, it } from "vitest";
import { parseTenant, type TenantSettings } from "../../../config/tenant.ts";
import { resolveLoopSettings } from "../../../config/resolve.ts";
import { loopApprovalsProcessor } from "../../../processors/loops/approvals-processor.ts";
import { loopCallsProcessor, type LoopEnv } from "../../../processors/loops/calls-processor.ts";
import { LOOP_DEADLINES, sweepDeadlines } from "../../../processors/loops/deadlines.ts";
import { MemoryLoopStore } from "../../../processors/loops/memory-store.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { Decision, ToolCall, TraceEntry } from "../../../schemas/types.ts";
import { toolCall, uid } from "../../support/events.ts";

const T0 = Date.UTC(2026, 10, 30, 12);
const MIN = 60_000;

function tenant(yaml: string): TenantSettings {
  const parsed = parseTenant(yaml, "tenants/acme.yaml");
  if (!parsed.ok) throw new Error(parsed.errors.map((e) => e.message).join("\n"));
  return parsed.value;
}

function tenantErrors(yaml: string): string[] {
  const parsed = parseTenant(yaml, "tenants/acme.yaml");
  return parsed.ok ? [] : parsed.errors.map((e) => e.message);
}

describe("LOOP-5 the tenant's escalation ladder, as written", () => {
  it("LOOP-5 approvals takes a deadline and escalation steps {after, to}, read as milliseconds in order", () => {
    const t = tenant("approvals:\n  deadline: 1h\n  escalation:\n    - {after: 15m, to: team-leads}\n    - {after: 45m, to: oncall}\n");
    expect(t.approvals).toEqual({ deadline: 60 * MIN, escalation: [{ after: 15 * MIN, to: "team-leads" }, { after: 45 * MIN, to: "oncall" }] });
    expect(resolveLoopSettings(undefined, t)).toMatchObject({ loop_deadline: 60 * MIN, escalation: [{ after: 15 * MIN, to: "team-leads" }, { after: 45 * MIN, to: "oncall" }] });
  });

  it("LOOP-5 a ladder under loop_deadline (the deadline's older name) resolves with that deadline", () => {
    const t = tenant("loop_deadline: 30m\napprovals:\n  escalation: [{after: 10m, to: leads}]\n");
    expect(resolveLoopSettings(undefined, t)).toMatchObject({ loop_deadline: 30 * MIN, escalation: [{ after: 10 * MIN, to: "leads" }] });
  });

  it("LOOP-5 refuses steps out of order, a step at or past the deadline, a step without to, and the deadline set twice", () => {
    expect(tenantErrors("approvals:\n  deadline: 1h\n  escalation:\n    - {after: 30m, to: a}\n    - {after: 20m, to: b}\n")).toEqual([expect.stringMatching(/approvals\.escalation\[1\]: after 20m does not come after the step before \(30m\)/)]);
    expect(tenantErrors("approvals:\n  deadline: 1h\n  escalation: [{after: 1h, to: a}]\n")).toEqual([expect.stringMatching(/after 1h is not before the deadline \(1h\)/)]);
    expect(tenantErrors("approvals:\n  escalation: [{after: 10m}]\n")).toEqual([expect.stringMatching(/approvals\.escalation\[0\]\.to: is required/)]);
    expect(tenantErrors("loop_deadline: 1h\napprovals: {deadline: 2h}\n")).toEqual([expect.stringMatching(/approvals\.deadline: is set twice/)]);
  });
});

describe("LOOP-5 a waiting loop escalates by the ladder while nobody decides", () => {
  let store: MemoryLoopStore;
  let calls: TestDriver<ToolCall, LoopEnv>;
  let answers: TestDriver<Decision, LoopEnv>;
  let run: string;
  let published: Decision[];
  const publish = (a: Decision[]) => Promise.resolve(void published.push(...a));

  beforeEach(() => {
    store = new MemoryLoopStore();
    const written = tenant("approvals:\n  deadline: 1h\n  escalation:\n    - {after: 15m, to: team-leads}\n    - {after: 45m, to: oncall}\n");
    // A step past the deadline cannot be written; a hand-built row may still carry one.
    const acme = { ...written, approvals: { ...written.approvals, escalation: [...(written.approvals?.escalation ?? []), { after: 2 * 60 * MIN, to: "nobody" }] } };
    const env: LoopEnv = { config: staticConfig([{ kind: "tenant", id: "acme", value: acme }]), store };
    calls = new TestDriver(loopCallsProcessor, env);
    answers = new TestDriver(loopApprovalsProcessor, env);
    run = uid("run");
    published = [];
  });

  const read = () => toolCall({ run_id: run, arguments: '{"path":"a.md"}', ts: T0 });

  async function waitingLoop(): Promise<{ wait: Decision; approval: string }> {
    const { emits } = await calls.pipe([read(), read(), read()], { key: run });
    const wait = emits.filter((e) => e.to === "oz0.call-decisions").map((e) => e.value as Decision)[2] as Decision;
    expect(wait.verdict).toBe("wait");
    return { wait, approval: (JSON.parse(wait.evidence ?? "null") as { approval: { id: string } }).approval.id };
  }

  async function answer(a: Decision): Promise<{ decisions: Decision[]; trace: TraceEntry[] }> {
    const { emits } = await answers.pipe(a, { key: run });
    return { decisions: emits.filter((e) => e.to === "oz0.call-decisions").map((e) => e.value as Decision), trace: emits.filter((e) => e.to === "oz0.trace").map((e) => e.value as TraceEntry) };
  }

  it("LOOP-5 the wait names the ladder; each step passes once, in order, as a wait naming who the approval goes to, then the deadline stops the job", async () => {
    const { wait, approval } = await waitingLoop();
    expect(JSON.parse(wait.evidence ?? "null")).toMatchObject({ approval: { escalation: [{ at: "2026-11-30T12:15:00.000Z", to: "team-leads" }, { at: "2026-11-30T12:45:00.000Z", to: "oncall" }] } });

    expect(await sweepDeadlines(store, publish, T0 + 15 * MIN - 1)).toBe(0);
    expect(await sweepDeadlines(store, publish, T0 + 15 * MIN)).toBe(1);
    expect(published).toEqual([expect.objectContaining({ processor: LOOP_DEADLINES, subject: approval, verdict: "wait", reason_code: "LoopEscalated", numbers: { step: 1 } })]);
    const first = await answer(published[0] as Decision);
    expect(first.decisions).toEqual([expect.objectContaining({ verdict: "wait", reason_code: "LoopEscalated", subject: wait.subject, numbers: { step: 1, deadline: T0 + 60 * MIN } })]);
    expect(first.decisions[0]?.message).toMatch(/goes to team-leads as well \(step 1 of the escalation ladder\)/);
    expect(first.trace).toEqual([expect.objectContaining({ facts: { finding: "loop_escalated", approval, to: "team-leads" }, numbers: { step: 1 } })]);

    // The timer was down past the second step and the deadline: both pass in one sweep, the step first.
    expect(await sweepDeadlines(store, publish, T0 + 3 * 60 * MIN)).toBe(2);
    expect(published.slice(1).map((d) => `${d.verdict}:${d.reason_code}`)).toEqual(["wait:LoopEscalated", "stop:LoopDetected"]);
    const second = await answer(published[1] as Decision);
    expect(second.decisions[0]?.message).toMatch(/goes to oncall as well \(step 2/);
    const stop = await answer(published[2] as Decision);
    expect(stop.decisions).toEqual([expect.objectContaining({ verdict: "stop", reason_code: "LoopDetected" })]);
    // The step after the deadline was never watched.
    expect(store.deadlines.size).toBe(0);
  });

  it("LOOP-5 a step published twice (a restart, a second timer) is taken once; after the loop is decided no step is taken", async () => {
    const { approval } = await waitingLoop();
    await sweepDeadlines(store, publish, T0 + 15 * MIN);
    const step = published[0] as Decision;
    expect((await answer(step)).decisions).toHaveLength(1);
    expect((await answer(step)).decisions).toEqual([]);

    const person: Decision = { ...step, id: uid("ans"), processor: "person", verdict: "allow", reason_code: null, evidence: null, ts: T0 + 20 * MIN };
    expect((await answer(person)).decisions).toEqual([expect.objectContaining({ verdict: "allow", reason_code: "LoopApproved" })]);
    // Approving drops the rest of the ladder and the deadline from the timer.
    expect(store.deadlines.size).toBe(0);
    const late = { ...step, id: uid("late"), numbers: { step: 2 }, evidence: JSON.stringify({ escalation: { step: 2, to: "oncall" } }) };
    expect((await answer(late)).decisions).toEqual([]);
    expect(answers.deadLetters).toEqual([]);
    expect(approval).toBe(step.subject);
  });

  it("LOOP-5 a wait on oz0.loop-approvals from anyone but the timer, or naming no step, goes to the dead letters", async () => {
    const { approval } = await waitingLoop();
    const base: Decision = { id: uid("x"), input_id: approval, processor: "person", tenant: "acme", tree_id: "job-root", job_id: "job-root", run_id: run, subject: approval, verdict: "wait", reason_code: "LoopEscalated", limit: null, numbers: {}, message: "", evidence: JSON.stringify({ escalation: { step: 1, to: "x" } }), ts: T0 };
    await answer(base);
    await answer({ ...base, id: uid("y"), processor: LOOP_DEADLINES, evidence: "{}" });
    expect(answers.deadLetters.map((d) => d.reason)).toEqual([expect.stringMatching(/only loop-deadlines publishes a wait/), expect.stringMatching(/names no escalation step/)]);
  });
});
