/**
 * What the audit log records from each topic the audit sink reads, as AuditEvents. Everything
 * on `oz0.audit` is kept as it is; from the other topics the sink derives the entries a person
 * may have to answer for: approvals asked, answered and decided, refusals and stops, tenant
 * setting changes with their reasons. Never content: no arguments, no evidence, no results.
 * Each derived entry's ID comes from its input, so a replay derives the same entry.
 */
import type { AuditEvent, ConfigRecord, Decision } from "../../schemas/types.ts";
import { deriveId } from "../runner/ids.ts";

const SINK = "audit-sink";
/** Who answers a loop's approval when nobody did by its deadline (processors/loops/deadlines.ts). */
const DEADLINES = "loop-deadlines";
/** The processor that turns an answer into the decision about the held call. */
const APPROVALS = "loop-approvals";

/** Where a record sits in Kafka: the ID of an input that carries none of its own. */
export interface RecordAt {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

function nonEmpty(entries: Record<string, string | null | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(entries)) if (v !== null && v !== undefined && v !== "") out[k] = v;
  return out;
}

function evidenceOf(d: Decision): Record<string, unknown> {
  if (!d.evidence) return {};
  try {
    const parsed: unknown = JSON.parse(d.evidence);
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The approval a loop decision is about: from its evidence, else from the words the loop processors write ("(approval <id>"). */
function approvalOf(d: Decision): string | null {
  const approval = evidenceOf(d).approval;
  if (approval && typeof approval === "object" && "id" in approval && typeof approval.id === "string") return approval.id;
  return /\(approval ([^\s,)]+)/.exec(d.message)?.[1] ?? null;
}

function fromDecision(d: Decision, kind: string, over: Partial<AuditEvent> = {}, facts: Record<string, string | null> = {}): AuditEvent {
  return {
    id: deriveId(SINK, kind, d.id),
    kind,
    tenant: d.tenant || null,
    tree_id: d.tree_id || null,
    job_id: d.job_id || null,
    actor: d.processor,
    reason: d.message || d.reason_code || null,
    facts: nonEmpty({ subject: d.subject, verdict: d.verdict, reason_code: d.reason_code, limit: d.limit, run_id: d.run_id, decision: d.id, ...facts }),
    numbers: { ...d.numbers },
    ts: d.ts,
    ...over,
  };
}

/** An entry published for the audit log, kept as it is. */
export function fromAuditTopic(e: AuditEvent): AuditEvent {
  return e;
}

/**
 * A decision about a tool call: a loop waiting for approval (`approval.requested`), an
 * approval escalated a step (`approval.escalated`), the outcome of an approval
 * (`approval.decided`), a refusal or stop (`call.refused`, `call.stopped`). Allowed calls and
 * reported findings leave no entry.
 */
export function fromCallDecision(d: Decision): AuditEvent | null {
  if (d.processor === APPROVALS && d.verdict === "wait") {
    const escalation = evidenceOf(d).escalation as { to?: unknown } | undefined;
    return fromDecision(d, "approval.escalated", { reason: d.message || null }, { approval: approvalOf(d), to: typeof escalation?.to === "string" ? escalation.to : null });
  }
  if (d.processor === APPROVALS) {
    const evidence = evidenceOf(d);
    const answeredBy = evidence.answered_by;
    // Closed with the job's end (processors/loops/closing.ts): the reason code is the job's ending.
    const closed = evidence.closed !== undefined && evidence.closed !== null;
    const outcome = d.verdict === "allow" ? "approved" : closed ? "closed" : answeredBy === DEADLINES ? "deadline_passed" : "denied";
    return fromDecision(d, "approval.decided", {}, { approval: approvalOf(d), outcome, answered_by: typeof answeredBy === "string" ? answeredBy : null, ...(closed ? { ending: d.reason_code } : {}) });
  }
  if (d.verdict === "wait") return fromDecision(d, "approval.requested", { reason: d.reason_code }, { approval: approvalOf(d) });
  if (d.verdict === "refuse") return fromDecision(d, "call.refused");
  if (d.verdict === "stop") return fromDecision(d, "call.stopped");
  return null;
}

/** A model call or child refused (`admission.refused`) or stopped (`admission.stopped`); admissions leave no entry. */
export function fromAdmission(d: Decision): AuditEvent | null {
  if (d.verdict === "refuse") return fromDecision(d, "admission.refused");
  if (d.verdict === "stop") return fromDecision(d, "admission.stopped");
  return null;
}

/**
 * An answer to a loop's approval (`approval.answered`): who answered, and what. The first
 * answer wins; `approval.decided` says which did. A step of the escalation ladder (verdict
 * `wait`) is no answer: its effect is recorded as `approval.escalated`.
 */
export function fromLoopApproval(d: Decision): AuditEvent | null {
  if (d.verdict === "wait") return null;
  const answer = d.verdict === "allow" ? "approve" : d.processor === DEADLINES ? (d.reason_code === "ApprovalClosed" ? "closed" : "deadline_passed") : "deny";
  return fromDecision(d, "approval.answered", { reason: d.message || null }, { approval: d.subject, answer, subject: null });
}

/**
 * A tenant's settings published (`tenant.changed`) with the reason given, or removed by a
 * tombstone (`tenant.removed`, from `npm run config -- publish --prune`); other rows leave no
 * entry. A tombstone whose key is not `<kind>/<id>` is invalid.
 */
export function fromConfig(rec: ConfigRecord | null, at: RecordAt & { readonly key: string | null; readonly timestamp: string }): AuditEvent | null | { invalid: string } {
  let tenant: string;
  if (rec === null) {
    const m = /^([a-z_]+)\/(.+)$/.exec(at.key ?? "");
    if (!m) return { invalid: `a tombstone on ${at.topic} has the key ${JSON.stringify(at.key)}, not <kind>/<id>: no row can be removed by it` };
    if (m[1] !== "tenant") return null;
    tenant = m[2] as string;
  } else {
    if (rec.kind !== "tenant") return null;
    tenant = rec.id;
  }
  const kind = rec === null ? "tenant.removed" : "tenant.changed";
  return {
    id: deriveId(SINK, kind, at.topic, at.partition, at.offset),
    kind,
    tenant,
    tree_id: null,
    job_id: null,
    actor: null,
    reason: rec?.reason ?? null,
    facts: rec ? nonEmpty({ source: rec.source, settings: rec.value }) : {},
    numbers: {},
    ts: rec?.ts ?? (Number(at.timestamp) || 0),
  };
}
