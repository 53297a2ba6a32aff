/**
 * What `npm run audit` shows: entries filtered by tenant, kind and time, each once, in time
 * order; per-day loop counts from the `loop.acted` entries the loop detector publishes; and
 * from those, the tools that looped in three or more tenants in a week (LOOP-9), grouped as
 * `npm run loops -- report` groups the daily counts in Redis.
 */
import type { AuditEvent } from "../../schemas/types.ts";
import { reportDays, toolsLoopingInTenants, type LoopingTool, type ToolFacts } from "../loops/report.ts";

export interface AuditFilter {
  readonly tenant?: string;
  /** A kind (`approval.decided`) or a kind's first part (`approval`, matching `approval.*`). */
  readonly kind?: string;
  /** Epoch milliseconds: entries at or after. */
  readonly since?: number;
}

export const LOOP_ACTED = "loop.acted";

function kindMatches(kind: string, wanted: string): boolean {
  return kind === wanted || kind.startsWith(`${wanted}.`);
}

/** The entries a filter keeps, each ID once, ordered by time (then ID, so the order is stable). */
export function selectEntries(entries: readonly AuditEvent[], filter: AuditFilter = {}): AuditEvent[] {
  const byId = new Map<string, AuditEvent>();
  for (const e of entries) {
    if (byId.has(e.id)) continue;
    if (filter.tenant !== undefined && e.tenant !== filter.tenant) continue;
    if (filter.kind !== undefined && !kindMatches(e.kind, filter.kind)) continue;
    if (filter.since !== undefined && e.ts < filter.since) continue;
    byId.set(e.id, e);
  }
  return [...byId.values()].sort((a, b) => a.ts - b.ts || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export interface LoopCount {
  /** UTC day, `YYYY-MM-DD`. */
  readonly day: string;
  readonly tenant: string;
  readonly plugin: string;
  readonly tool: string;
  readonly loops: number;
}

/**
 * Loops acted on per UTC day, tenant, plugin and tool (LOOP-9), one per `loop.acted` entry:
 * its `facts.day` when it gives one, else the day of its time.
 */
export function loopCounts(entries: readonly AuditEvent[]): LoopCount[] {
  const counts = new Map<string, LoopCount>();
  for (const e of entries) {
    if (e.kind !== LOOP_ACTED) continue;
    const day = e.facts.day ?? new Date(e.ts).toISOString().slice(0, 10);
    const key = [day, e.tenant ?? "", e.facts.plugin ?? "", e.facts.tool ?? ""];
    const id = JSON.stringify(key);
    const seen = counts.get(id);
    counts.set(id, { day, tenant: key[1] as string, plugin: key[2] as string, tool: key[3] as string, loops: (seen?.loops ?? 0) + 1 });
  }
  const order = (c: LoopCount) => [c.day, c.tenant, c.plugin, c.tool].join("\u0000");
  return [...counts.values()].sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
}

export interface LoopWeek {
  /** Epoch milliseconds in the window's last UTC day. @default now */
  readonly until?: number;
  /** UTC days in the window, up to and including the day of `until`. @default 7 */
  readonly days?: number;
  /** Tenants a tool must have looped in to be listed. @default 3 */
  readonly minTenants?: number;
}

/**
 * LOOP-9 from the audit log: the tools whose loops acted on (`loop.acted`, counted by their
 * day as `loopCounts` counts them) span at least `minTenants` tenants in the window, each
 * with its tenants, loops, risk class and kill switch from `facts`.
 */
export function weeklyLoopingTools(entries: readonly AuditEvent[], week: LoopWeek = {}, facts: Partial<ToolFacts> = {}): LoopingTool[] {
  const window = new Set(reportDays(week.until ?? Date.now(), week.days ?? 7));
  // Each entry once, as the reader shows it; an entry without a tenant names no tenant to count.
  const rows = loopCounts(selectEntries(entries, { kind: LOOP_ACTED })).filter((c) => c.tenant !== "" && window.has(c.day));
  return toolsLoopingInTenants(rows, week.minTenants ?? 3, facts);
}

function words(record: Readonly<Record<string, string | number>>): string {
  return Object.entries(record)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
}

/** One line per entry: time, kind, tenant, who, the reason, then its facts and numbers. */
export function formatEntries(entries: readonly AuditEvent[]): string {
  if (entries.length === 0) return "no audit entries match\n";
  const lines = entries.map((e) => {
    const who = [e.tenant ? `tenant ${e.tenant}` : "cluster", e.actor ? `by ${e.actor}` : null, e.job_id ? `job ${e.job_id}` : null].filter(Boolean).join(", ");
    const facts = words({ ...e.facts, ...e.numbers });
    return `${new Date(e.ts).toISOString()}  ${e.kind}  ${who}${e.reason ? `: ${e.reason}` : ""}${facts ? `  [${facts}]` : ""}`;
  });
  return `${lines.join("\n")}\n`;
}

export function formatLoopCounts(counts: readonly LoopCount[]): string {
  if (counts.length === 0) return "no loops acted on\n";
  const rows = [["day", "tenant", "plugin", "tool", "loops"], ...counts.map((c) => [c.day, c.tenant || "-", c.plugin || "-", c.tool || "-", String(c.loops)])];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
  return `${rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  ").trimEnd()).join("\n")}\n`;
}
