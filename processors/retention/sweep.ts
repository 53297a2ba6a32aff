/**
 * Retention that runs (FILE-6, OFF-10; docs/files.md "Retention"): one round sweeps every
 * tenant that has files or traces, tenant by tenant, each under a lock of its own in Redis so at
 * most one instance sweeps a tenant at a time. For each tenant it removes the files past
 * retention (`FileStore.sweep`: grants 90 days after their tree last stored the file, then bytes
 * no grant claims) and the trace parts past theirs (`sweepTenantTraces`), skipping what is under
 * a MinIO legal hold and the trees held in Redis (`oz0 hold`), and then records the sweep in
 * Redis, counts it in the metrics and, when it removed or held back something, publishes a
 * `retention.swept` audit entry (counts and refs, never content).
 *
 * Idempotent: a second round at the same time finds nothing past retention. A tenant swept by
 * another instance within `minGapMs` is skipped (said so), so that several instances on the
 * same schedule sweep it once per interval; a tenant another instance is sweeping now is
 * skipped too (its lock).
 */
import type { AuditEvent } from "../../schemas/types.ts";
import { RETENTION_MS, type FileStore, type SweepReport } from "../../store/files.ts";
import type { Logger } from "../runner/log.ts";
import { deriveId } from "../runner/ids.ts";
import type { MetricFamily } from "../ops/metrics.ts";
import type { RetentionStore } from "./store.ts";
import type { Due, HeldCounts, SweepCounts, SweepRecord } from "./status.ts";
import { TraceStore } from "../../store/trace-store.ts";
import { sweepTenantTraces, traceTenants, type TraceSweepReport } from "./traces.ts";

/** The audit entry's actor: the sweep itself (which instance is in `facts.instance`). */
export const RETENTION_ACTOR = "retention";
/** At most this many refs are named in one audit entry; the counts are whole. */
export const AUDIT_REFS_MAX = 200;
/** A tenant's lock lasts this long, lengthened while its sweep runs. */
export const LOCK_MS = 5 * 60 * 1000;

export interface RetentionDeps {
  /** Null when the file bucket does not exist (nothing stored yet). */
  readonly files: FileStore | null;
  /** The trace store; with its index (TraceStore.indexed), an expired object of format 3 shared with a held tree is written again with the held records only. */
  readonly traces: { readonly client: FileStore["client"]; readonly bucket: string } | TraceStore;
  /** Days-in-ms a trace part is kept after it was written; 0 keeps them. */
  readonly traceRetentionMs: number;
  readonly state: RetentionStore;
  /** The trees of a tenant under a hold kept in Redis (`TreeHolds.heldTrees`); none when left out. */
  readonly heldTrees?: (tenant: string) => Promise<ReadonlySet<string>>;
  /** Publishes audit entries to `oz0.audit`; left out, none are published. */
  readonly publish?: (entries: AuditEvent[]) => Promise<void>;
  readonly metrics?: RetentionMetrics;
  readonly log?: Logger;
  /** @default LOCK_MS */
  readonly lockMs?: number;
}

export type TenantOutcome = "swept" | "failed" | "locked" | "recent";

export interface TenantSweep {
  readonly tenant: string;
  readonly outcome: TenantOutcome;
  /** For `locked` and `recent`: the instance that holds the lock, or swept last. */
  readonly by?: string;
  readonly removed: SweepCounts;
  readonly held: HeldCounts;
  /** Refs of files removed and held back (`oz0-file:sha256:...`), and the jobs whose trace parts were removed or held. */
  readonly refs: { readonly filesRemoved: readonly string[]; readonly filesHeld: readonly string[]; readonly traceJobsRemoved: readonly string[] };
  readonly durationMs: number;
  readonly errors: readonly string[];
}

export interface RoundOptions {
  readonly instance: string;
  /** The sweep's clock (epoch ms). */
  readonly now: number;
  /** Only these tenants. @default every tenant with files or traces */
  readonly tenants?: readonly string[];
  /** Skip a tenant whose last sweep (by any instance) started less than this before `now`. @default 0 */
  readonly minGapMs?: number;
  /** Asked before each tenant: true ends the round there (the instance is stopping). */
  readonly stopping?: () => boolean;
}

/** The trace store when it is one with its index. */
function storeOf(traces: RetentionDeps["traces"]): TraceStore | undefined {
  return traces instanceof TraceStore && traces.index ? traces : undefined;
}

const none: SweepCounts = { files: 0, grants: 0, traces: 0 };
const noneHeld: HeldCounts = { files: 0, traces: 0 };

/** The tenants that have files or traces, each once, sorted. */
export async function retentionTenants(deps: Pick<RetentionDeps, "files" | "traces">): Promise<string[]> {
  const out = new Set<string>(await traceTenants(deps.traces.client, deps.traces.bucket));
  if (deps.files !== null) {
    for await (const item of deps.files.client.listObjectsV2(deps.files.bucket, "files/", false)) {
      const p = (item as { prefix?: string }).prefix?.split("/")[1];
      if (p) out.add(p);
    }
  }
  return [...out].sort();
}

const refOfLabel = (label: string): string => label.slice(label.indexOf(":") + 1);

/** What is past retention now for a tenant, removing nothing (the status command's "due"). */
export async function dueOf(deps: RetentionDeps, tenant: string, now: number): Promise<Due> {
  const held = (await deps.heldTrees?.(tenant)) ?? new Set<string>();
  const files: SweepReport | null = deps.files === null ? null : await deps.files.sweep(now, { tenant, dryRun: true, heldTree: (_t, tree) => held.has(tree) });
  const traces = await sweepTenantTraces({ client: deps.traces.client, bucket: deps.traces.bucket, tenant, now, retentionMs: deps.traceRetentionMs, dryRun: true, heldTrees: held, store: storeOf(deps.traces) });
  return { files: files?.deletedFiles.length ?? 0, grants: files?.expiredGrants ?? 0, traces: traces.removed, held: { files: files?.held.length ?? 0, traces: traces.held.length } };
}

/** Sweeps one tenant under its lock; never throws for a step that failed (it is in `errors`). */
export async function sweepTenant(deps: RetentionDeps, tenant: string, o: RoundOptions): Promise<TenantSweep> {
  const started = Date.now();
  const empty = { removed: none, held: noneHeld, refs: { filesRemoved: [], filesHeld: [], traceJobsRemoved: [] }, durationMs: 0, errors: [] };
  const lockMs = deps.lockMs ?? LOCK_MS;
  const taken = await deps.state.lock(tenant, o.instance, lockMs);
  if ("heldBy" in taken) return { tenant, outcome: "locked", by: taken.heldBy, ...empty };
  const { lock } = taken;
  const keepAlive = setInterval(() => void lock.extend(lockMs).catch(() => undefined), Math.max(1000, Math.floor(lockMs / 3)));
  try {
    const minGap = o.minGapMs ?? 0;
    if (minGap > 0) {
      const [last] = await deps.state.last(tenant);
      if (last !== undefined && last.at > o.now - minGap && last.at <= o.now) return { tenant, outcome: "recent", by: last.instance, ...empty };
    }
    const errors: string[] = [];
    let held = new Set<string>();
    try {
      held = new Set(await deps.heldTrees?.(tenant));
    } catch (err) {
      // Without the holds nothing may be removed safely: the tenant is not swept this time.
      errors.push(`the held trees could not be read, so nothing was removed: ${message(err)}`);
    }
    let files: SweepReport = { expiredGrants: 0, deletedFiles: [], held: [], dryRun: false };
    let traces: TraceSweepReport = { removed: 0, held: [], jobs: [] };
    if (errors.length === 0) {
      if (deps.files !== null) {
        try {
          files = await deps.files.sweep(o.now, { tenant, heldTree: (_t, tree) => held.has(tree) });
        } catch (err) {
          errors.push(`files: ${message(err)}`);
        }
      }
      try {
        traces = await sweepTenantTraces({ client: deps.traces.client, bucket: deps.traces.bucket, tenant, now: o.now, retentionMs: deps.traceRetentionMs, heldTrees: held, store: storeOf(deps.traces) });
      } catch (err) {
        errors.push(`traces: ${message(err)}`);
      }
    }
    const result: TenantSweep = {
      tenant,
      outcome: errors.length === 0 ? "swept" : "failed",
      removed: { files: files.deletedFiles.length, grants: files.expiredGrants, traces: traces.removed },
      held: { files: files.held.length, traces: traces.held.length },
      refs: { filesRemoved: files.deletedFiles.map(refOfLabel), filesHeld: files.held.map(refOfLabel), traceJobsRemoved: traces.jobs },
      durationMs: Date.now() - started,
      errors,
    };
    const record: SweepRecord = { tenant, at: o.now, instance: o.instance, outcome: result.outcome === "failed" ? "failed" : "swept", removed: result.removed, held: result.held, duration_ms: result.durationMs, errors };
    await deps.state.record(record);
    const entry = auditEntry(result, o);
    if (entry !== null && deps.publish) await deps.publish([entry]);
    return result;
  } finally {
    clearInterval(keepAlive);
    await lock.release().catch(() => undefined);
  }
}

/** One round: every tenant (or those given), one after another; each result is logged and counted. */
export async function sweepRound(deps: RetentionDeps, o: RoundOptions): Promise<TenantSweep[]> {
  const tenants = o.tenants ?? (await retentionTenants(deps));
  const out: TenantSweep[] = [];
  for (const tenant of tenants) {
    if (o.stopping?.()) return out;
    let r: TenantSweep;
    try {
      r = await sweepTenant(deps, tenant, o);
    } catch (err) {
      // The lock, the record or the audit publish failed: said, counted, and the round goes on.
      r = { tenant, outcome: "failed", removed: none, held: noneHeld, refs: { filesRemoved: [], filesHeld: [], traceJobsRemoved: [] }, durationMs: 0, errors: [message(err)] };
    }
    out.push(r);
    deps.metrics?.count(r);
    const fields = { tenant, instance: o.instance, ...r.removed, held_files: r.held.files, held_traces: r.held.traces, ms: r.durationMs };
    if (r.outcome === "locked") deps.log?.info("retention: another instance is sweeping this tenant; skipped", { tenant, by: r.by ?? "" });
    else if (r.outcome === "recent") deps.log?.info("retention: this tenant was swept within the interval by another instance; skipped", { tenant, by: r.by ?? "" });
    else if (r.outcome === "failed") deps.log?.warn("retention: the tenant's sweep failed in part; the rest is tried at the next sweep", { ...fields, errors: r.errors.join("; ") });
    else if (r.removed.files + r.removed.grants + r.removed.traces + r.held.files + r.held.traces > 0) deps.log?.info("retention: tenant swept", fields);
  }
  deps.metrics?.roundDone(o.now);
  return out;
}

/** The audit entry of a tenant's sweep that removed or held back something; null otherwise. */
export function auditEntry(r: TenantSweep, o: Pick<RoundOptions, "instance" | "now">): AuditEvent | null {
  const total = r.removed.files + r.removed.grants + r.removed.traces + r.held.files + r.held.traces;
  if (total === 0 || (r.outcome !== "swept" && r.outcome !== "failed")) return null;
  const named = (refs: readonly string[]): string => refs.slice(0, AUDIT_REFS_MAX).join(" ");
  const facts: Record<string, string> = {
    instance: o.instance,
    files_removed: named(r.refs.filesRemoved),
    files_held: named(r.refs.filesHeld),
    trace_jobs_removed: named(r.refs.traceJobsRemoved),
    outcome: r.outcome,
  };
  if (r.refs.filesRemoved.length > AUDIT_REFS_MAX || r.refs.filesHeld.length > AUDIT_REFS_MAX || r.refs.traceJobsRemoved.length > AUDIT_REFS_MAX) facts.refs_truncated = `the first ${AUDIT_REFS_MAX} of each are named; the numbers are whole`;
  if (r.errors.length > 0) facts.errors = r.errors.join("; ").slice(0, 2000);
  return {
    id: deriveId("oz0-retention", r.tenant, String(o.now)),
    kind: "retention.swept",
    tenant: r.tenant,
    tree_id: null,
    job_id: null,
    actor: RETENTION_ACTOR,
    reason: `past retention: files ${RETENTION_MS / 86_400_000} days after a tree last stored them, trace parts after their retention`,
    facts,
    numbers: { files_removed: r.removed.files, grants_removed: r.removed.grants, trace_parts_removed: r.removed.traces, files_held: r.held.files, trace_parts_held: r.held.traces, duration_ms: r.durationMs },
    ts: o.now,
  };
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The sweep's counters for `/metrics` (docs/operations.md), per instance since its start. */
export class RetentionMetrics {
  readonly #removed = new Map<string, number>([["file", 0], ["grant", 0], ["trace", 0]]);
  readonly #held = new Map<string, number>([["file", 0], ["trace", 0]]);
  readonly #sweeps = new Map<string, number>([["swept", 0], ["failed", 0], ["locked", 0], ["recent", 0]]);
  #last: number | null = null;

  count(r: TenantSweep): void {
    const add = (m: Map<string, number>, k: string, n: number): void => void m.set(k, (m.get(k) ?? 0) + n);
    add(this.#removed, "file", r.removed.files);
    add(this.#removed, "grant", r.removed.grants);
    add(this.#removed, "trace", r.removed.traces);
    add(this.#held, "file", r.held.files);
    add(this.#held, "trace", r.held.traces);
    add(this.#sweeps, r.outcome, 1);
  }

  roundDone(at: number): void {
    this.#last = at;
  }

  families(): MetricFamily[] {
    return [
      { name: "oz0_retention_removed_total", help: "Objects the retention sweep removed past their retention, by kind: file (bytes no grant claims), grant (a tree's access, 90 days after it last stored the file), trace (trace parts).", type: "counter", samples: [...this.#removed].map(([kind, value]) => ({ labels: { kind }, value })) },
      { name: "oz0_retention_held_total", help: "Objects past retention the sweep kept because of a legal hold or a held tree, by kind (file, trace); counted at each sweep that finds them.", type: "counter", samples: [...this.#held].map(([kind, value]) => ({ labels: { kind }, value })) },
      { name: "oz0_retention_sweeps_total", help: "Tenant sweeps by outcome: swept, failed (some step failed), locked (another instance was sweeping it), recent (another instance swept it within the interval).", type: "counter", samples: [...this.#sweeps].map(([outcome, value]) => ({ labels: { outcome }, value })) },
      { name: "oz0_retention_last_sweep_timestamp_seconds", help: "When this instance last finished a round of retention sweeps (Unix seconds of the round's clock); 0 before the first.", type: "gauge", samples: [{ value: this.#last === null ? 0 : Math.floor(this.#last / 1000) }] },
    ];
  }
}
