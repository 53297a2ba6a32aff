/**
 * LIM-8: the spend forecast, pure. Per agent (the root agent of its trees, per tenant), the
 * last FORECAST_WINDOW finished trees that had a budget are kept, each as one of:
 *
 * - hit: the tree hit its budget (an ask did not fit: refused for the budget, or let through as
 *   the last call), or spent all of it;
 * - a bucket: the share of its budget it spent in the end, in FORECAST_BUCKETS steps of 5%.
 *
 * At an ask of a tree that has spent the share `q` of its budget, the chance it will need more
 * than its budget is the share of past trees that got at least as far (hit, or ended in a
 * bucket at or above `q`'s) which hit their budget:
 *
 *     chance = hits / (hits + trees that ended in bucket >= floor(q * 20) without a hit)
 *
 * Trees that ended cheaper than this one has already spent say nothing about it, so they are
 * left out. The bucket of `q` itself is counted whole, which can only lower the chance: the
 * forecast fires late rather than early. It is the specification
 * store/redis/lua/limitsForecastRecord-1.lua follows.
 */

export const FORECAST_WINDOW = 200;
export const FORECAST_BUCKETS = 20;
/** How a hit is kept in place of a bucket. */
export const HIT = -1;

/** What the forecast reads of an agent's finished trees. */
export interface ForecastStats {
  /** Finished trees with a budget, ever recorded (what `spend.forecast.min_runs` counts). */
  readonly finished: number;
  /** Hits within the window. */
  readonly hits: number;
  /** Trees within the window that ended without a hit, by bucket. */
  readonly buckets: readonly number[];
}

export interface ForecastState {
  finished: number;
  /** The window, a ring: slot `finished % window` is the next one written. */
  ring: Array<{ tree: string; bucket: number }>;
  window: number;
}

export function newForecastState(window = FORECAST_WINDOW): ForecastState {
  return { finished: 0, ring: [], window };
}

/** The bucket a finished tree is kept in: HIT, or its final share of the budget in 5% steps. */
export function bucketOf(spent: number, budget: number, hit: boolean): number {
  if (hit || spent >= budget) return HIT;
  return Math.min(FORECAST_BUCKETS - 1, Math.floor((spent * FORECAST_BUCKETS) / budget));
}

/** Records a finished tree, once per tree while it is within the window. Returns whether it was new. */
export function recordTree(f: ForecastState, tree: string, bucket: number): boolean {
  if (f.ring.some((r) => r.tree === tree)) return false;
  f.ring[f.finished % f.window] = { tree, bucket };
  f.finished += 1;
  return true;
}

export function statsOf(f: ForecastState): ForecastStats {
  const buckets = Array.from({ length: FORECAST_BUCKETS }, () => 0);
  let hits = 0;
  for (const r of f.ring) {
    if (r.bucket === HIT) hits += 1;
    else buckets[r.bucket] = (buckets[r.bucket] ?? 0) + 1;
  }
  return { finished: f.finished, hits, buckets };
}

/**
 * The chance (0..1) that a tree which has spent `spent` of `budget` will need more than its
 * budget, from its agent's finished trees; 0 when none got as far.
 */
export function overChance(stats: ForecastStats, spent: number, budget: number): number {
  const from = Math.min(FORECAST_BUCKETS - 1, Math.floor((spent * FORECAST_BUCKETS) / budget));
  const further = stats.buckets.slice(from).reduce((a, b) => a + b, 0);
  const asFar = stats.hits + further;
  return asFar === 0 ? 0 : stats.hits / asFar;
}

/** Whether a tree gets its forecast at this ask (LIM-8): a budget, on_budget wait, enough history, and the chance reached. */
export function forecastFires(input: { stats: ForecastStats; spent: number; budget: number; chance: number; minRuns: number }): boolean {
  if (input.budget <= 0 || input.spent >= input.budget) return false;
  if (input.stats.finished < input.minRuns) return false;
  return overChance(input.stats, input.spent, input.budget) >= input.chance;
}
