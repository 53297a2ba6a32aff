/**
 * The audit sink (SYS-5): one processor per topic the audit log is made of, each appending its
 * batch's entries to the log (`AuditSinkEnv.append`) and emitting nothing. The runner commits
 * the batch's offsets after the append; a replay of the batch finds its object already there.
 *
 * | processor | reads | records |
 * | --- | --- | --- |
 * | `audit-sink-audit` | `oz0.audit` | every entry, as published |
 * | `audit-sink-call-decisions` | `oz0.call-decisions` | approvals asked and decided, calls refused or stopped |
 * | `audit-sink-loop-approvals` | `oz0.loop-approvals` | every answer to an approval, with who gave it |
 * | `audit-sink-admissions` | `oz0.admissions` | model calls and children refused or stopped |
 * | `audit-sink-config` | `oz0.config` | tenant settings published, with their reason |
 */
import type { AuditEvent, ConfigRecord, Decision } from "../../schemas/types.ts";
import type { TopicName } from "../../topology/topics.ts";
import { defineProcessor, type InputRecord, type Outcome, type Processor } from "../runner/processor.ts";
import { fromAdmission, fromAuditTopic, fromCallDecision, fromConfig, fromLoopApproval } from "./derive.ts";
import type { AuditRecord } from "./store.ts";

export interface AuditSinkEnv {
  /** Appends one partition's batch, records in offset order; the same batch again adds nothing. */
  append(topic: string, partition: number, records: readonly AuditRecord[]): Promise<unknown>;
}

type Derived = AuditEvent | null | { readonly invalid: string };

function auditSink<T>(name: string, input: TopicName, derive: (r: InputRecord<T>) => Derived, reading: Pick<Processor<T, AuditSinkEnv>, "validate" | "readsTombstones"> = {}): Processor<T, AuditSinkEnv> {
  return defineProcessor<T, AuditSinkEnv>({
    name,
    input,
    outputs: [],
    ...reading,
    async process(records, env): Promise<Outcome[]> {
      const derived = records.map(derive);
      const first = records[0];
      const entry = (d: Derived): AuditEvent | null => (d === null || "invalid" in d ? null : d);
      if (first) await env.append(first.topic, first.partition, records.map((r, i) => ({ offset: r.offset, entry: entry(derived[i] ?? null) })));
      return derived.map((d) => (d !== null && "invalid" in d ? { invalid: d.invalid } : { emits: [] }));
    },
  });
}

function checkAuditEvent(e: AuditEvent): string[] {
  const reasons: string[] = [];
  if (!e.id) reasons.push("id is empty: an audit entry's ID is derived from the input it records, so a replay writes the same entry");
  if (!/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/.test(e.kind)) reasons.push(`kind ${JSON.stringify(e.kind)} is not a dotted name such as job.files_handed`);
  if (!(e.ts > 0)) reasons.push(`ts is ${e.ts}: an audit entry says when it happened`);
  return reasons;
}

export const auditSinkAudit = auditSink<AuditEvent>("audit-sink-audit", "oz0.audit", (r) => fromAuditTopic(r.value), { validate: checkAuditEvent });
export const auditSinkCallDecisions = auditSink<Decision>("audit-sink-call-decisions", "oz0.call-decisions", (r) => fromCallDecision(r.value));
export const auditSinkLoopApprovals = auditSink<Decision>("audit-sink-loop-approvals", "oz0.loop-approvals", (r) => fromLoopApproval(r.value));
export const auditSinkAdmissions = auditSink<Decision>("audit-sink-admissions", "oz0.admissions", (r) => fromAdmission(r.value));
// `npm run config -- publish --prune` removes a row with a tombstone: for a tenant, that is an entry too.
export const auditSinkConfig = auditSink<ConfigRecord | null>("audit-sink-config", "oz0.config", (r) => fromConfig(r.value, r), { readsTombstones: true });
