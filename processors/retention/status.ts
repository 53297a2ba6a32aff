/**
 * What retention did and what it has left to do, as records and as the words of
 * `oz0 retention status` (pure; docs/files.md "Retention").
 */
import { formatDuration } from "../../config/units.ts";

/** Counts of one tenant's sweep, by kind. */
export interface SweepCounts {
  /** Files whose bytes were removed (no grant left). */
  readonly files: number;
  /** Grants of trees removed (a tree's access to a file, 90 days after it last stored it). */
  readonly grants: number;
  /** Trace parts removed. */
  readonly traces: number;
}

export interface HeldCounts {
  /** Files kept although expired: under a legal hold, or a grant of a held tree. */
  readonly files: number;
  /** Trace parts kept although expired: under a legal hold, or of a held tree or job. */
  readonly traces: number;
}

/** One tenant's last sweep, as kept in Redis. */
export interface SweepRecord {
  readonly tenant: string;
  /** When the sweep started (epoch ms, the sweep's clock). */
  readonly at: number;
  /** The instance that swept. */
  readonly instance: string;
  /** `swept`, or `failed` when some step failed (what was done before it stays done). */
  readonly outcome: "swept" | "failed";
  readonly removed: SweepCounts;
  readonly held: HeldCounts;
  readonly duration_ms: number;
  readonly errors: readonly string[];
}

/** What is past its retention now, from a dry run. */
export interface Due {
  readonly files: number;
  readonly grants: number;
  readonly traces: number;
  readonly held: HeldCounts;
}

export interface TenantStatus {
  readonly tenant: string;
  readonly last: SweepRecord | null;
  readonly due: Due | null;
  /** Why `due` could not be read, when it could not. */
  readonly dueError?: string;
}

export interface RetentionStatus {
  readonly now: number;
  /** Days files are kept after a tree last stored them (90, FILE-6) and trace parts after they were written (0: kept). */
  readonly retention: { readonly files_days: number; readonly traces_days: number };
  readonly tenants: readonly TenantStatus[];
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

function ago(now: number, at: number): string {
  const ms = now - at;
  if (ms < 0) return "in the future";
  return `${formatDuration(Math.floor(ms / 1000) * 1000)} ago`;
}

export function formatCounts(c: SweepCounts): string {
  return `${plural(c.files, "file")}, ${plural(c.grants, "grant")}, ${plural(c.traces, "trace part")}`;
}

export function formatHeld(h: HeldCounts): string {
  return `${plural(h.files, "file")}, ${plural(h.traces, "trace part")}`;
}

export function formatStatus(s: RetentionStatus): string {
  const keep = `files: ${s.retention.files_days} days after a tree last stored them; traces: ${s.retention.traces_days === 0 ? "kept (OZ0_TRACE_RETENTION_DAYS=0)" : `${s.retention.traces_days} days after they were written`}`;
  if (s.tenants.length === 0) return `retention: ${keep}\nno tenant has stored files or traces, and none was swept\n`;
  const lines = [`retention: ${keep}`];
  for (const t of s.tenants) {
    lines.push(`tenant ${t.tenant}`);
    if (t.last === null) lines.push("  last sweep: never");
    else {
      const l = t.last;
      lines.push(`  last sweep: ${new Date(l.at).toISOString()} (${ago(s.now, l.at)}) by ${l.instance}, ${(l.duration_ms / 1000).toFixed(1)} s${l.outcome === "failed" ? ", FAILED" : ""}`);
      lines.push(`    removed ${formatCounts(l.removed)}; held back ${formatHeld(l.held)}`);
      for (const e of l.errors) lines.push(`    error: ${e}`);
    }
    if (t.due === null) lines.push(`  due now: unknown (${t.dueError ?? "not read"})`);
    else if (t.due.files + t.due.grants + t.due.traces === 0) lines.push(`  due now: nothing${t.due.held.files + t.due.held.traces > 0 ? `; held back ${formatHeld(t.due.held)}` : ""}`);
    else lines.push(`  due now: ${formatCounts(t.due)} past retention; held back ${formatHeld(t.due.held)}`);
  }
  return `${lines.join("\n")}\n`;
}
