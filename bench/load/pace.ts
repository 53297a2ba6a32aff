/**
 * How agents pace their calls, for `npm run load -- --agents N`: the waits between the steps of
 * a plan (bench/load/mix.ts) as a coding agent makes them, drawn from seeded lognormals fitted
 * to published traces of coding agents (docs/load.md, "Agents"). Pure: a seed in, waits out.
 *
 * - Before a model call's usage event: the model's generation, its think time. The ask is
 *   admitted, the provider generates, then the usage is reported and the next call is made.
 *   Median 4.9 s, mean 11.5 s a step.
 * - Before a tool call's result: the tool's run. Median 0.3 s a call, and 16.8 s of tool time a
 *   step on average at about 1.2 calls a step, so 14 s a call on average.
 *
 * Every draw is capped (10 minutes by default) so a bounded run stays bounded; the tool's
 * spread is chosen so that the capped draws keep the mean of 14 s a call.
 */
import { random } from "../../client/synthetic.ts";
import type { Plan, Step, Tree } from "./mix.ts";

/** Model generation a step, in seconds (published traces of coding agents). */
export const THINK = { median: 4.9, mean: 11.5 } as const;
/** Tool time: a single call's median, the mean a step, and calls a step, in seconds. */
export const TOOL = { median: 0.3, stepMean: 16.8, callsPerStep: 1.2 } as const;
/** The longest one wait lasts, before any scaling: 10 minutes. */
export const CAP_S = 600;

export interface Lognormal {
  /** The mean of the logarithm (ln of the median). */
  readonly mu: number;
  readonly sigma: number;
}

/** The standard normal distribution function (Abramowitz and Stegun 7.1.26 through erf; error under 1.5e-7). */
export function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const erf = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/** The lognormal of this median and mean (uncapped): mu = ln median, sigma = sqrt(2 ln(mean / median)). */
export function lognormalOf(median: number, mean: number): Lognormal {
  if (!(median > 0 && mean > median)) throw new Error(`a lognormal needs 0 < median < mean, got ${median} and ${mean}`);
  return { mu: Math.log(median), sigma: Math.sqrt(2 * Math.log(mean / median)) };
}

/** The mean of min(X, cap) for X lognormal. */
export function cappedMean(d: Lognormal, cap: number): number {
  const lc = Math.log(cap);
  const below = Math.exp(d.mu + (d.sigma * d.sigma) / 2) * normalCdf((lc - d.mu - d.sigma * d.sigma) / d.sigma);
  return below + cap * (1 - normalCdf((lc - d.mu) / d.sigma));
}

/**
 * The lognormal of this median whose draws, capped at `cap`, have this mean: sigma found by
 * bisection (the capped mean grows with sigma, from the median towards half the cap).
 */
export function cappedLognormalOf(median: number, mean: number, cap: number): Lognormal {
  const mu = Math.log(median);
  if (!(median > 0 && mean > median && mean < cap / 2)) throw new Error(`no capped lognormal of median ${median} and mean ${mean} under a cap of ${cap}`);
  let lo = 0;
  let hi = 20;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (cappedMean({ mu, sigma: mid }, cap) < mean) lo = mid;
    else hi = mid;
  }
  return { mu, sigma: (lo + hi) / 2 };
}

/** The model's think time a step: mu = ln 4.9, sigma = sqrt(2 ln(11.5 / 4.9)), about 1.31. */
export const THINK_DIST: Lognormal = lognormalOf(THINK.median, THINK.mean);
/** One tool call's time: median 0.3 s, mean 16.8 / 1.2 = 14 s once capped at CAP_S (sigma about 2.9). */
export const TOOL_DIST: Lognormal = cappedLognormalOf(TOOL.median, TOOL.stepMean / TOOL.callsPerStep, CAP_S);

/** A standard normal draw (Box-Muller) from uniform draws in [0, 1). */
function normal(rnd: () => number): number {
  const u = 1 - rnd(); // in (0, 1]
  const v = rnd();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** One draw of `d`, in seconds, capped at `cap`. */
export function draw(rnd: () => number, d: Lognormal, cap = CAP_S): number {
  return Math.min(cap, Math.exp(d.mu + d.sigma * normal(rnd)));
}

export interface PaceOptions {
  readonly seed: number;
  /** Every wait multiplied by this (1: as agents wait; 0.01 for tests and quick looks). @default 1 */
  readonly thinkScale?: number;
  /** The longest one wait lasts before scaling, in seconds. @default CAP_S */
  readonly capS?: number;
}

/** What kind of wait comes before a step: the model's generation, a tool's run, or none. */
export function waitKind(step: Step): "think" | "tool" | null {
  if (step.kind === "model_usage") return "think";
  if (step.kind === "tool_result") return "tool";
  return null;
}

/**
 * The waits of a plan, in ms, one per step of each tree (0 where no wait comes before it), in
 * the plan's order of trees. Each tree's draws come from the seed and its index alone, so the
 * same seed and plan give the same waits whichever agent plays the tree, in either phase.
 */
export function planWaits(plan: Plan, o: PaceOptions): Map<Tree, readonly number[]> {
  const scale = o.thinkScale ?? 1;
  if (!(scale >= 0 && Number.isFinite(scale))) throw new Error(`the think scale must be 0 or more, got ${scale}`);
  const cap = o.capS ?? CAP_S;
  const waits = new Map<Tree, readonly number[]>();
  plan.trees.forEach((tree, i) => {
    const rnd = random(mix(o.seed, i, 0x7ee));
    waits.set(
      tree,
      tree.steps.map((step) => {
        const kind = waitKind(step);
        return kind === null ? 0 : draw(rnd, kind === "think" ? THINK_DIST : TOOL_DIST, cap) * 1000 * scale;
      }),
    );
  });
  return waits;
}

/**
 * How the agents begin a phase: `steady`, as if they had been playing long before it, so that
 * it offers from its first seconds what N agents offer in the long run; or `cold`, every agent
 * afresh at once, as after a restart of the platform they run on.
 */
export type AgentStart = "steady" | "cold";

/**
 * When each agent starts its first tree, in ms after the phase's start (`start`, by default
 * `steady`; the plan's `waits` as `planWaits` gives them).
 *
 * `steady`: at a moment taken at random, an agent that has long been playing is inside one of
 * its waits (the steps between waits take no time of their own), a wait of w ms with a chance in
 * proportion to w, at a point uniform within it. So each agent starts once the rest of such a
 * wait is over: u * w, with w drawn from the plan's waits by their length and u uniform in
 * [0, 1). Where it would have gone on with the tree that wait was in, it takes a fresh one. With
 * the traces' long tool calls most agents begin inside a long wait (1,000 agents: half start
 * after about 30 s), and a run of a minute offers within a few per cent of the long run's rate
 * (`test/unit/load/pace.test.ts`).
 *
 * `cold`: spread uniformly over the first think time (the mean think time, scaled). Every agent
 * starts afresh with its short waits first: over a run of minutes the agents offer about twice
 * the long run's rate.
 */
export function agentStarts(agents: number, waits: ReadonlyMap<Tree, readonly number[]>, o: PaceOptions & { readonly start?: AgentStart }): number[] {
  if ((o.start ?? "steady") === "cold") {
    const rnd = random(mix(o.seed, 0, 0x51a));
    const span = THINK.mean * 1000 * (o.thinkScale ?? 1);
    return Array.from({ length: agents }, () => rnd() * span);
  }
  const pool: number[] = [];
  const upTo: number[] = [];
  let total = 0;
  for (const tree of waits.values()) {
    for (const w of tree) {
      if (w <= 0) continue;
      total += w;
      pool.push(w);
      upTo.push(total);
    }
  }
  // No waits at all (waits scaled to 0): every agent starts at once.
  if (total === 0) return new Array<number>(agents).fill(0);
  const rnd = random(mix(o.seed, 0, 0x57d));
  return Array.from({ length: agents }, () => {
    // The first wait whose running total passes a point uniform in the total: a wait by its length.
    const at = rnd() * total;
    let lo = 0;
    let hi = upTo.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((upTo[mid] as number) <= at) lo = mid + 1;
      else hi = mid;
    }
    return rnd() * (pool[lo] as number);
  });
}

/** How N agents play a plan: `count` of them, every wait scaled by `thinkScale`, starting `start` (by default `steady`). */
export interface AgentsPlay {
  readonly count: number;
  readonly thinkScale: number;
  readonly start?: AgentStart;
}

/** The plan's waits and the agents' starts, from the seed. */
export function agentsPacing(plan: Plan, seed: number, agents: AgentsPlay): { waits: Map<Tree, readonly number[]>; starts: number[] } {
  const waits = planWaits(plan, { seed, thinkScale: agents.thinkScale });
  return { waits, starts: agentStarts(agents.count, waits, { seed, thinkScale: agents.thinkScale, ...(agents.start ? { start: agents.start } : {}) }) };
}

/** A 32-bit seed of its own for each (seed, index, stream). */
function mix(seed: number, index: number, stream: number): number {
  let h = (Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca77) ^ Math.imul(stream, 0xc2b2ae3d)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  return (h ^ (h >>> 15)) >>> 0;
}

/** Steps whose answer an agent awaits. */
const AWAITED = new Set<Step["kind"]>(["child_ask", "model_ask", "tool_call", "tool_result", "read_result"]);

function awaited(step: Step): boolean {
  return AWAITED.has(step.kind) || (step.kind === "job_started" && step.event.parent_job_id !== null);
}

export interface Offered {
  /** Events a second one agent offers: the plan's events over the plan's waits. */
  readonly eventsPerAgentSecond: number;
  /** The same for `agents` agents. */
  readonly eventsPerSecond: number;
  /** Awaited answers a second the agents ask for. */
  readonly answersPerSecond: number;
  /** The plan's waits, summed, in seconds. */
  readonly waitSeconds: number;
}

/**
 * The load the plan offers at `agents` agents, as if every step were played and every answer
 * came at once: events (and awaited answers) over the waits. The pipeline plays fewer steps
 * (it refuses and stops), and the answers take time, so what is measured is lower.
 */
export function offered(plan: Plan, waits: ReadonlyMap<Tree, readonly number[]>, agents: number): Offered {
  let waitMs = 0;
  let answers = 0;
  for (const tree of plan.trees) {
    for (const w of waits.get(tree) ?? []) waitMs += w;
    for (const s of tree.steps) if (awaited(s)) answers++;
  }
  const waitSeconds = waitMs / 1000;
  const perAgent = waitSeconds > 0 ? plan.events / waitSeconds : Infinity;
  return { eventsPerAgentSecond: perAgent, eventsPerSecond: perAgent * agents, answersPerSecond: waitSeconds > 0 ? (answers / waitSeconds) * agents : Infinity, waitSeconds };
}

export interface OfferedInRun {
  /** Events the agents would send within the run. */
  readonly events: number;
  readonly eventsPerSecond: number;
  /** Awaited answers they would ask for within the run. */
  readonly answersPerSecond: number;
}

/**
 * The load the plan offers within a run of `ms`: the agents played as `playAgents` plays them,
 * from their starts, each taking the next tree when it is free, but with every step played and
 * every answer at once. Higher than the long-run `offered` for runs of minutes: every agent
 * starts afresh, and the rare long waits that make most of the mean have barely begun.
 */
export function offeredInRun(plan: Plan, waits: ReadonlyMap<Tree, readonly number[]>, starts: readonly number[], ms: number): OfferedInRun {
  // Agents by when they are free to take their next tree (a binary heap of [time, agent]).
  const heap: Array<[number, number]> = [];
  const less = (a: [number, number], b: [number, number]): boolean => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
  const push = (x: [number, number]): void => {
    heap.push(x);
    for (let i = heap.length - 1; i > 0; ) {
      const up = (i - 1) >> 1;
      if (!less(heap[i] as [number, number], heap[up] as [number, number])) break;
      [heap[i], heap[up]] = [heap[up] as [number, number], heap[i] as [number, number]];
      i = up;
    }
  };
  const pop = (): [number, number] | undefined => {
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && less(heap[l] as [number, number], heap[m] as [number, number])) m = l;
        if (r < heap.length && less(heap[r] as [number, number], heap[m] as [number, number])) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m] as [number, number], heap[i] as [number, number]];
        i = m;
      }
    }
    return top;
  };
  starts.forEach((t, i) => push([t, i]));
  let next = 0;
  let events = 0;
  let answers = 0;
  for (let free = pop(); free !== undefined; free = pop()) {
    const [at, agent] = free;
    if (at >= ms) continue;
    const tree = plan.trees[next++];
    if (!tree) break;
    const w = waits.get(tree) ?? [];
    let now = at;
    let whole = true;
    for (const [i, step] of tree.steps.entries()) {
      now += w[i] ?? 0;
      if (now >= ms) {
        whole = false;
        break;
      }
      events++;
      if (awaited(step)) answers++;
    }
    if (whole) push([now, agent]);
  }
  const seconds = ms / 1000;
  return { events, eventsPerSecond: events / seconds, answersPerSecond: answers / seconds };
}

/**
 * Events a plan for `agents` agents over `seconds` should hold by default, so that no agent
 * runs out of trees: a tree for each agent to start with (a tree holds about 21 events, and at
 * an agent's pace lasts about two minutes), and what they offer over the seconds at about 0.16
 * to 0.2 events a second each (more when the waits are scaled down), with a margin; at least
 * 3,000 and at most 500,000.
 */
export function agentsEvents(agents: number, seconds: number, thinkScale = 1): number {
  const perSecond = 0.25 / Math.max(thinkScale, 0.0025);
  return Math.min(500_000, Math.max(3_000, Math.ceil(agents * (25 + seconds * perSecond))));
}
