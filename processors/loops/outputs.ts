/**
 * The events the loop processors emit: decisions on `oz0.call-decisions`, findings on
 * `oz0.trace` and loops acted on on `oz0.audit` (never content: functions, detectors and
 * numbers only), failed results on `oz0.results-delivered` for calls that are not made, and
 * the words the model and people read.
 */
import type { AuditEvent, Decision, ResultDelivered, TraceEntry, Verdict } from "../../schemas/types.ts";
import type { Emit } from "../runner/processor.ts";
import { deriveId } from "../runner/ids.ts";

/** What a loop decision is about: a call, or the result of one. */
export interface Subject {
  readonly id: string;
  readonly tenant: string;
  readonly tree_id: string;
  readonly job_id: string;
  readonly run_id: string;
  readonly call_id: string;
  readonly ts: number;
}

export const TRACE_SECTION = "Loop findings";

export interface DecisionParts {
  readonly verdict: Verdict;
  readonly reason_code?: string | null;
  readonly limit?: string | null;
  readonly numbers?: Record<string, number>;
  readonly message?: string;
  readonly evidence?: unknown;
}

export function decision(processor: string, s: Subject, parts: DecisionParts): Emit {
  const value: Decision = {
    id: deriveId(processor, s.id),
    input_id: s.id,
    processor,
    tenant: s.tenant,
    tree_id: s.tree_id,
    job_id: s.job_id,
    run_id: s.run_id,
    subject: s.call_id,
    verdict: parts.verdict,
    reason_code: parts.reason_code ?? null,
    limit: parts.limit ?? null,
    numbers: parts.numbers ?? {},
    message: parts.message ?? "",
    evidence: parts.evidence === undefined ? null : JSON.stringify(parts.evidence),
    ts: s.ts,
  };
  return { to: "oz0.call-decisions", key: s.run_id, value };
}

export function finding(processor: string, s: Subject, facts: Record<string, string>, numbers: Record<string, number>): Emit {
  const value: TraceEntry = {
    id: deriveId(processor, "trace", s.id),
    processor,
    tenant: s.tenant,
    tree_id: s.tree_id,
    job_id: s.job_id,
    run_id: s.run_id,
    section: TRACE_SECTION,
    subject: s.call_id,
    facts,
    numbers,
    ts: s.ts,
  };
  return { to: "oz0.trace", key: s.tree_id, value };
}

/** A call a loop decision is about, with what it calls. */
export interface CallSubject extends Subject {
  readonly plugin: string;
  readonly tool: string;
  readonly function: string;
}

/**
 * LOOP-7 (and every call refused or stopped): the call is not made, so the model reads the
 * words as the call's result, a failed one, as `fit-results` delivers results.
 */
export function refusedResult(processor: string, s: CallSubject, words: string): Emit {
  const value: ResultDelivered = {
    id: deriveId(processor, "result", s.id),
    input_id: s.id,
    processor,
    tenant: s.tenant,
    tree_id: s.tree_id,
    job_id: s.job_id,
    run_id: s.run_id,
    call_id: s.call_id,
    plugin: s.plugin,
    tool: s.tool,
    function: s.function,
    is_error: true,
    content: JSON.stringify({ content: [{ type: "text", text: words }], isError: true }),
    truncated: false,
    fit: null,
    ts: s.ts,
  };
  return { to: "oz0.results-delivered", key: s.run_id, value };
}

/** LOOP-9: a loop acted on, for the audit log: tenant, plugin, tool, detector, day and what was done; never arguments or content. */
export function loopActed(processor: string, s: Subject & { readonly plugin: string; readonly tool: string }, facts: { readonly detector: string; readonly day: string; readonly action: string }): Emit {
  const value: AuditEvent = {
    id: deriveId(processor, "audit", s.id),
    kind: "loop.acted",
    tenant: s.tenant,
    tree_id: s.tree_id,
    job_id: s.job_id,
    actor: processor,
    reason: null,
    facts: { plugin: s.plugin, tool: s.tool, detector: facts.detector, day: facts.day, action: facts.action },
    numbers: {},
    ts: s.ts,
  };
  return { to: "oz0.audit", key: s.tenant, value };
}

/** LOOP-7: what the result that crossed the line says, and every later call is refused with. */
export function finishOnlyWords(results: number): string {
  return `No progress: the last ${results} tool results added nothing new (empty, seen before, or the same error again). Every tool but the answer is withdrawn for the rest of this run: answer with what you have.`;
}

export function loopWords(detector: string, fn: string, count: number): string {
  if (detector === "cycles") return `The same sequence of calls came ${count} times in a row, ending with ${fn}: a loop.`;
  return `${fn} was called ${count} times with the same arguments: a loop.`;
}
