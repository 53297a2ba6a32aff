/**
 * `oz0 doctor`: the pipeline's health at a glance, built from what the command read (pure; the
 * command in `bin/doctor.ts` asks the services). Each processor's lag and rate (its group's
 * committed offsets on the topic it consumes), the dead letters of the last hour by processor
 * and reason, the services that do not answer, and the tools that looped in three or more
 * tenants this week with their risk class and kill switch (LOOP-9).
 */
import type { DeadLetter, DeadLetterError } from "../../schemas/types.ts";
import { formatLoopReport, type LoopingTool } from "../loops/report.ts";
import type { ClusterHealth } from "./kafka-cluster.ts";
import { describeKafkajsPatches, type KafkajsPatchState } from "../runner/kafkajs-patches.ts";

export interface ServiceCheck {
  readonly name: string;
  readonly ok: boolean;
  /** How long the answer took, ms. */
  readonly ms: number;
  readonly error?: string;
}

export interface ProcessorRow {
  readonly name: string;
  readonly group: string;
  readonly topic: string;
  /** Records of its topic its group has not committed; null when it could not be read. */
  readonly lag: number | null;
  /** Records a second its group committed over the sample; null when it could not be read. */
  readonly rate: number | null;
}

export interface DeadLetterRow {
  readonly processor: string;
  readonly error: DeadLetterError;
  readonly count: number;
  /** The newest one's reason and time. */
  readonly reason: string;
  readonly last_at: number;
}

export interface DoctorReport {
  readonly at: number;
  /** Dead letters from this time on (epoch ms). */
  readonly since: number;
  readonly services: readonly ServiceCheck[];
  readonly processors: readonly ProcessorRow[];
  readonly dead_letters: readonly DeadLetterRow[];
  readonly looping: { readonly days: number; readonly min_tenants: number; readonly tools: readonly LoopingTool[] } | null;
  /** Whether the project's changes to kafkajs are in the install this ran from (`kafkajs-patches.ts`). */
  readonly kafkajs?: readonly KafkajsPatchState[];
  /** The Kafka cluster's brokers and the pipeline's partitions (`kafka-cluster.ts`); null when Kafka did not answer. */
  readonly kafka_cluster?: ClusterHealth | null;
  /** Why the brokers and partitions could not be read (a broker going away mid-read), when they could not. */
  readonly kafka_cluster_error?: string;
  /** Why the dead letters could not be read, when they could not (a broker lost mid-read). */
  readonly dead_letters_error?: string;
}

/** Dead letters counted by processor and error class, the most first; each with its newest reason. */
export function deadLetterRows(letters: ReadonlyArray<Pick<DeadLetter, "processor" | "error" | "reason" | "ts">>): DeadLetterRow[] {
  const rows = new Map<string, { processor: string; error: DeadLetterError; count: number; reason: string; last_at: number }>();
  for (const l of letters) {
    const key = `${l.processor}\n${l.error}`;
    const row = rows.get(key);
    if (!row) rows.set(key, { processor: l.processor, error: l.error, count: 1, reason: l.reason, last_at: l.ts });
    else {
      row.count++;
      if (l.ts >= row.last_at) Object.assign(row, { reason: l.reason, last_at: l.ts });
    }
  }
  return [...rows.values()].sort((a, b) => b.count - a.count || a.processor.localeCompare(b.processor) || a.error.localeCompare(b.error));
}

/** Healthy when every service answers, every broker too, and no partition of the pipeline is under-replicated or without a leader; what the exit status says. */
export function healthy(r: DoctorReport): boolean {
  return r.services.every((s) => s.ok) && (r.kafka_cluster?.problems.length ?? 0) === 0 && r.kafka_cluster_error === undefined;
}

/** Records a second between two readings of a group's committed total, or null when either is unknown. */
export function rateOf(before: number | null, after: number | null, seconds: number): number | null {
  if (before === null || after === null || seconds <= 0) return null;
  return Math.max(0, after - before) / seconds;
}

const fmt = (n: number | null, digits = 0): string => (n === null ? "?" : n.toFixed(digits));

export function formatDoctor(r: DoctorReport): string {
  const out: string[] = [];
  const down = r.services.filter((s) => !s.ok);
  out.push(down.length === 0 ? `services: all answer (${r.services.map((s) => `${s.name} ${s.ms} ms`).join(", ")})` : `services: ${down.length} of ${r.services.length} do not answer`);
  for (const s of down) out.push(`  ${s.name}: does not answer: ${s.error ?? "no answer"}`);
  if (r.kafka_cluster_error !== undefined) out.push(`kafka: the brokers and partitions could not be read (${r.kafka_cluster_error}): a broker may be going away; ask again`);
  if (r.kafka_cluster) {
    const c = r.kafka_cluster;
    const up = c.brokers.filter((b) => b.up).length;
    out.push(c.problems.length === 0 ? `kafka: ${up} of ${c.brokers.length} brokers answer; every partition of the pipeline led and fully in sync` : `kafka: ${up} of ${c.brokers.length} brokers answer; ${c.leaderless.length} partitions without a leader, ${c.under_replicated.length} under-replicated (${c.below_min_isr.length} below min.insync.replicas)`);
    for (const p of c.problems) out.push(`  ${p}`);
  }
  if (r.kafkajs) out.push(describeKafkajsPatches(r.kafkajs));
  out.push("", "processors (lag: records not committed; rate: records a second committed):");
  const width = Math.max(...r.processors.map((p) => p.name.length), 9);
  for (const p of r.processors) out.push(`  ${p.name.padEnd(width)}  lag ${fmt(p.lag).padStart(7)}  ${fmt(p.rate, 1).padStart(7)}/s  ${p.group} on ${p.topic}`);
  const hours = (r.at - r.since) / 3_600_000;
  const total = r.dead_letters.reduce((n, d) => n + d.count, 0);
  out.push("", `dead letters since ${new Date(r.since).toISOString()} (${hours.toFixed(hours < 1 ? 2 : 0)} h): ${r.dead_letters_error !== undefined ? `not read (${r.dead_letters_error})` : total === 0 ? "none" : total}`);
  for (const d of r.dead_letters) out.push(`  ${d.processor}  ${d.error}  ${d.count}  newest ${new Date(d.last_at).toISOString()}: ${d.reason}`);
  out.push("");
  out.push(r.looping ? formatLoopReport(r.looping.tools, { days: r.looping.days, minTenants: r.looping.min_tenants }) : "looping tools: not read (Redis does not answer)");
  return `${out.join("\n")}\n`;
}
