/**
 * What `npm start` prints while it runs and when it stops: events per second, lag, and
 * decisions by kind per processor, from the same counters the metrics endpoint serves.
 */
import type { Measured } from "./ops-metrics.ts";
import { OUTCOME_KINDS } from "../runner/outcomes.ts";

export interface Snapshot {
  readonly name: string;
  readonly in: number;
  readonly out: number;
  readonly deadLetters: number;
  readonly outcomes: Readonly<Record<string, number>>;
  readonly deadLetterErrors: Readonly<Record<string, number>>;
}

export function snapshot(p: Measured): Snapshot {
  const s = p.stats;
  return { name: p.name, in: s.in, out: s.out, deadLetters: s.deadLetters, outcomes: { ...s.outcomes }, deadLetterErrors: { ...s.deadLetterErrors } };
}

function kinds(counts: Readonly<Record<string, number>>): string {
  const order = [...OUTCOME_KINDS.filter((k) => counts[k]), ...Object.keys(counts).filter((k) => !(OUTCOME_KINDS as readonly string[]).includes(k) && counts[k])];
  return order.map((k) => `${k} ${counts[k]}`).join(", ");
}

function lagText(lag: number): string {
  return Number.isNaN(lag) ? "lag ?" : `lag ${lag}`;
}

const rate = (now: number, before: number, seconds: number): string => `${Math.max(0, (now - before) / Math.max(seconds, 0.001)).toFixed(0)}/s`;

export interface ProgressInput {
  readonly before: ReadonlyMap<string, Snapshot>;
  readonly now: readonly Snapshot[];
  /** Seconds between the two snapshots. */
  readonly seconds: number;
  readonly elapsedS: number;
  readonly lag: (name: string) => number;
  readonly ready: boolean;
}

/** A head line for the whole process, then one line per processor. */
export function progressReport({ before, now, seconds, elapsedS, lag, ready }: ProgressInput): string {
  const sum = (list: readonly Snapshot[], f: (s: Snapshot) => number): number => list.reduce((a, s) => a + f(s), 0);
  const prev = now.map((s) => before.get(s.name) ?? { ...s, in: 0, out: 0, deadLetters: 0 });
  const lags = now.map((s) => lag(s.name));
  const totalLag = lags.some((l) => Number.isNaN(l)) ? NaN : lags.reduce((a, l) => a + l, 0);
  const head =
    `[${Math.round(elapsedS)} s] ${ready ? "ready" : "not ready"}: ` +
    `${rate(sum(now, (s) => s.in), sum(prev, (s) => s.in), seconds)} in, ${rate(sum(now, (s) => s.out), sum(prev, (s) => s.out), seconds)} out, ` +
    `${lagText(totalLag)}, ${sum(now, (s) => s.deadLetters)} dead letters`;
  const width = Math.max(0, ...now.map((s) => s.name.length));
  const lines = now.map((s, i) => {
    const p = prev[i] as Snapshot;
    const decided = kinds(s.outcomes);
    const dead = s.deadLetters > 0 ? `; dead letters ${s.deadLetters} (${kinds(s.deadLetterErrors)})` : "";
    return `  ${s.name.padEnd(width)}  ${rate(s.in, p.in, seconds).padStart(7)} in  ${lagText(lags[i] ?? NaN).padEnd(9)}  ${decided || "no decisions yet"}${dead}`;
  });
  return [head, ...(lines.length > 0 ? lines : ["  no processors"])].join("\n");
}

/** Totals per processor and the decision latency quantiles, for when the pipeline stops. */
export function summaryReport(list: readonly Measured[], elapsedS: number): string {
  const lines = list.map((p) => {
    const top = p.latency.bounds[p.latency.bounds.length - 1] ?? Infinity;
    // At the top bound the estimate only says "at least": inputs that waited out a catch-up.
    const ms = (v: number): string => (Number.isNaN(v) ? "-" : v >= top ? `over ${top} s` : `${Math.round(v * 1000)} ms`);
    const s = p.stats;
    const decided = kinds(s.outcomes);
    const dead = s.deadLetters > 0 ? ` (${kinds(s.deadLetterErrors)})` : "";
    return (
      `  ${p.name}: ${s.in} in (${(s.in / Math.max(elapsedS, 0.001)).toFixed(1)}/s), ${s.out} out, ${s.deadLetters} dead letters${dead}, ${s.retries} retries` +
      `${decided ? `; ${decided}` : ""}; latency p50 ${ms(p.latency.quantile(0.5))}, p99 ${ms(p.latency.quantile(0.99))}`
    );
  });
  return [`summary after ${elapsedS.toFixed(0)} s:`, ...(lines.length > 0 ? lines : ["  no processors ran"])].join("\n");
}
