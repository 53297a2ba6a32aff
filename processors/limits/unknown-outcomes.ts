/**
 * LIM-11: a job whose outcome cannot be known (an `ended` event with `outcome: "unknown"`) and
 * whose `on_unknown` resolves to wait, waits for a person as an approval of kind `unknown`
 * (`u-...`). `limits-jobs` decides the wait and keeps the request (`UnknownOutcomeStore`, store.ts);
 * `oz0 approval list --kind unknown` shows it; a person answers it with `oz0 approval approve
 * <job> u-... --outcome happened|run_again` or `oz0 approval deny <job> u-...` (stop). The answer
 * is the person's own act, applied by the command as a budget request's is: kept once (the first
 * answer holds), then published on `oz0.admissions` for the job and on `oz0.audit`:
 *
 *   happened   allow, reason `happened`: what the job did happened; the runtime goes on from it
 *   run_again  allow, reason `run_again`: the runtime runs the job's work again (as a new job:
 *              the ended one stays ended, standing.ts)
 *   stop       stop, reason `unknown_outcome`: the job fails with unknown_outcome
 *
 * Nobody answering by the deadline (the tenant's `approvals.deadline`, else `loop_deadline`,
 * else a day) is a stop with `unknown_outcome`, published by the pipeline's timer
 * (`unknown-deadlines.ts`). Pure: the processor, the command and the timer call these.
 */
import type { TenantSettings } from "../../config/tenant.ts";
import type { AuditEvent, Decision } from "../../schemas/types.ts";
import { deriveId } from "../runner/ids.ts";

export const UNKNOWN_OUTCOME_REASON = "unknown_outcome";

/** When the tenant sets no deadline for approvals: an unknown outcome waits a day for a person. */
export const DEFAULT_UNKNOWN_DEADLINE_MS = 24 * 60 * 60 * 1000;

/** Who answers when nobody did by the deadline. */
export const UNKNOWN_DEADLINES = "unknown-deadlines";

/** What a person may answer. */
export const UNKNOWN_OUTCOMES = ["happened", "run_again", "stop"] as const;
export type UnknownOutcome = (typeof UNKNOWN_OUTCOMES)[number];

/** A job's unknown outcome waiting for a person, as `limits-jobs` keeps it and `oz0 approval list` shows it. */
export interface UnknownOutcomeRequest {
  readonly approval: string;
  readonly kind: "unknown";
  readonly tenant: string;
  readonly tree_id: string;
  readonly job_id: string;
  readonly run_id: string | null;
  readonly message: string;
  /** The wait decision's ID, and when it was decided (epoch ms). */
  readonly decision_id: string;
  readonly asked_at: number;
  /** When nobody answering stops the job with unknown_outcome (epoch ms). */
  readonly deadline: number;
}

/** How it was answered, as kept: the first answer holds. */
export interface UnknownOutcomeAnswer {
  readonly outcome: UnknownOutcome;
  /** `person:<name>`, or `unknown-deadlines` when the deadline passed. */
  readonly by: string;
  readonly comment: string | null;
  readonly at: number;
}

export function unknownApproval(decisionId: string): string {
  return `u-${deriveId("unknown-outcome", decisionId).slice(0, 12)}`;
}

export const isUnknownApproval = (approval: string): boolean => approval.startsWith("u-");

/** The tenant's deadline for approvals (`approvals.deadline`, else `loop_deadline`), else a day. */
export function unknownDeadlineMs(tenant: Pick<TenantSettings, "approvals" | "loop_deadline"> | undefined): number {
  return tenant?.approvals?.deadline ?? tenant?.loop_deadline ?? DEFAULT_UNKNOWN_DEADLINE_MS;
}

/** The request a wait decision about an unknown outcome makes, or null for any other decision. */
export function unknownRequestOf(d: Decision, deadlineMs: number): UnknownOutcomeRequest | null {
  if (d.verdict !== "wait" || d.reason_code !== UNKNOWN_OUTCOME_REASON) return null;
  return {
    approval: unknownApproval(d.id),
    kind: "unknown",
    tenant: d.tenant,
    tree_id: d.tree_id,
    job_id: d.job_id,
    run_id: d.run_id,
    message: d.message,
    decision_id: d.id,
    asked_at: d.ts,
    deadline: d.ts + deadlineMs,
  };
}

/** The wait decision, naming its approval and deadline, so the runtime and people can refer to it. */
export function withUnknownApproval(d: Decision, r: UnknownOutcomeRequest): Decision {
  const deadline = new Date(r.deadline).toISOString();
  return {
    ...d,
    numbers: { ...d.numbers, deadline: r.deadline },
    message: `${d.message} It waits as approval ${r.approval} (kind unknown): oz0 approval approve ${r.job_id} ${r.approval} --outcome happened|run_again, or oz0 approval deny ${r.job_id} ${r.approval} to stop it. No answer by ${deadline} stops it with unknown_outcome.`,
    evidence: JSON.stringify({ approval: { id: r.approval, kind: "unknown", deadline } }),
  };
}

/** The outcome `--outcome` names, or why it cannot be taken; `deny` is a stop. */
export function outcomeOf(verb: "approve" | "deny", given: string | undefined): { outcome: UnknownOutcome } | { problem: string } {
  if (verb === "deny") return given === undefined || given === "stop" ? { outcome: "stop" } : { problem: `deny stops the job; --outcome ${given} goes with approve` };
  if (given === undefined) return { problem: "say what the job's outcome is: --outcome happened (it happened) or --outcome run_again (run it again); deny stops it" };
  if (given === "rerun") return { outcome: "run_again" };
  const known = UNKNOWN_OUTCOMES.find((o) => o === given);
  return known === undefined ? { problem: `--outcome ${given}: give happened, run_again or stop` } : { outcome: known };
}

function words(r: UnknownOutcomeRequest, a: UnknownOutcomeAnswer): string {
  const comment = a.comment ? `: ${a.comment}` : "";
  if (a.by === UNKNOWN_DEADLINES) return `Nobody decided on the unknown outcome of job ${r.job_id} (approval ${r.approval}) by ${new Date(r.deadline).toISOString()}: the job fails with unknown_outcome.`;
  if (a.outcome === "happened") return `A person decided that the outcome of job ${r.job_id} happened (approval ${r.approval})${comment}. Go on from it.`;
  if (a.outcome === "run_again") return `A person decided that job ${r.job_id} runs again (approval ${r.approval})${comment}. Run its work again.`;
  return `A person stopped job ${r.job_id}, whose outcome cannot be known (approval ${r.approval})${comment}. The job fails with unknown_outcome.`;
}

/** The answer on `oz0.admissions`, addressed as the wait was: one ID per approval, whoever answered. */
export function unknownAnswerDecision(r: UnknownOutcomeRequest, a: UnknownOutcomeAnswer): Decision {
  return {
    id: deriveId("unknown-answer", r.approval),
    input_id: r.decision_id,
    processor: a.by,
    tenant: r.tenant,
    tree_id: r.tree_id,
    job_id: r.job_id,
    run_id: r.run_id,
    subject: r.job_id,
    verdict: a.outcome === "stop" ? "stop" : "allow",
    reason_code: a.outcome === "stop" ? UNKNOWN_OUTCOME_REASON : a.outcome,
    limit: "on_unknown",
    numbers: { deadline: r.deadline },
    message: words(r, a),
    evidence: JSON.stringify({ approval: { id: r.approval, kind: "unknown" }, outcome: a.outcome, answered_by: a.by }),
    ts: a.at,
  };
}

/** The answer on `oz0.audit` (`approval.answered`, kind unknown): who answered, what, and why. */
export function unknownAuditEntry(r: UnknownOutcomeRequest, a: UnknownOutcomeAnswer): AuditEvent {
  return {
    id: deriveId("unknown-answer", "audit", r.approval),
    kind: "approval.answered",
    tenant: r.tenant,
    tree_id: r.tree_id,
    job_id: r.job_id,
    actor: a.by.replace(/^person:/, ""),
    reason: a.comment ?? (a.by === UNKNOWN_DEADLINES ? "nobody decided by the deadline" : null),
    facts: { approval: r.approval, kind: "unknown", answer: a.by === UNKNOWN_DEADLINES ? "deadline_passed" : a.outcome, limit: "on_unknown" },
    numbers: { deadline: r.deadline },
    ts: a.at,
  };
}

/** What the command says once an answer holds. */
export function answeredWords(r: UnknownOutcomeRequest, a: UnknownOutcomeAnswer): string {
  const who = a.by.replace(/^person:/, "");
  if (a.outcome === "happened") return `approved ${r.approval} as ${who}: job ${r.job_id}'s outcome happened`;
  if (a.outcome === "run_again") return `approved ${r.approval} as ${who}: job ${r.job_id} runs again`;
  return `denied ${r.approval} as ${who}: job ${r.job_id} fails with unknown_outcome`;
}

function ago(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  const text = s < 90 ? `${s}s` : s < 5400 ? `${Math.round(s / 60)}m` : s < 172_800 ? `${Math.round(s / 3600)}h` : `${Math.round(s / 86_400)}d`;
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}

/** `oz0 approval list`'s lines for unknown outcomes, soonest deadline first. */
export function formatUnknownOutcomes(rs: readonly UnknownOutcomeRequest[], now: number): string {
  return [...rs]
    .sort((a, b) => a.deadline - b.deadline || a.approval.localeCompare(b.approval))
    .map(
      (r) =>
        `${r.approval}  unknown  job ${r.job_id}  tenant ${r.tenant}\n` +
        `  asked ${new Date(r.asked_at).toISOString()}, deadline ${new Date(r.deadline).toISOString()} (${ago(r.deadline - now)}): no answer stops it with unknown_outcome (on_unknown, LIM-11)\n` +
        `  the job's outcome cannot be known: did it happen, does it run again, or does it stop?\n` +
        `  answer: oz0 approval approve ${r.job_id} ${r.approval} --outcome happened|run_again   or   oz0 approval deny ${r.job_id} ${r.approval} (stop)\n`,
    )
    .join("");
}
