/**
 * A sweep of offered load (`npm run load -- --runtimes 1,8,24,64`): at each number of runtimes,
 * the sustained events per second and the latency of every awaited answer (all exchanges
 * pooled), pipeline and passthrough side by side. The chart draws latency against events per
 * second for both, so the knee of each, where more runtimes add latency and no throughput,
 * shows. Pure: results in, text out.
 */
import { chartSvg } from "./chart.ts";
import { MEASURED_KINDS } from "./play.ts";
import { sustained, type LoadResult, type PhaseResult } from "./report.ts";
import { fmt, latency, ratio } from "./stats.ts";

export interface SweepSide {
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly answers: number;
}

export interface SweepPoint {
  readonly runtimes: number;
  readonly pipeline: SweepSide;
  readonly passthrough: SweepSide;
}

function side(p: PhaseResult): SweepSide {
  const all = latency(MEASURED_KINDS.flatMap((k) => p.rec.latencies[k]));
  return { perSecond: sustained(p).perSecond, p50: all.p50, p99: all.p99, answers: all.count };
}

export function sweepPoint(runtimes: number, r: LoadResult): SweepPoint {
  return { runtimes, pipeline: side(r.pipeline), passthrough: side(r.passthrough) };
}

export function sweepMarkdown(command: string, points: readonly SweepPoint[]): string {
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

export function sweepChart(points: readonly SweepPoint[]): string {
  const line = (pick: (p: SweepPoint) => SweepSide, q: "p50" | "p99"): Array<[number, number]> =>
    points
      .map((p) => [pick(p).perSecond, pick(p)[q]] as [number, number])
      .filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y))
      .sort((a, b) => a[0] - b[0]);
  const levels = points.map((p) => p.runtimes).join(", ");
  return chartSvg(`Latency against throughput at ${levels} runtimes`, [
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
