/**
 * A soak (`npm run load -- --agents N --minutes M`): the pipeline played by agents for minutes
 * to hours, sampled every few seconds, to see whether anything drifts: latency, consumer lag,
 * the pipeline's memory, dead letters, answers that never came. Pure: the windowing of the
 * answers, the verdict rule, the report and its chart. The run itself is bench/load/soak-run.ts.
 */
import { chartSvg, type Panel, type Series } from "./chart.ts";
import { MEASURED, MEASURED_KINDS, type Measured } from "./play.ts";
import { fmt, percentile } from "./stats.ts";
import type { AgentsPlay } from "./pace.ts";

/** The most minutes a soak may last. */
export const MAX_SOAK_MINUTES = 240;
/** The shortest period between samples, in seconds, and the default. */
export const MIN_SAMPLE_SECONDS = 5;
export const DEFAULT_SAMPLE_SECONDS = 30;

export interface WindowFigures {
  /** Answers that came in the window. */
  readonly count: number;
  /** Nearest-rank p50 and p99 of their latencies in ms; NaN when none came. */
  readonly p50: number;
  readonly p99: number;
}

export interface SoakSample {
  /** The end of the window, ms since epoch. */
  readonly at: number;
  /** Seconds from the soak's start to the end of the window. */
  readonly t: number;
  /** The window's length in seconds. */
  readonly windowS: number;
  /** The sample taken after the time was up, of the answers that came in the grace: shown, not judged. */
  readonly end?: boolean;
  /** Events published in the window. */
  readonly events: number;
  /** Each exchange's answers in the window, and all of them pooled. */
  readonly exchanges: Readonly<Record<Measured, WindowFigures>>;
  readonly all: WindowFigures;
  /** Consumer lag of each processor at the end of the window; null when it could not be read. */
  readonly lag: Readonly<Record<string, number>> | null;
  /** The pipeline process's memory in bytes; null when it is not known (`heap` alone may be). */
  readonly rss: number | null;
  readonly heap: number | null;
  /** Dead letters since the soak started; null when they could not be counted. */
  readonly deadLetters: number | null;
  /** Awaited answers that did not come, since the soak started. */
  readonly unanswered: number;
}

/** The answers a Recorder holds, by exchange: latencies and when each came, in the same order. */
export interface Answers {
  readonly latencies: Readonly<Record<Measured, readonly number[]>>;
  readonly answeredAt: Readonly<Record<Measured, readonly number[]>>;
}

/**
 * How far a recorder's lists had grown at one moment: what was recorded between two marks is
 * one window, every record in exactly one, whatever the clock says (two records, or a record
 * and a sample, can fall in the same millisecond).
 */
export interface Mark {
  readonly events: number;
  readonly answers: Readonly<Record<Measured, number>>;
}

export function markOf(rec: Answers & { readonly sentAt: readonly number[] }): Mark {
  return { events: rec.sentAt.length, answers: Object.fromEntries(MEASURED_KINDS.map((k) => [k, rec.answeredAt[k].length])) as Record<Measured, number> };
}

/** The latency figures of the answers recorded from the `from` counts to the `to` counts, by exchange and pooled. */
export function windowBetween(a: Answers, from: Readonly<Record<Measured, number>>, to: Readonly<Record<Measured, number>>): { exchanges: Record<Measured, WindowFigures>; all: WindowFigures } {
  const pooled: number[] = [];
  const exchanges = {} as Record<Measured, WindowFigures>;
  for (const k of MEASURED_KINDS) {
    const values = a.latencies[k].slice(from[k], to[k]);
    pooled.push(...values);
    values.sort((x, y) => x - y);
    exchanges[k] = { count: values.length, p50: percentile(values, 50), p99: percentile(values, 99) };
  }
  pooled.sort((x, y) => x - y);
  return { exchanges, all: { count: pooled.length, p50: percentile(pooled, 50), p99: percentile(pooled, 99) } };
}

/** The lag of every processor summed; NaN when it was not read. */
export function totalLag(s: SoakSample): number {
  return s.lag === null ? NaN : Object.values(s.lag).reduce((a, b) => a + b, 0);
}

/** The resident set size in bytes from the text of /proc/<pid>/status (its `VmRSS:` line, in kB); null without one. */
export function vmRssBytes(status: string): number | null {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  return m ? Number(m[1]) * 1024 : null;
}

export interface Tolerance {
  /** The share of the first third's median the last third's may differ by (0.25: 25%). */
  readonly relative: number;
  /** An absolute difference always allowed, in the series' unit, so small values do not flap. */
  readonly floor: number;
}

/** The tolerances of the verdicts: 25% or a floor, whichever is larger. */
export const TOLERANCE = {
  latency: { relative: 0.25, floor: 5 },
  lag: { relative: 0.25, floor: 50 },
  memory: { relative: 0.25, floor: 16 * 1024 * 1024 },
} as const satisfies Record<string, Tolerance>;

export type Trend = "flat" | "rising" | "falling" | "too few samples";

export interface Verdict {
  readonly trend: Trend;
  /** Medians of the first and the last third of the samples judged; NaN with too few. */
  readonly first: number;
  readonly last: number;
  /** The difference allowed: max(relative x |first|, floor). */
  readonly allowed: number;
  /** Samples judged (those with a value, after the warm-up's were dropped). */
  readonly samples: number;
}

function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/**
 * The verdict on one series over the soak: the first `warmUp` samples dropped (the pipeline
 * settling in), samples without a value skipped, then the median of the last third against
 * the median of the first third: "flat" when they differ by at most max(relative x first,
 * floor), else "rising" or "falling". Fewer than 3 samples judged: "too few samples".
 */
export function verdictOf(values: ReadonlyArray<number | null | undefined>, tol: Tolerance, warmUp = 1): Verdict {
  const judged = values.slice(warmUp).filter((v): v is number => typeof v === "number" && Number.isFinite(v));
  if (judged.length < 3) return { trend: "too few samples", first: NaN, last: NaN, allowed: NaN, samples: judged.length };
  const third = Math.floor(judged.length / 3);
  const first = median(judged.slice(0, third));
  const last = median(judged.slice(judged.length - third));
  const allowed = Math.max(tol.relative * Math.abs(first), tol.floor);
  const diff = last - first;
  const trend: Trend = Math.abs(diff) <= allowed ? "flat" : diff > 0 ? "rising" : "falling";
  return { trend, first, last, allowed, samples: judged.length };
}

export interface SeriesVerdict extends Verdict {
  readonly series: string;
  readonly unit: "ms" | "messages" | "MiB";
}

const MIB = 1024 * 1024;

/** The series judged, from the samples taken in the time (the end sample is shown, not judged). */
export function soakVerdicts(samples: readonly SoakSample[]): SeriesVerdict[] {
  const timed = samples.filter((s) => !s.end);
  const out: SeriesVerdict[] = [];
  const add = (series: string, unit: SeriesVerdict["unit"], values: ReadonlyArray<number | null>, tol: Tolerance, scale = 1): void => {
    const v = verdictOf(values, tol);
    out.push({ series, unit, ...v, first: v.first / scale, last: v.last / scale, allowed: v.allowed / scale });
  };
  add("latency p50, all exchanges", "ms", timed.map((s) => s.all.p50), TOLERANCE.latency);
  add("latency p99, all exchanges", "ms", timed.map((s) => s.all.p99), TOLERANCE.latency);
  for (const k of MEASURED_KINDS) {
    if (!timed.some((s) => s.exchanges[k].count > 0)) continue;
    add(`latency p50, ${MEASURED[k].exchange}`, "ms", timed.map((s) => s.exchanges[k].p50), TOLERANCE.latency);
    add(`latency p99, ${MEASURED[k].exchange}`, "ms", timed.map((s) => s.exchanges[k].p99), TOLERANCE.latency);
  }
  add("consumer lag, all processors", "messages", timed.map(totalLag), TOLERANCE.lag);
  if (timed.some((s) => s.rss !== null)) add("pipeline RSS", "MiB", timed.map((s) => s.rss), TOLERANCE.memory, MIB);
  if (timed.some((s) => s.heap !== null)) add("pipeline heap used", "MiB", timed.map((s) => s.heap), TOLERANCE.memory, MIB);
  return out;
}

/** One verdict as a line of the report. */
export function verdictLine(v: SeriesVerdict): string {
  if (v.trend === "too few samples") return `- ${v.series}: too few samples (${v.samples} judged, 3 needed)`;
  const digits = v.unit === "MiB" ? 1 : 0;
  const change = v.first !== 0 ? ` (${v.last >= v.first ? "+" : ""}${fmt(((v.last - v.first) / Math.abs(v.first)) * 100)}%)` : "";
  return `- ${v.series}: **${v.trend}**, first third's median ${fmt(v.first, digits)} ${v.unit}, last third's ${fmt(v.last, digits)} ${v.unit}${change}, allowed ±${fmt(v.allowed, digits)} ${v.unit}; ${v.samples} samples`;
}

/** The chart's panels over time (x in minutes since the start): latency, lag, memory. */
export function soakPanels(samples: readonly SoakSample[]): Panel[] {
  const x = (s: SoakSample): number => s.t / 60;
  const line = (pick: (s: SoakSample) => number | null): Array<[number, number]> =>
    samples.flatMap((s) => {
      const y = pick(s);
      return y !== null && Number.isFinite(y) ? [[x(s), y] as [number, number]] : [];
    });
  const latencySeries: Series[] = [
    { name: "all p50", points: line((s) => s.all.p50) },
    ...MEASURED_KINDS.filter((k) => samples.some((s) => s.exchanges[k].count > 0)).map((k) => ({ name: `${k} p50`, points: line((s) => s.exchanges[k].p50) })),
    { name: "all p99", points: line((s) => s.all.p99), dashed: true },
    ...MEASURED_KINDS.filter((k) => samples.some((s) => s.exchanges[k].count > 0)).map((k) => ({ name: `${k} p99`, points: line((s) => s.exchanges[k].p99), dashed: true })),
  ];
  const processors = [...new Set(samples.flatMap((s) => Object.keys(s.lag ?? {})))].sort();
  const panels: Panel[] = [
    { title: "Latency of the answers in each window (dashed: p99)", xLabel: "minutes since the soak started", yLabel: "latency (ms)", series: latencySeries },
    {
      title: "Consumer lag at each sample (all processors, and each)",
      xLabel: "minutes since the soak started",
      yLabel: "consumer lag (messages)",
      series: [{ name: "all processors", points: line((s) => totalLag(s)) }, ...processors.map((p) => ({ name: p, points: line((s) => s.lag?.[p] ?? null), dashed: true }))],
    },
  ];
  if (samples.some((s) => s.rss !== null || s.heap !== null)) {
    panels.push({
      title: "The pipeline process's memory",
      xLabel: "minutes since the soak started",
      yLabel: "MiB",
      series: [
        { name: "RSS", points: line((s) => (s.rss === null ? null : s.rss / MIB)) },
        { name: "heap used", points: line((s) => (s.heap === null ? null : s.heap / MIB)), dashed: true },
      ],
    });
  }
  return panels;
}

export interface SoakResult {
  readonly at: Date;
  readonly command: string;
  readonly seed: number;
  readonly warmUpEvents: number;
  readonly agents: AgentsPlay;
  readonly minutes: number;
  readonly sampleSeconds: number;
  readonly external: boolean;
  readonly node: string;
  /** The plan's events, and whether the agents took its last tree before the time was up. */
  readonly plan: { readonly events: number; readonly exhausted: boolean };
  readonly totals: { readonly events: number; readonly answers: number; readonly unanswered: number; readonly treesDone: number; readonly treesCut: number; readonly deadLetters: number | null };
  /** Where the memory and the dead letters were read from, in words. */
  readonly memorySource: string;
  readonly deadLettersSource: string;
  readonly samples: readonly SoakSample[];
  readonly errors: readonly string[];
  readonly chartFile: string;
}

export function soakChart(r: SoakResult): string {
  return chartSvg(`Soak ${r.at.toISOString()}: ${r.agents.count} agents for ${r.minutes} min, sampled every ${r.sampleSeconds} s`, soakPanels(r.samples));
}

const mib = (n: number | null): string => (n === null ? "-" : fmt(n / MIB, 1));
const cell = (w: WindowFigures): string => (w.count === 0 ? "0" : `${w.count} / ${fmt(w.p50)} / ${fmt(w.p99)}`);

export function soakMarkdown(r: SoakResult): string {
  const where = r.external ? "against a pipeline running elsewhere (`--external`)" : "with the pipeline in this process";
  const kinds = MEASURED_KINDS.filter((k) => r.samples.some((s) => s.exchanges[k].count > 0));
  const verdicts = soakVerdicts(r.samples);
  const lines: string[] = [
    `# Soak report (${r.at.toISOString()})`,
    "",
    `\`${r.command}\`: seed ${r.seed}, ${r.agents.count} agents, each waiting between steps as agents do${r.agents.thinkScale !== 1 ? ` (every wait scaled by ${r.agents.thinkScale})` : ""}${r.agents.start === "cold" ? ", all starting afresh (`--cold-start`)" : ""}, for ${r.minutes} min, sampled every ${r.sampleSeconds} s, ${where}; Node ${r.node}.`,
    "",
    "The pipeline phase only: a soak plays no passthrough phase, so there are no ratios to a bare kafkajs passthrough here (`npm run load -- --agents N` gives them).",
    r.warmUpEvents > 0 ? `Before the soak, a warm-up plan of ${r.warmUpEvents} events (seed ${r.seed + 1}) was played and not counted.` : "No warm-up was played (`--warm-up 0`).",
    ...(r.plan.exhausted ? ["", `**The agents took the plan's last tree before the time was up** (${r.plan.events} events): the load fell after that. Give a larger \`--events\`.`] : []),
    "",
    "## Verdicts",
    "",
    `Each series over the samples taken in the time: the first sample dropped (the warm-up of the soak), samples without a value skipped, then the median of the last third against the median of the first third. **flat** when they differ by at most 25% of the first third's median or a floor (${TOLERANCE.latency.floor} ms of latency, ${TOLERANCE.lag.floor} messages of lag, ${TOLERANCE.memory.floor / MIB} MiB of memory), whichever is larger; otherwise **rising** or **falling**.`,
    "",
    ...verdicts.map(verdictLine),
    `- dead letters: ${r.totals.deadLetters === null ? "not counted" : `${r.totals.deadLetters} in the soak`} (${r.deadLettersSource})`,
    `- not answered in time: ${r.totals.unanswered}`,
    "",
    "## Totals",
    "",
    "| measure | value |",
    "| --- | ---: |",
    `| events published | ${r.totals.events} |`,
    `| answers awaited and received | ${r.totals.answers} |`,
    `| not answered in time | ${r.totals.unanswered} |`,
    `| trees played whole / cut short | ${r.totals.treesDone} / ${r.totals.treesCut} |`,
    `| dead letters | ${r.totals.deadLetters ?? "-"} |`,
    `| samples | ${r.samples.length} |`,
    "",
    "## Over time",
    "",
    `One row per sample. Each exchange's cell: answers that came in the window / p50 / p99, in ms from the publish to the answer (an agent's waits are never counted). Lag: messages of each processor's input not yet committed at the sample, summed over processors (a partition drained in transactions shows 1 for its marker). Memory: ${r.memorySource}. Dead letters and unanswered: since the soak started. Chart: [${r.chartFile}](${r.chartFile}).`,
    "",
    `![latency, consumer lag and memory over time](${r.chartFile})`,
    "",
    `| t (s) | events/s | all: answers / p50 / p99 | ${kinds.map((k) => `${k}`).join(" | ")} | lag | RSS MiB | heap MiB | dead letters | unanswered |`,
    `| ---: | ---: | ---: | ${kinds.map(() => "---:").join(" | ")} | ---: | ---: | ---: | ---: | ---: |`,
    ...r.samples.map(
      (s) =>
        `| ${fmt(s.t)}${s.end ? " (end)" : ""} | ${fmt(s.windowS > 0 ? s.events / s.windowS : NaN, 1)} | ${cell(s.all)} | ${kinds.map((k) => cell(s.exchanges[k])).join(" | ")} | ${fmt(totalLag(s))} | ${mib(s.rss)} | ${mib(s.heap)} | ${s.deadLetters ?? "-"} | ${s.unanswered} |`,
    ),
    "",
    `Exchanges: ${kinds.map((k) => `\`${k}\` ${MEASURED[k].exchange}`).join("; ")}. The row marked (end) holds what came after the time was up (answers asked for by then get a grace to come); it is not judged.`,
    "",
  ];
  if (r.errors.length > 0) lines.push("## Errors", "", ...r.errors.map((e) => `- ${e}`), "");
  return lines.join("\n");
}
