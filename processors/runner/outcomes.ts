/**
 * What kind of decision an output is, for counting: a decision's verdict, a delivered result,
 * and a result fitted or offloaded (told by the trace entry the fit processor writes beside
 * it). Other outputs (loop findings, audit entries) are not decisions and count as none.
 */
import { topic } from "../../topology/topics.ts";
import type { Emit } from "./processor.ts";

export type OutcomeKind = "allow" | "wait" | "stop" | "refuse" | "report" | "delivered" | "fitted" | "offloaded";

export const OUTCOME_KINDS: readonly OutcomeKind[] = ["allow", "wait", "stop", "refuse", "report", "delivered", "fitted", "offloaded"];

/** Trace sections of the fit processor (`FIT_SECTION`, `OFFLOAD_SECTION`); a unit test keeps them equal. */
export const FITTED_SECTION = "Results fitted to a budget";
export const OFFLOADED_SECTION = "Results offloaded";

const VERDICTS = new Set<string>(["allow", "wait", "stop", "refuse", "report"]);

export function outcomeKind(e: Pick<Emit, "to" | "value">): OutcomeKind | undefined {
  const schema = topic(e.to).schema;
  const v = e.value as Record<string, unknown>;
  if (schema === "Decision") return typeof v.verdict === "string" && VERDICTS.has(v.verdict) ? (v.verdict as OutcomeKind) : undefined;
  if (schema === "ResultDelivered") return "delivered";
  if (schema === "TraceEntry") {
    if (v.section === FITTED_SECTION) return "fitted";
    if (v.section === OFFLOADED_SECTION) return "offloaded";
  }
  return undefined;
}
