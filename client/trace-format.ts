/**
 * A job's trace as a person reads it: the trace entries of its steps, grouped under their
 * sections, and the decisions about its calls, model calls and children. Entries carry numbers
 * and words, never content (FIT-14, OFF-11).
 */
import type { JobEvent, TraceEntry } from "../schemas/types.ts";
import type { JobTrace } from "../schemas/trace.ts";

export type { JobTrace };

export const JOB_END_SECTION = "How the job ended";

function iso(ts: number): string {
  return new Date(ts).toISOString();
}

/** How the job ended, or that it has not yet; nothing when no start or end was recorded. */
function jobEnd(jobs: readonly JobEvent[]): string[] {
  const ended = jobs.filter((j) => j.kind === "ended").sort((a, b) => a.ts - b.ts);
  const started = jobs.find((j) => j.kind === "started");
  const end = ended[ended.length - 1];
  if (end) return [`  ${end.outcome ?? "ended, no outcome given"} at ${iso(end.ts)}${started ? ` (started by ${started.started_by} at ${iso(started.ts)})` : ""}`];
  if (started) return [`  not ended yet (started by ${started.started_by} at ${iso(started.ts)})`];
  return [];
}

function words(record: Readonly<Record<string, string | number>>): string {
  return Object.entries(record)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
}

/** The trace as text: one block per section in the order sections first appear, then decisions, then how the job ended. */
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
  const end = jobEnd(trace.jobs ?? []);
  if (end.length > 0) lines.push("", JOB_END_SECTION, ...end);
  if (sections.size === 0 && decisions.length === 0 && end.length === 0) lines.push("", "nothing recorded for this job");
  return `${lines.join("\n")}\n`;
}
