/**
 * A job's trace as a person reads it: the trace entries of its steps, grouped under their
 * sections, and the decisions about its calls, model calls and children. Entries carry numbers
 * and words, never content (FIT-14, OFF-11).
 */
import type { Decision, TraceEntry } from "../schemas/types.ts";

export interface JobTrace {
  readonly jobId: string;
  readonly entries: readonly TraceEntry[];
  readonly decisions: readonly Decision[];
}

function words(record: Readonly<Record<string, string | number>>): string {
  return Object.entries(record)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
}

/** The trace as text: one block per section in the order sections first appear, then decisions. */
export function formatTrace(trace: JobTrace): string {
  const lines: string[] = [`Trace of job ${trace.jobId}`];
  const sections = new Map<string, TraceEntry[]>();
  for (const e of [...trace.entries].sort((a, b) => a.ts - b.ts)) {
    const list = sections.get(e.section) ?? [];
    list.push(e);
    sections.set(e.section, list);
  }
  for (const [section, entries] of sections) {
    lines.push("", `${section} (${entries.length})`);
    for (const e of entries) lines.push(`  ${e.subject}: ${words({ ...e.facts, ...e.numbers })}`);
  }
  const decisions = [...trace.decisions].sort((a, b) => a.ts - b.ts);
  if (decisions.length > 0) {
    lines.push("", `Decisions (${decisions.length})`);
    for (const d of decisions) {
      const why = [d.reason_code, d.limit].filter(Boolean).join(" ");
      lines.push(`  ${d.processor} ${d.verdict} ${d.subject}${why ? ` (${why})` : ""}${d.message ? `: ${d.message}` : ""}`);
    }
  }
  if (sections.size === 0 && decisions.length === 0) lines.push("", "nothing recorded for this job");
  return `${lines.join("\n")}\n`;
}
