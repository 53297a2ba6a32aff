/**
 * Whether a pipeline process is live and ready, as a small state machine fed by the pipeline
 * (starting, started, stopping, failed) and by the monitor (each consumer group as the broker
 * sees it). Pure: the clock is given.
 *
 * Ready means: the pipeline finished starting, every processor it runs started, the broker
 * shows each processor's group stable with a member, seen recently, no processor has a batch
 * failing on a dependency past the retry bound (`retry.ts`), and nothing fatal happened. Live
 * means the process answers; only a fatal error ends it (a failing dependency does not: the
 * processor keeps retrying, and is ready again once the batch goes through).
 *
 * The Kafka cluster as the monitor last saw it (`kafka-cluster.ts`) is shown beside: brokers that
 * do not answer, partitions under-replicated, below their min.insync.replicas or without a
 * leader. Only the last two make the process not ready (its writes or reads on them cannot go
 * through); a broker down with the partitions still in sync enough is said, not failed on.
 */
import type { ClusterHealth } from "./kafka-cluster.ts";
import type { Failing } from "../runner/retry.ts";


export type Phase = "starting" | "running" | "stopping" | "failed";

export interface GroupSeen {
  /** The broker's group state: `Stable`, `PreparingRebalance`, `Empty`, `Dead`, ... */
  readonly state: string;
  readonly members: number;
}

export interface ProcessorHealth {
  readonly started: boolean;
  readonly group: string;
  readonly seen?: GroupSeen & { readonly at: number };
  /** A batch failing on a dependency past the retry bound, or null. */
  readonly failing?: () => Failing | null;
}

export interface Readiness {
  readonly ready: boolean;
  readonly phase: Phase;
  /** Why it is not ready, one line each; empty when ready. */
  readonly reasons: string[];
  readonly processors: Record<string, { started: boolean; group: string; state: string; members: number; failing?: { dependency: string; forS: number; attempts: number; error: string; check: string } }>;
  /** The Kafka cluster as last seen (absent until the monitor first read it): brokers, and the pipeline's partitions in trouble. */
  readonly kafka?: ClusterHealth & { readonly seen_s_ago: number };
}

export interface HealthOptions {
  /** A group state older than this is unknown (the monitor stopped answering). */
  staleAfterMs?: number;
  now?: () => number;
}

export class Health {
  private phase: Phase = "starting";
  private failure: string | undefined;
  private readonly processors = new Map<string, ProcessorHealth>();
  private readonly staleAfterMs: number;
  private readonly now: () => number;
  private readonly startedAt: number;
  private cluster: { health: ClusterHealth; at: number } | undefined;

  constructor(opts: HealthOptions = {}) {
    this.staleAfterMs = opts.staleAfterMs ?? 30_000;
    this.now = opts.now ?? Date.now;
    this.startedAt = this.now();
  }

  /** A processor is about to start under `group`. */
  starting(name: string, group: string): void {
    this.processors.set(name, { started: false, group });
  }

  /** It started; `failing` tells, when asked, whether a batch of it fails past the retry bound. */
  started(name: string, failing?: () => Failing | null): void {
    const p = this.processors.get(name);
    if (!p) throw new Error(`health: processor ${name} started without being announced by starting()`);
    this.processors.set(name, { ...p, started: true, ...(failing ? { failing } : {}) });
  }

  /** Every processor of the pipeline started; ready once their groups show. */
  running(): void {
    if (this.phase === "starting") this.phase = "running";
  }

  stopping(): void {
    if (this.phase !== "failed") this.phase = "stopping";
  }

  /** Something the process cannot recover from: not ready, and not live, from now on. */
  failed(reason: string): void {
    this.phase = "failed";
    this.failure ??= reason;
  }

  /** What the broker shows of a processor's group. */
  groupSeen(name: string, seen: GroupSeen): void {
    const p = this.processors.get(name);
    if (p) this.processors.set(name, { ...p, seen: { ...seen, at: this.now() } });
  }

  /** What the monitor read of the Kafka cluster. */
  clusterSeen(health: ClusterHealth): void {
    this.cluster = { health, at: this.now() };
  }

  get current(): Phase {
    return this.phase;
  }

  live(): { live: boolean; phase: Phase; uptimeS: number; reason?: string } {
    const uptimeS = Math.round((this.now() - this.startedAt) / 1000);
    if (this.phase === "failed") return { live: false, phase: this.phase, uptimeS, reason: this.failure ?? "failed" };
    return { live: true, phase: this.phase, uptimeS };
  }

  ready(): Readiness {
    const reasons: string[] = [];
    if (this.phase === "starting") reasons.push("the pipeline is starting");
    if (this.phase === "stopping") reasons.push("the pipeline is stopping");
    if (this.phase === "failed") reasons.push(`the pipeline failed: ${this.failure ?? "unknown error"}`);
    if (this.processors.size === 0) reasons.push("no processor runs");
    const now = this.now();
    const processors: Readiness["processors"] = {};
    for (const [name, p] of this.processors) {
      processors[name] = { started: p.started, group: p.group, state: p.seen?.state ?? "unknown", members: p.seen?.members ?? 0 };
      if (!p.started) {
        reasons.push(`${name} has not started`);
        continue;
      }
      const failing = p.failing?.();
      if (failing) {
        const forS = Math.round((now - failing.sinceMs) / 1000);
        (processors[name] as { failing?: unknown }).failing = { dependency: failing.dependency, forS, attempts: failing.attempts, error: failing.error, check: failing.check };
        reasons.push(`${name}: ${failing.dependency} failing for ${forS} s (${failing.attempts} attempts), still retrying: ${failing.error}; ${failing.check}`);
      }
      if (!p.seen) reasons.push(`${name}: group ${p.group} not seen yet`);
      else if (now - p.seen.at > this.staleAfterMs) reasons.push(`${name}: group ${p.group} last seen ${Math.round((now - p.seen.at) / 1000)} s ago`);
      else if (p.seen.state !== "Stable" || p.seen.members === 0) reasons.push(`${name}: group ${p.group} is ${p.seen.state} with ${p.seen.members} members`);
    }
    let kafka: Readiness["kafka"];
    if (this.cluster) {
      const agoMs = now - this.cluster.at;
      kafka = { ...this.cluster.health, seen_s_ago: Math.round(agoMs / 1000) };
      // A reading gone stale says nothing of now (the processors' groups say whether the broker answers).
      if (agoMs <= this.staleAfterMs) for (const b of this.cluster.health.blocking) reasons.push(`Kafka: ${b}`);
    }
    return { ready: reasons.length === 0, phase: this.phase, reasons, processors, ...(kafka ? { kafka } : {}) };
  }
}
