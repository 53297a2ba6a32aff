/**
 * A sweep of offered load (`npm run load -- --runtimes 1,8,24,64`): at each number of runtimes,
 * the sustained events per second and the latency of every awaited answer (all exchanges
 * pooled), pipeline and passthrough side by side. The chart draws latency against events per
 * second for both, so the knee of each, where more runtimes add latency and no throughput,
 * shows. Pure: results in, text out.
 *
 * An agents sweep (`npm run load -- --agents 100,300,1000,3000`) adds the rate the plan offers
 * at each number of agents and, for the pipeline and the passthrough, the most agents held: the
 * largest number at which, and at every smaller number swept, every awaited answer came and
 * the p99 of the answers (all exchanges pooled) was at most 100 ms.
 */
import { chartSvg } from "./chart.ts";
import { MEASURED_KINDS } from "./play.ts";
import { sustained, type LoadResult, type PhaseResult } from "./report.ts";
import { fmt, HELD_P99_MS, latency, ratio } from "./stats.ts";

export interface SweepSide {
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly answers: number;
  /** Awaited answers that did not come in time. @default 0 */
  readonly unanswered?: number;
}

export interface SweepPoint {
  /** The number of runtimes, or of agents in an agents sweep. */
  readonly runtimes: number;
  /** In an agents sweep: the events a second the plan offers at this many agents, over the run and in the long run. */
  readonly offered?: { readonly inRun: number; readonly longRun: number };
  readonly pipeline: SweepSide;
  readonly passthrough: SweepSide;
}

function side(p: PhaseResult): SweepSide {
  const all = latency(MEASURED_KINDS.flatMap((k) => p.rec.latencies[k]));
  return { perSecond: sustained(p).perSecond, p50: all.p50, p99: all.p99, answers: all.count, unanswered: MEASURED_KINDS.reduce((s, k) => s + p.rec.unanswered[k], 0) };
}

export function sweepPoint(runtimes: number, r: LoadResult): SweepPoint {
  return { runtimes, ...(r.agents ? { offered: { inRun: r.agents.inRun.eventsPerSecond, longRun: r.agents.offered.eventsPerSecond } } : {}), pipeline: side(r.pipeline), passthrough: side(r.passthrough) };
}

/** Whether one side held at its level: answers came, all of them, with a p99 of at most `p99Ms`. */
export function held(s: SweepSide, p99Ms = HELD_P99_MS): boolean {
  return s.answers > 0 && (s.unanswered ?? 0) === 0 && Number.isFinite(s.p99) && s.p99 <= p99Ms;
}

/**
 * The most agents (or runtimes) held: the largest level at which, and at every smaller level
 * swept, the side held (`held`); undefined when the smallest did not.
 */
export function mostHeld(points: readonly SweepPoint[], pick: (p: SweepPoint) => SweepSide, p99Ms = HELD_P99_MS): number | undefined {
  let most: number | undefined;
  for (const p of [...points].sort((a, b) => a.runtimes - b.runtimes)) {
    if (!held(pick(p), p99Ms)) break;
    most = p.runtimes;
  }
  return most;
}

export function sweepMarkdown(command: string, points: readonly SweepPoint[], unit: "runtimes" | "agents" = "runtimes"): string {
  if (unit === "agents") return agentsSweepMarkdown(command, points);
  return [
    "# Load sweep",
    "",
    `\`${command}\`: the same plan at each number of runtimes, pipeline then passthrough each time. Latency of every awaited answer, all exchanges pooled, in ms.`,
    "",
    "| runtimes | pipeline events/s | passthrough events/s | ratio | pipeline p50 | p99 | passthrough p50 | p99 | p50 ratio | p99 ratio |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...points.map(
      (p) =>
        `| ${p.runtimes} | ${fmt(p.pipeline.perSecond, 1)} | ${fmt(p.passthrough.perSecond, 1)} | ${ratio(p.pipeline.perSecond, p.passthrough.perSecond)} | ${fmt(p.pipeline.p50)} | ${fmt(p.pipeline.p99)} | ${fmt(p.passthrough.p50)} | ${fmt(p.passthrough.p99)} | ${ratio(p.pipeline.p50, p.passthrough.p50)} | ${ratio(p.pipeline.p99, p.passthrough.p99)} |`,
    ),
    "",
    "Chart: [sweep.svg](sweep.svg).",
    "",
  ].join("\n");
}

function agentsSweepMarkdown(command: string, points: readonly SweepPoint[]): string {
  const most = (pick: (p: SweepPoint) => SweepSide): string => {
    const n = mostHeld(points, pick);
    return n === undefined ? "none of those swept" : `${n}`;
  };
  const mark = (s: SweepSide): string => (held(s) ? "yes" : "no");
  return [
    "# Load sweep (agents)",
    "",
    `\`${command}\`: the same plan at each number of agents, each agent waiting between steps as agents do, pipeline then passthrough each time with the same waits. Latency of every awaited answer, all exchanges pooled, in ms, from the send to the answer (the waits are not counted).`,
    "",
    `| most agents held (every answer came, p99 <= ${HELD_P99_MS} ms, here and at every smaller number) | pipeline | passthrough |`,
    "| --- | ---: | ---: |",
    `| agents | ${most((p) => p.pipeline)} | ${most((p) => p.passthrough)} |`,
    "",
    "| agents | offered events/s over the run | in the long run | pipeline events/s | passthrough events/s | pipeline p50 | p99 | not answered | held | passthrough p50 | p99 | not answered | held |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |",
    ...points.map(
      (p) =>
        `| ${p.runtimes} | ${fmt(p.offered?.inRun ?? NaN, 1)} | ${fmt(p.offered?.longRun ?? NaN, 1)} | ${fmt(p.pipeline.perSecond, 1)} | ${fmt(p.passthrough.perSecond, 1)} | ${fmt(p.pipeline.p50)} | ${fmt(p.pipeline.p99)} | ${p.pipeline.unanswered ?? 0} | ${mark(p.pipeline)} | ${fmt(p.passthrough.p50)} | ${fmt(p.passthrough.p99)} | ${p.passthrough.unanswered ?? 0} | ${mark(p.passthrough)} |`,
    ),
    "",
    "The offered rates are what the agents would send if every step were played and every answer came at once: over the run (the agents played with their waits for its seconds), and in the long run (the plan's events over its waits, times the agents). A run of minutes offers more than the long run, as every agent starts afresh and the rare long waits that make most of the mean have barely begun. The pipeline plays fewer steps (it refuses and stops), and answers take time, so the measured rates are lower.",
    "",
    "Chart: [sweep.svg](sweep.svg).",
    "",
  ].join("\n");
}

export function sweepChart(points: readonly SweepPoint[], unit: "runtimes" | "agents" = "runtimes"): string {
  const line = (pick: (p: SweepPoint) => SweepSide, q: "p50" | "p99"): Array<[number, number]> =>
    points
      .map((p) => [pick(p).perSecond, pick(p)[q]] as [number, number])
      .filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y))
      .sort((a, b) => a[0] - b[0]);
  const levels = points.map((p) => p.runtimes).join(", ");
  return chartSvg(`Latency against throughput at ${levels} ${unit}`, [
    {
      title: "Latency of an answer against sustained events per second (dashed: p99)",
      xLabel: "sustained events per second",
      yLabel: "latency (ms)",
      series: [
        { name: "pipeline p50", points: line((p) => p.pipeline, "p50") },
        { name: "passthrough p50", points: line((p) => p.passthrough, "p50") },
        { name: "pipeline p99", points: line((p) => p.pipeline, "p99"), dashed: true },
        { name: "passthrough p99", points: line((p) => p.passthrough, "p99"), dashed: true },
      ],
    },
  ]);
}
