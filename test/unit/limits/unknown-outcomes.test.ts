import { describe, expect, it } from "vitest";
import type { LimitsEnv } from "../../../processors/limits/env.ts";
import { limitsJobsProcessor } from "../../../processors/limits/jobs-processor.ts";
import { sweepUnknownOutcomes } from "../../../processors/limits/unknown-deadlines.ts";
import { memoryUnknownOutcomeStore } from "../../../processors/limits/memory-store.ts";
import {
  DEFAULT_UNKNOWN_DEADLINE_MS,
  formatUnknownOutcomes,
  isUnknownApproval,
  outcomeOf,
  UNKNOWN_DEADLINES,
  unknownAnswerDecision,
  unknownAuditEntry,
  unknownDeadlineMs,
  type UnknownOutcomeRequest,
} from "../../../processors/limits/unknown-outcomes.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { AuditEvent, Decision } from "../../../schemas/types.ts";
import { uid } from "../../support/events.ts";
import { agent, jobEvent, setup, tenantSettings } from "./support.ts";

const HOUR = 3600_000;

function withUnknown(tenant = tenantSettings()) {
  const s = setup([agent("boss")], tenant);
  const unknown = memoryUnknownOutcomeStore();
  const env: LimitsEnv = { ...s.env, unknown };
  return { ...s, unknown, jobs: new TestDriver(limitsJobsProcessor, env) };
}

async function endedUnknown(jobs: TestDriver<ReturnType<typeof jobEvent>, LimitsEnv>, tree: string, startedBy: "person" | "app" = "person") {
  await jobs.pipe(jobEvent(tree, { started_by: startedBy }), { key: tree });
  const ended = jobEvent(tree, { kind: "ended", outcome: "unknown", started_by: startedBy, ts: 5_000 });
  const { emits } = await jobs.pipe(ended, { key: tree });
  return { ended, decisions: emits.map((e) => e.value as Decision) };
}

describe("LIM-11 an unknown outcome waits for a person as an approval of kind unknown", () => {
  it("LIM-11 on_unknown wait: the wait decision names its approval u-... and deadline, and the request is kept once with the tenant's deadline", async () => {
    const { jobs, unknown } = withUnknown(tenantSettings({ approvals: { deadline: 2 * HOUR } }));
    const tree = uid("tree");
    const { ended, decisions } = await endedUnknown(jobs, tree);
    expect(decisions).toHaveLength(1);
    const [wait] = decisions;
    expect(wait).toMatchObject({ verdict: "wait", reason_code: "unknown_outcome", limit: "on_unknown", job_id: tree, numbers: { deadline: 5_000 + 2 * HOUR } });
    const approval = (JSON.parse(wait?.evidence ?? "{}") as { approval: { id: string; kind: string } }).approval;
    expect(approval.kind).toBe("unknown");
    expect(isUnknownApproval(approval.id)).toBe(true);
    expect(wait?.message).toContain(`oz0 approval approve ${tree} ${approval.id} --outcome happened|run_again`);
    const waiting = await unknown.waiting();
    expect(waiting).toEqual([expect.objectContaining({ approval: approval.id, kind: "unknown", tenant: "acme", tree_id: tree, job_id: tree, asked_at: 5_000, deadline: 5_000 + 2 * HOUR })]);
    // A replay of the ended event keeps the same one.
    await jobs.pipe(ended, { key: tree });
    expect(await unknown.waiting()).toHaveLength(1);
  });

  it("LIM-11 on_unknown fail (a tree no person started): stop with unknown_outcome, and nothing waits", async () => {
    const { jobs, unknown } = withUnknown();
    const { decisions } = await endedUnknown(jobs, uid("tree"), "app");
    expect(decisions[0]).toMatchObject({ verdict: "stop", reason_code: "unknown_outcome", evidence: null });
    expect(await unknown.waiting()).toEqual([]);
  });

  it("LIM-11 the deadline is the tenant's approvals.deadline, else loop_deadline, else a day", () => {
    expect(unknownDeadlineMs(undefined)).toBe(DEFAULT_UNKNOWN_DEADLINE_MS);
    expect(unknownDeadlineMs({ loop_deadline: HOUR })).toBe(HOUR);
    expect(unknownDeadlineMs({ loop_deadline: HOUR, approvals: { deadline: 3 * HOUR } })).toBe(3 * HOUR);
  });

  it("LIM-11 a person answers happened, run_again (approve --outcome) or stop (deny): each a decision on oz0.admissions for the job, and an audit entry", () => {
    expect(outcomeOf("approve", "happened")).toEqual({ outcome: "happened" });
    expect(outcomeOf("approve", "run_again")).toEqual({ outcome: "run_again" });
    expect(outcomeOf("approve", "rerun")).toEqual({ outcome: "run_again" });
    expect(outcomeOf("deny", undefined)).toEqual({ outcome: "stop" });
    expect(JSON.stringify(outcomeOf("approve", undefined))).toMatch(/"problem":".*--outcome happened .* or --outcome run_again/);
    expect(outcomeOf("approve", "maybe")).toMatchObject({ problem: "--outcome maybe: give happened, run_again or stop" });
    expect(JSON.stringify(outcomeOf("deny", "happened"))).toMatch(/"problem":".*goes with approve/);

    const r: UnknownOutcomeRequest = { approval: "u-abc", kind: "unknown", tenant: "acme", tree_id: "t1", job_id: "j1", run_id: "r1", message: "", decision_id: "d1", asked_at: 1_000, deadline: 1_000 + HOUR };
    const at = 2_000;
    const happened = unknownAnswerDecision(r, { outcome: "happened", by: "person:pat", comment: "the mail went out", at });
    expect(happened).toMatchObject({ processor: "person:pat", verdict: "allow", reason_code: "happened", limit: "on_unknown", job_id: "j1", subject: "j1", input_id: "d1" });
    expect(happened.message).toContain("the mail went out");
    expect(JSON.parse(happened.evidence ?? "{}")).toEqual({ approval: { id: "u-abc", kind: "unknown" }, outcome: "happened", answered_by: "person:pat" });
    expect(unknownAnswerDecision(r, { outcome: "run_again", by: "person:pat", comment: null, at })).toMatchObject({ verdict: "allow", reason_code: "run_again" });
    expect(unknownAnswerDecision(r, { outcome: "stop", by: "person:pat", comment: null, at })).toMatchObject({ verdict: "stop", reason_code: "unknown_outcome" });
    expect(unknownAuditEntry(r, { outcome: "run_again", by: "person:pat", comment: "flaky", at })).toMatchObject({ kind: "approval.answered", actor: "pat", reason: "flaky", facts: { approval: "u-abc", kind: "unknown", answer: "run_again" } });

    const text = formatUnknownOutcomes([r], 1_000);
    expect(text).toContain("u-abc  unknown  job j1  tenant acme");
    expect(text).toContain("oz0 approval approve j1 u-abc --outcome happened|run_again   or   oz0 approval deny j1 u-abc (stop)");
  });

  it("LIM-11 past its deadline nobody answered: stopped with unknown_outcome once, published again after a failed publish; a person's answer that came first wins", async () => {
    const { jobs, unknown } = withUnknown(tenantSettings({ approvals: { deadline: HOUR } }));
    const a = uid("tree");
    const b = uid("tree");
    await endedUnknown(jobs, a);
    await endedUnknown(jobs, b);
    const [ra, rb] = [...(await unknown.waiting())].sort((x, y) => (x.job_id === a ? -1 : y.job_id === a ? 1 : 0));
    if (!ra || !rb) throw new Error("nothing waits");
    // b is answered by a person before its deadline.
    await unknown.answer(rb.approval, { outcome: "happened", by: "person:pat", comment: null, at: 6_000 }, true);

    const published: Array<[Decision[], AuditEvent[]]> = [];
    expect(await sweepUnknownOutcomes(unknown, (d, e) => Promise.resolve(void published.push([d, e])), 5_000 + HOUR - 1)).toBe(0);
    await expect(sweepUnknownOutcomes(unknown, () => Promise.reject(new Error("broker down")), 5_000 + HOUR)).rejects.toThrow(/broker down/);
    expect(await sweepUnknownOutcomes(unknown, (d, e) => Promise.resolve(void published.push([d, e])), 5_000 + HOUR)).toBe(1);
    expect(published).toHaveLength(1);
    const [[decisions, audit]] = published as [[Decision[], AuditEvent[]]];
    expect(decisions).toEqual([expect.objectContaining({ processor: UNKNOWN_DEADLINES, verdict: "stop", reason_code: "unknown_outcome", job_id: a, ts: 5_000 + HOUR })]);
    expect(decisions[0]?.message).toMatch(/Nobody decided on the unknown outcome/);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ kind: "approval.answered", facts: { approval: ra.approval, answer: "deadline_passed" } });
    // Done: not published again, and no longer waiting.
    expect(await sweepUnknownOutcomes(unknown, (d, e) => Promise.resolve(void published.push([d, e])), 5_000 + 2 * HOUR)).toBe(0);
    expect(await unknown.waiting()).toEqual([]);
    expect((await unknown.get(rb.approval))?.answered).toMatchObject({ outcome: "happened", by: "person:pat" });
  });
});
