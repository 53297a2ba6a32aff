import { describe, expect, it } from "vitest";
import { auditSinkAdmissions, auditSinkAudit, auditSinkCallDecisions, auditSinkConfig, auditSinkLoopApprovals, type AuditSinkEnv } from "../../../processors/audit-sink/processor.ts";
import { fromAdmission, fromCallDecision, fromConfig, fromLoopApproval } from "../../../processors/audit-sink/derive.ts";
import { decodeLines, encodeLines, listAfter, objectName, parseObjectName, uncoveredRuns } from "../../../processors/audit-sink/log-objects.ts";
import { formatEntries, formatLoopCounts, loopCounts, selectEntries } from "../../../processors/audit-sink/query.ts";
import type { AuditRecord } from "../../../processors/audit-sink/store.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import { lockModeFromEnv, retentionDaysFromEnv } from "../../../processors/sinks.ts";
import type { AuditEvent, ConfigRecord, Decision } from "../../../schemas/types.ts";

function decision(over: Partial<Decision> = {}): Decision {
  return {
    id: "dec-1",
    input_id: "in-1",
    processor: "loop-calls",
    tenant: "acme",
    tree_id: "tree-1",
    job_id: "job-1",
    run_id: "run-1",
    subject: "call-1",
    verdict: "allow",
    reason_code: null,
    limit: null,
    numbers: {},
    message: "",
    evidence: null,
    ts: 1_700_000_000_000,
    ...over,
  };
}

function audit(over: Partial<AuditEvent> = {}): AuditEvent {
  return { id: "a-1", kind: "job.files_handed", tenant: "acme", tree_id: null, job_id: null, actor: null, reason: null, facts: {}, numbers: {}, ts: 1_700_000_000_000, ...over };
}

class MemoryLog implements AuditSinkEnv {
  readonly batches: Array<{ topic: string; partition: number; records: readonly AuditRecord[] }> = [];
  append(topic: string, partition: number, records: readonly AuditRecord[]): Promise<null> {
    this.batches.push({ topic, partition, records });
    return Promise.resolve(null);
  }
  entries(): AuditEvent[] {
    return this.batches.flatMap((b) => b.records.map((r) => r.entry).filter((e): e is AuditEvent => e !== null));
  }
}

describe("what the audit sink derives", () => {
  it("SYS-5 a loop waiting for a person is recorded as an approval asked, with its approval ID", () => {
    const e = fromCallDecision(
      decision({ verdict: "wait", reason_code: "LoopDetected", limit: "loops.repeats", numbers: { count: 3, deadline: 9 }, evidence: JSON.stringify({ approval: { id: "ap-1", deadline: 9 }, calls: ["secret args"] }) }),
    );
    expect(e).toMatchObject({ kind: "approval.requested", actor: "loop-calls", reason: "LoopDetected", facts: { approval: "ap-1", subject: "call-1", verdict: "wait" }, numbers: { count: 3, deadline: 9 } });
    expect(JSON.stringify(e)).not.toContain("secret args");
  });

  it("SYS-5 an approval's outcome is recorded: approved, denied, or its deadline passed", () => {
    const approved = fromCallDecision(decision({ processor: "loop-approvals", verdict: "allow", reason_code: "LoopApproved", message: "A person approved the loop (approval ap-1): the counters start again and the call is made." }));
    expect(approved).toMatchObject({ kind: "approval.decided", facts: { approval: "ap-1", outcome: "approved" } });
    const approvedBy = fromCallDecision(decision({ processor: "loop-approvals", verdict: "allow", reason_code: "LoopApproved", evidence: JSON.stringify({ approval: { id: "ap-5", kind: "loop" }, answered_by: "person:alice" }) }));
    expect(approvedBy).toMatchObject({ kind: "approval.decided", facts: { approval: "ap-5", outcome: "approved", answered_by: "person:alice" } });
    const denied = fromCallDecision(decision({ processor: "loop-approvals", verdict: "stop", reason_code: "LoopDetected", message: "A person denied the loop.", evidence: JSON.stringify({ approval: { id: "ap-2", kind: "loop" }, answered_by: "alice" }) }));
    expect(denied).toMatchObject({ kind: "approval.decided", reason: "A person denied the loop.", facts: { approval: "ap-2", outcome: "denied", answered_by: "alice" } });
    const late = fromCallDecision(decision({ processor: "loop-approvals", verdict: "stop", evidence: JSON.stringify({ approval: { id: "ap-3" }, answered_by: "loop-deadlines" }) }));
    expect(late?.facts.outcome).toBe("deadline_passed");
    const escalated = fromCallDecision(
      decision({ processor: "loop-approvals", verdict: "wait", reason_code: "LoopEscalated", message: "it goes to ops as well", evidence: JSON.stringify({ approval: { id: "ap-4" }, escalation: { step: 1, to: "ops@acme" } }) }),
    );
    expect(escalated).toMatchObject({ kind: "approval.escalated", reason: "it goes to ops as well", facts: { approval: "ap-4", to: "ops@acme" } });
  });

  it("SYS-5 every answer to an approval is recorded with who gave it and why", () => {
    expect(fromLoopApproval(decision({ processor: "alice@acme", subject: "ap-1", verdict: "stop", message: "the tool is broken" }))).toMatchObject({
      kind: "approval.answered",
      actor: "alice@acme",
      reason: "the tool is broken",
      facts: { approval: "ap-1", answer: "deny" },
    });
    expect(fromLoopApproval(decision({ processor: "loop-deadlines", subject: "ap-1", verdict: "stop" }))?.facts.answer).toBe("deadline_passed");
    expect(fromLoopApproval(decision({ subject: "ap-1", verdict: "allow" }))?.facts.answer).toBe("approve");
    expect(fromLoopApproval(decision({ processor: "loop-escalations", subject: "ap-1", verdict: "wait" }))).toBeNull();
  });

  it("SYS-5 refusals and stops on calls and admissions are recorded with their reasons; allowed ones are not", () => {
    expect(fromCallDecision(decision({ verdict: "refuse", reason_code: "NoProgress", limit: "loops.no_progress", message: "No progress: answer with what you have." }))).toMatchObject({
      kind: "call.refused",
      reason: "No progress: answer with what you have.",
      facts: { reason_code: "NoProgress", limit: "loops.no_progress" },
    });
    expect(fromCallDecision(decision({ verdict: "stop", reason_code: "LoopDetected" }))?.kind).toBe("call.stopped");
    expect(fromCallDecision(decision({ verdict: "allow" }))).toBeNull();
    expect(fromCallDecision(decision({ verdict: "report", reason_code: "possible_loop" }))).toBeNull();
    const refused = fromAdmission(decision({ processor: "limits-model-calls", verdict: "refuse", reason_code: "BudgetExceeded", limit: "tenant.monthly_budget_usd", numbers: { spent: 500 } }));
    expect(refused).toMatchObject({ kind: "admission.refused", reason: "BudgetExceeded", numbers: { spent: 500 } });
    expect(fromAdmission(decision({ verdict: "stop" }))?.kind).toBe("admission.stopped");
    expect(fromAdmission(decision({ verdict: "allow" }))).toBeNull();
  });

  it("SYS-5 a tenant's settings published are recorded with the reason given; other rows are not", () => {
    const rec: ConfigRecord = { kind: "tenant", id: "acme", value: '{"offload":{"default":6000}}', source: "tenants/acme.yaml", reason: "larger results for the review team", ts: 5 };
    const at = { topic: "oz0.config", partition: 0, offset: "17", key: "tenant/acme", timestamp: "5" };
    const entry = fromConfig(rec, at) as AuditEvent;
    expect(entry).toMatchObject({ kind: "tenant.changed", tenant: "acme", reason: "larger results for the review team", facts: { source: "tenants/acme.yaml", settings: rec.value }, ts: 5 });
    expect((fromConfig(rec, at) as AuditEvent).id).toBe(entry.id);
    expect((fromConfig(rec, { ...at, offset: "18" }) as AuditEvent).id).not.toBe(entry.id);
    expect(fromConfig({ ...rec, kind: "agent" }, at)).toBeNull();
  });

  it("SYS-5 a tenant's row removed by a tombstone is recorded; a tombstone with no kind/id key is invalid", async () => {
    const at = { topic: "oz0.config", partition: 0, offset: "20", key: "tenant/acme", timestamp: "1700000000000" };
    expect(fromConfig(null, at)).toMatchObject({ kind: "tenant.removed", tenant: "acme", reason: null, ts: 1_700_000_000_000 });
    expect(fromConfig(null, { ...at, key: "agent/reviewer" })).toBeNull();
    expect(fromConfig(null, { ...at, key: "nonsense" })).toMatchObject({ invalid: expect.stringMatching(/not <kind>\/<id>/) as unknown });

    const log = new MemoryLog();
    const driver = new TestDriver(auditSinkConfig, log);
    await driver.pipeTombstone("tenant/globex");
    await driver.pipeTombstone(null);
    expect(log.entries().map((e) => [e.kind, e.tenant])).toEqual([["tenant.removed", "globex"]]);
    expect(driver.deadLetters.map((d) => d.offset)).toEqual(["1"]);
  });

  it("SYS-5 derived entries keep the IDs of a replay and never take the input's ID as their own", () => {
    const d = decision({ verdict: "refuse" });
    expect(fromCallDecision(d)?.id).toBe(fromCallDecision(d)?.id);
    expect(fromCallDecision(d)?.id).not.toBe(d.id);
  });
});

describe("the audit sink's processors", () => {
  it("SYS-5 hand each batch to the log with one record per input, entries only where there is one", async () => {
    const log = new MemoryLog();
    const driver = new TestDriver(auditSinkCallDecisions, log);
    await driver.pipe([decision({ id: "d1" }), decision({ id: "d2", verdict: "refuse" })], { partition: 2 });
    expect(log.batches).toHaveLength(1);
    expect(log.batches[0]).toMatchObject({ topic: "oz0.call-decisions", partition: 2 });
    expect(log.batches[0]?.records.map((r) => [r.offset, r.entry?.kind ?? null])).toEqual([
      ["0", null],
      ["1", "call.refused"],
    ]);
    expect(driver.emitted).toEqual([]);
  });

  it("SYS-5 keep what oz0.audit carries as it is, and dead-letter an entry with no usable kind", async () => {
    const log = new MemoryLog();
    const driver = new TestDriver(auditSinkAudit, log);
    await driver.pipe([audit({ id: "x1", kind: "loop.acted" }), audit({ id: "x2", kind: "Loop Acted" })]);
    expect(log.entries().map((e) => e.id)).toEqual(["x1"]);
    expect(driver.deadLetters[0]?.reason).toMatch(/not a dotted name/);
  });

  it("SYS-5 read approvals, admissions and the config table", async () => {
    const log = new MemoryLog();
    await new TestDriver(auditSinkLoopApprovals, log).pipe(decision({ subject: "ap-1", verdict: "allow", processor: "bob" }));
    await new TestDriver(auditSinkAdmissions, log).pipe(decision({ verdict: "refuse" }));
    await new TestDriver(auditSinkConfig, log).pipe({ kind: "tenant", id: "acme", value: "{}", source: "", reason: "why", ts: 1 });
    expect(log.entries().map((e) => e.kind)).toEqual(["approval.answered", "admission.refused", "tenant.changed"]);
  });
});

describe("the audit log's objects", () => {
  it("names an object by topic, partition and offset range, and reads the range back", () => {
    const name = objectName({ topic: "oz0.admissions", partition: 4, first: 7n, last: 120n });
    expect(name).toBe("log/oz0.admissions/4/00000000000000000007-00000000000000000120.jsonl");
    expect(name > listAfter("oz0.admissions", 4, 7n)).toBe(true);
    expect(objectName({ topic: "oz0.admissions", partition: 4, first: 6n, last: 9n }) < listAfter("oz0.admissions", 4, 7n)).toBe(true);
    expect(parseObjectName(name)).toEqual({ topic: "oz0.admissions", partition: 4, first: 7n, last: 120n });
    expect(parseObjectName("log/oz0.admissions/4/7-120.jsonl")).toBeNull();
    expect(() => objectName({ topic: "../x", partition: 0, first: 0n, last: 0n })).toThrow(/not a Kafka topic/);
  });

  it("writes JSON lines and reads them back, refusing a line that is not an entry", () => {
    const entries = [audit({ id: "1" }), audit({ id: "2", facts: { plugin: "acme_docs" } })];
    expect(decodeLines(encodeLines(entries).toString("utf8"), "n")).toEqual(entries);
    expect(() => decodeLines('{"id":"1"}\n', "n")).toThrow(/n, line 1: not an audit entry/);
    expect(() => decodeLines("nope\n", "n")).toThrow(/not JSON/);
  });

  it("SYS-5 leaves out of a replayed batch what stored objects cover, writing what lies before and after them", () => {
    const records = ["5", "6", "9", "10", "12"].map((offset) => ({ offset, entry: null }));
    const offsets = (runs: Array<Array<{ offset: string }>>) => runs.map((run) => run.map((r) => r.offset));
    expect(offsets(uncoveredRuns(records, []))).toEqual([["5", "6", "9", "10", "12"]]);
    // A replay from where the earlier attempt started: only what lies past its object.
    expect(offsets(uncoveredRuns(records, [{ topic: "t", partition: 0, first: 5n, last: 9n }]))).toEqual([["10", "12"]]);
    // A replay from an earlier offset: before and after the stored object.
    expect(offsets(uncoveredRuns(records, [{ topic: "t", partition: 0, first: 6n, last: 10n }]))).toEqual([["5"], ["12"]]);
    expect(uncoveredRuns(records, [{ topic: "t", partition: 0, first: 0n, last: 20n }])).toEqual([]);
  });
});

describe("the audit reader", () => {
  const entries = [
    audit({ id: "c", kind: "tenant.changed", tenant: "acme", ts: Date.parse("2026-11-30T10:00:00Z"), reason: "more room" }),
    audit({ id: "a", kind: "approval.decided", tenant: "acme", ts: Date.parse("2026-11-29T10:00:00Z") }),
    audit({ id: "b", kind: "approval.answered", tenant: "globex", ts: Date.parse("2026-11-29T11:00:00Z") }),
    audit({ id: "a", kind: "approval.decided", tenant: "acme", ts: Date.parse("2026-11-29T10:00:00Z") }),
    audit({ id: "k", kind: "kill_switch.thrown", tenant: null, ts: Date.parse("2026-11-30T09:00:00Z"), actor: "ops" }),
  ];

  it("SYS-5 lists entries in time order, each once, by tenant, kind and time", () => {
    expect(selectEntries(entries).map((e) => e.id)).toEqual(["a", "b", "k", "c"]);
    expect(selectEntries(entries, { tenant: "acme" }).map((e) => e.id)).toEqual(["a", "c"]);
    expect(selectEntries(entries, { kind: "approval" }).map((e) => e.id)).toEqual(["a", "b"]);
    expect(selectEntries(entries, { kind: "approval.decided" }).map((e) => e.id)).toEqual(["a"]);
    expect(selectEntries(entries, { kind: "approv" })).toEqual([]);
    expect(selectEntries(entries, { since: Date.parse("2026-11-30T00:00:00Z") }).map((e) => e.id)).toEqual(["k", "c"]);
  });

  it("SYS-5 shows each entry on one line with who, the reason and the facts", () => {
    const text = formatEntries(selectEntries(entries, { since: Date.parse("2026-11-30T00:00:00Z") }));
    expect(text.split("\n")).toEqual(["2026-11-30T09:00:00.000Z  kill_switch.thrown  cluster, by ops", "2026-11-30T10:00:00.000Z  tenant.changed  tenant acme: more room", ""]);
    expect(formatEntries([])).toMatch(/no audit entries match/);
  });

  it("SYS-5 LOOP-9 counts loops acted on per day, tenant, plugin and tool from loop.acted entries", () => {
    const acted = (id: string, at: string, tenant: string, tool: string, facts: Record<string, string> = {}) =>
      audit({ id, kind: "loop.acted", tenant, ts: Date.parse(at), facts: { plugin: "acme_docs", tool, ...facts } });
    const counts = loopCounts([
      acted("1", "2026-11-29T23:59:00Z", "acme", "search"),
      acted("2", "2026-11-30T00:01:00Z", "acme", "search"),
      acted("3", "2026-11-30T08:00:00Z", "acme", "search"),
      acted("4", "2026-11-30T08:00:00Z", "globex", "search"),
      acted("5", "2026-11-30T09:00:00Z", "acme", "fetch", { day: "2026-11-29" }),
      audit({ id: "6", kind: "approval.decided", ts: Date.parse("2026-11-30T09:00:00Z") }),
    ]);
    expect(counts).toEqual([
      { day: "2026-11-29", tenant: "acme", plugin: "acme_docs", tool: "fetch", loops: 1 },
      { day: "2026-11-29", tenant: "acme", plugin: "acme_docs", tool: "search", loops: 1 },
      { day: "2026-11-30", tenant: "acme", plugin: "acme_docs", tool: "search", loops: 2 },
      { day: "2026-11-30", tenant: "globex", plugin: "acme_docs", tool: "search", loops: 1 },
    ]);
    expect(formatLoopCounts(counts)).toMatch(/2026-11-30 +acme +acme_docs +search +2/);
  });

  it("reads the lock mode and retention from the environment, refusing what makes no sense", () => {
    expect(lockModeFromEnv({})).toBe("COMPLIANCE");
    expect(lockModeFromEnv({ OZ0_AUDIT_LOCK_MODE: "governance" })).toBe("GOVERNANCE");
    expect(() => lockModeFromEnv({ OZ0_AUDIT_LOCK_MODE: "loose" })).toThrow(/neither COMPLIANCE nor GOVERNANCE/);
    expect(retentionDaysFromEnv({})).toBe(365);
    expect(retentionDaysFromEnv({ OZ0_AUDIT_RETENTION_DAYS: "30" })).toBe(30);
    expect(() => retentionDaysFromEnv({ OZ0_AUDIT_RETENTION_DAYS: "0.5" })).toThrow(/whole number/);
  });
});
