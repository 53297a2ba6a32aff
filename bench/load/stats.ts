/** The figures of a load run: percentiles, rates over time. Pure. */

/** The nearest-rank percentile of values sorted ascending (p in 0..100); NaN when there are none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  if (p <= 0) return sorted[0] ?? NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, rank) - 1] ?? NaN;
}

export interface Latency {
  readonly count: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
}

export function latency(values: readonly number[]): Latency {
  const sorted = [...values].sort((a, b) => a - b);
  return { count: sorted.length, p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? NaN };
}

/** Events per second, one point per whole second from `start` (x: seconds since start). */
export function perSecond(times: readonly number[], start: number, end: number): Array<[number, number]> {
  const seconds = Math.max(1, Math.ceil((end - start) / 1000));
  const counts = new Array<number>(seconds).fill(0);
  for (const t of times) {
    const i = Math.floor((t - start) / 1000);
    if (i >= 0 && i < seconds) counts[i] = (counts[i] ?? 0) + 1;
  }
  return counts.map((c, i) => [i, c]);
}

/** The p99 an agents sweep holds to, in ms: an answer slower than this is a slow one. */
export const HELD_P99_MS = 100;

/** One second of a phase that held answers slower than a line: when, how many, the slowest. */
export interface SlowSecond {
  /** Whole seconds since the phase's start. */
  readonly second: number;
  readonly count: number;
  readonly slowest: number;
}

/**
 * The seconds of a phase whose answers came slower than `overMs`, by when they came (`at`, ms
 * since epoch, beside each answer's `latency` in the same order), in time order. Slow answers
 * that come together at a steady beat point at something periodic (a sink's write, a
 * collection) rather than at the load itself.
 */
export function slowSeconds(at: readonly number[], latencies: readonly number[], start: number, overMs: number): SlowSecond[] {
  const by = new Map<number, { count: number; slowest: number }>();
  for (let i = 0; i < at.length; i++) {
    const l = latencies[i];
    const t = at[i];
    if (l === undefined || t === undefined || l <= overMs) continue;
    const second = Math.max(0, Math.floor((t - start) / 1000));
    const s = by.get(second) ?? { count: 0, slowest: 0 };
    s.count++;
    s.slowest = Math.max(s.slowest, l);
    by.set(second, s);
  }
  return [...by].sort(([a], [b]) => a - b).map(([second, s]) => ({ second, ...s }));
}

/** A number for a table: `-` when not a number. */
export function fmt(n: number, digits = 0): string {
  return Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "-";
}

/** `a / b` for a table, as `1.23x`; `-` when either is missing or b is zero. */
export function ratio(a: number, b: number): string {
  return Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? `${fmt(a / b, 2)}x` : "-";
}

export function bytes(n: number): string {
  if (n >= 1024 * 1024) return `${fmt(n / (1024 * 1024), 1)} MiB`;
  if (n >= 1024) return `${fmt(n / 1024, 1)} KiB`;
  return `${n} B`;
}
