/**
 * Budget requests (LIM-7, LIM-8, LIM-10): a model call or a child that waits for a person
 * (`on_budget: wait` at the tree's budget, the forecast's request before the wall, a spent
 * monthly quota) waits as an approval of kind budget. The limits processors keep each request
 * with its tree's state when they decide the wait, and a person answers it with `oz0 approval
 * approve|deny`: approving raises the tree's budget (for the budget and the forecast) and lets
 * the job ask again; denying fails it with BudgetExceeded. Pure: the processors and the command
 * keep and read the requests through the limits store.
 */
import type { Decision } from "../../schemas/types.ts";
import { deriveId } from "../runner/ids.ts";
import { microsToUsd } from "./money.ts";

/** The waits a person answers as a budget request, by reason code. */
export const BUDGET_WAIT_REASONS: ReadonlySet<string> = new Set(["BudgetExceeded", "budget_forecast", "quota_exceeded"]);

/** A wait for a person about spending, as the limits processors keep it and `oz0 approval list` shows it. */
export interface BudgetRequest {
  readonly approval: string;
  readonly kind: "budget";
  readonly tenant: string;
  readonly tree_id: string;
  /** The job the wait decision was addressed to (the parent, for a child). */
  readonly job_id: string;
  readonly run_id: string | null;
  /** What waits: the model request ID, or the child's job ID. */
  readonly subject: string;
  readonly reason_code: string;
  readonly limit: string;
  readonly message: string;
  readonly numbers: Readonly<Record<string, number>>;
  /** The wait decision's ID, and when it was decided (epoch ms). */
  readonly decision_id: string;
  readonly asked_at: number;
}

/** How a budget request was answered, as the tree's state keeps it. */
export interface BudgetAnswer {
  readonly answer: "approved" | "denied";
  /** The person, as `person:<name>`. */
  readonly by: string;
  /** The tree's budget after the answer, micro-dollars; -1 when it was not raised. */
  readonly budget: number;
  readonly at: number;
}

export function budgetApproval(decisionId: string): string {
  return `b-${deriveId("budget-request", decisionId).slice(0, 12)}`;
}

export const isBudgetApproval = (approval: string): boolean => approval.startsWith("b-");

/** The request a wait decision makes, or null for any other decision. */
export function budgetRequestOf(d: Decision): BudgetRequest | null {
  if (d.verdict !== "wait" || d.reason_code === null || !BUDGET_WAIT_REASONS.has(d.reason_code)) return null;
  return {
    approval: budgetApproval(d.id),
    kind: "budget",
    tenant: d.tenant,
    tree_id: d.tree_id,
    job_id: d.job_id,
    run_id: d.run_id,
    subject: d.subject,
    reason_code: d.reason_code,
    limit: d.limit ?? "",
    message: d.message,
    numbers: d.numbers,
    decision_id: d.id,
    asked_at: d.ts,
  };
}

/** The wait decision, naming its approval in its evidence, so the runtime and people can refer to it. */
export function withApproval(d: Decision, r: BudgetRequest): Decision {
  return { ...d, evidence: JSON.stringify({ approval: { id: r.approval, kind: "budget" } }) };
}

/** Why a person's answer cannot be taken as given, or null when it can. */
export function answerProblem(r: BudgetRequest, verdict: "allow" | "stop", budget: number | null, treeBudget: number): string | null {
  if (verdict === "stop") return budget === null ? null : "--budget goes with approve, not deny";
  if (r.reason_code === "quota_exceeded") {
    return budget === null ? null : `a monthly quota waits on ${r.limit}, not on the tree's budget: raise it with oz0 quota set, then approve without --budget`;
  }
  if (budget === null) return r.reason_code === "BudgetExceeded" ? `give the tree a larger budget: --budget USD, above its $${microsToUsd(treeBudget).toFixed(2)}` : null;
  if (treeBudget >= 0 && budget <= treeBudget) return `--budget $${microsToUsd(budget).toFixed(2)} is not above the tree's budget of $${microsToUsd(treeBudget).toFixed(2)}`;
  return null;
}

/**
 * A person's answer on `oz0.admissions`, addressed as the wait was: approving says the job may
 * ask again (the tree's budget raised, when it was), denying stops it with BudgetExceeded.
 */
export function budgetAnswerDecision(r: BudgetRequest, a: { verdict: "allow" | "stop"; person: string; comment?: string; budget: number | null; now: number }): Decision {
  const raised = a.budget === null ? "" : ` The tree's budget is now $${microsToUsd(a.budget).toFixed(2)}.`;
  const comment = a.comment ? `: ${a.comment}` : "";
  const message =
    a.verdict === "allow"
      ? `A person approved the budget request (approval ${r.approval})${comment}.${raised} Ask again: the call is checked anew.`
      : `A person denied the budget request (approval ${r.approval})${comment}. The job fails with BudgetExceeded.`;
  return {
    id: deriveId("budget-answer", r.approval),
    input_id: r.decision_id,
    processor: `person:${a.person}`,
    tenant: r.tenant,
    tree_id: r.tree_id,
    job_id: r.job_id,
    run_id: r.run_id,
    subject: r.subject,
    verdict: a.verdict,
    reason_code: a.verdict === "allow" ? "BudgetApproved" : "BudgetExceeded",
    limit: r.limit,
    numbers: a.budget === null ? {} : { budget_usd: microsToUsd(a.budget) },
    message,
    evidence: JSON.stringify({ approval: { id: r.approval, kind: "budget" }, answered_by: `person:${a.person}` }),
    ts: a.now,
  };
}

/** `oz0 approval list`'s lines for budget requests, soonest first. */
export function formatBudgetRequests(rs: readonly BudgetRequest[], now: number): string {
  return rs
    .map((r) => {
      const ago = Math.max(0, Math.round((now - r.asked_at) / 1000));
      return `${r.approval}  budget  tenant ${r.tenant}  job ${r.job_id}  ${r.reason_code} (${r.limit})  waiting ${ago}s\n    ${r.message}\n    answer: oz0 approval approve ${r.job_id} ${r.approval}${r.reason_code === "quota_exceeded" ? "" : " --budget USD"}  |  oz0 approval deny ${r.job_id} ${r.approval}\n`;
    })
    .join("");
}
