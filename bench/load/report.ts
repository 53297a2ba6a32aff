import type { CpuSpent } from "../pipeline/cpu.ts";
/**
 * The load report: Markdown with every figure, and an SVG chart of consumer lag and events per
 * second over time. Pure: what a run measured in, text out.
 */
import { causedByPipeline, causedTotal, describeCaused, extra, perEvent, recordsPerEvent, type Caused } from "./caused.ts";
import { chartSvg, type Series } from "./chart.ts";
import type { LagSample } from "./lag.ts";
import { STEP_KINDS, TREE_KINDS, type StepKind, type TreeKind } from "./mix.ts";
import type { AgentStart, Offered, OfferedInRun } from "./pace.ts";
import { MEASURED, MEASURED_KINDS, type Recorder } from "./play.ts";
import { REDIS_LATENCY_KEPT, slowBesideStalls, stallsByEvent, type RedisStalls } from "./redis-stalls.ts";
import { bytes, fmt, HELD_P99_MS, latency, perSecond, ratio, slowSeconds } from "./stats.ts";

export interface PhaseResult {
  /** When the phase's clock started (its first runtime started) and stopped (the last runtime finished). */
  readonly startedAt: number;
  readonly endedAt: number;
  readonly rec: Recorder;
  readonly lag: readonly LagSample[];
  /** CPU spent from the phase's first publish to its last answer, where it could be sampled. */
  readonly cpu?: CpuSpent;
  /**
   * What the phase wrote, from just before its first publish to just after its last answer:
   * `records`, the growth of its topics' end offsets (the pipeline's topics, or the passthrough's
   * two) summed over their partitions, transaction markers included; `objects`, the objects the
   * pipeline's process put to MinIO (the pipeline's phase only); `internal`, the growth of
   * Kafka's own topics (`__consumer_offsets`, `__transaction_state`). null where it could not be read.
   */
  readonly written?: { readonly records: number | null; readonly internal?: number | null; readonly objects?: number | null };
  /** Redis's latency monitor over the phase: its threshold, and the seconds it noted a stall in (`redis-stalls.ts`). Absent where it could not be read. */
  readonly redis?: RedisStalls;
}

/** The name the CPU of a pipeline elsewhere (`--external`, from its `/metrics`) is sampled by. */
export const PIPELINE_ELSEWHERE = "the pipeline's process (elsewhere; idle in the passthrough's phase)";

/** The services whose CPU the pipeline causes beyond the passthrough's, by the names the local stack's are sampled by (`localStackReadings`). */
const SERVICES = ["MinIO", "Redis", "the schema registry"] as const;

/** CPU milliseconds per event published, of one reading; empty when it could not be read. */
function msPerEvent(seconds: number | null | undefined, events: number): string {
  return seconds === null || seconds === undefined || events === 0 ? "" : fmt((seconds * 1000) / events, 2);
}

/**
 * A row for each other process sampled (the pipeline's elsewhere, the local stack's MinIO,
 * Redis and registry), under the name it was sampled by, in that order, where either phase read it.
 */
function otherRows(pipe: CpuSpent, base: CpuSpent, row: (what: string, pick: (c: CpuSpent) => number | null) => string): string[] {
  const names = [...new Set([...Object.keys(pipe.others ?? {}), ...Object.keys(base.others ?? {})])];
  return names.filter((n) => (pipe.others?.[n] ?? null) !== null || (base.others?.[n] ?? null) !== null).map((n) => row(n, (c) => c.others?.[n] ?? null));
}

/**
 * The CPU caused by the pipeline, in ms per event: its process (elsewhere, from its `/metrics`;
 * in this process, what this process spent per event beyond the passthrough's phase) plus what
 * the broker, MinIO, Redis and the registry spent per event beyond the passthrough's phase.
 */
export function causedCpu(pipe: PhaseResult, base: PhaseResult, external: boolean): Caused | undefined {
  const a = pipe.cpu;
  const b = base.cpu;
  if (!a || !b) return undefined;
  const ms = (seconds: number | null | undefined, events: number): number | null => perEvent(seconds === null || seconds === undefined ? null : seconds * 1000, events);
  const reading = (pick: (c: CpuSpent) => number | null | undefined) => ({ pipeline: ms(pick(a), pipe.rec.events), passthrough: ms(pick(b), base.rec.events) });
  const own = reading((c) => c.process);
  const process = external
    ? { name: "the pipeline's process", ms: ms(a.others[PIPELINE_ELSEWHERE], pipe.rec.events) }
    : { name: "this process's extra", ms: extra(own) };
  return causedByPipeline(process, [{ name: "the broker", ...reading((c) => c.broker) }, ...SERVICES.map((n) => ({ name: n, ...reading((c) => c.others[n]) }))]);
}

function cpuRows(pipe: PhaseResult, base: PhaseResult, external: boolean): string[] {
  const caused = causedCpu(pipe, base, external);
  if (!pipe.cpu || !base.cpu || !caused) return [];
  const row = (what: string, pick: (c: CpuSpent) => number | null) => {
    const a = pick(pipe.cpu as CpuSpent);
    const b = pick(base.cpu as CpuSpent);
    const pa = a === null ? NaN : a / Math.max(1, pipe.rec.events);
    const pb = b === null ? NaN : b / Math.max(1, base.rec.events);
    return `| ${what} | ${msPerEvent(a, pipe.rec.events)} | ${msPerEvent(b, base.rec.events)} | ${Number.isFinite(pa) && Number.isFinite(pb) ? ratio(pa, pb) : ""} |`;
  };
  return [
    "",
    "## CPU per event",
    "",
    "CPU milliseconds per event published, from each phase's first publish to its last answer, read from `/proc` (the broker's, MinIO's, Redis's and the registry's only where they run on this machine, as the local stack's do; a pipeline's elsewhere from its `/metrics`).",
    "",
    "| CPU of | pipeline ms/event | passthrough ms/event | ratio |",
    "| --- | ---: | ---: | ---: |",
    row("the broker", (c) => c.broker),
    ...otherRows(pipe.cpu, base.cpu, row),
    row(external ? "this process (the runtimes; the pipeline runs elsewhere)" : "this process (the runtimes and the pipeline)", (c) => c.process),
    row("the whole machine (every core, every process)", (c) => c.machine),
    `| caused by the pipeline | ${causedTotal(caused)} | | |`,
    "",
    `Caused by the pipeline, ms per event: ${describeCaused(caused)}. ${
      external
        ? "The pipeline's process is its CPU per event read from its `/metrics`, whole"
        : "The pipeline runs in this process beside the runtimes, and the two cannot be told apart: its part is this process's CPU per event in the pipeline's phase less that in the passthrough's phase (which takes off the runtimes' cost, and the passthrough's own)"
    }; each service's extra is what it spent per event in the pipeline's phase beyond the passthrough's phase, never below 0.`,
  ];
}

/** A phase shorter than this many of the sinks' waits is said to be short beside its CPU figures. */
export const SINK_WAITS_A_PHASE = 3;

/**
 * Beside the CPU figures of a pipeline phase shorter than a few of the sinks' waits: the sinks
 * write once a wait, so whether one of their writes falls in the phase moves its figures.
 */
export function shortPhaseNote(pipe: PhaseResult, sinkWaitMs: number | undefined): string[] {
  if (sinkWaitMs === undefined || !pipe.cpu || pipe.rec.firstAt === undefined || pipe.rec.lastAt === undefined) return [];
  const seconds = (pipe.rec.lastAt - pipe.rec.firstAt) / 1000;
  if (seconds >= (SINK_WAITS_A_PHASE * sinkWaitMs) / 1000) return [];
  const rate = seconds > 0 ? pipe.rec.events / seconds : 0;
  const enough = Math.ceil((rate * 60) / 1000) * 1000;
  return [
    "",
    `**A short phase.** The pipeline's phase was active ${fmt(seconds, 1)} s, under ${SINK_WAITS_A_PHASE} of the sinks' waits (${fmt(sinkWaitMs / 1000, 1)} s, \`OZ0_SINK_MAX_WAIT_MS\` as this command sees it). The sinks write what the events caused to MinIO once a wait, so whether one of their writes falls in the phase moves MinIO's and the process's figures above, and the caused CPU with them, from run to run. A phase of a minute or more holds several of their writes and reads steadier${enough > 0 ? `: at this phase's rate, \`--events ${enough}\`` : ""}.`,
  ];
}

/** Records written to Kafka and objects put to MinIO per event published, beside the CPU. */
function writtenRows(pipe: PhaseResult, base: PhaseResult): string[] {
  if (!pipe.written && !base.written) return [];
  const cell = (n: number | null): string => (n === null ? "unknown" : fmt(n, 2));
  const records = (p: PhaseResult) => recordsPerEvent(p.written?.records, p.rec.events);
  const internal = (p: PhaseResult) => perEvent(p.written?.internal, p.rec.events);
  const objects = perEvent(pipe.written?.objects, pipe.rec.events);
  const internalRow = pipe.written?.internal !== undefined || base.written?.internal !== undefined;
  return [
    "",
    "### Records and objects per event",
    "",
    "| per event published | pipeline | passthrough | ratio |",
    "| --- | ---: | ---: | ---: |",
    `| records written to Kafka, beyond the event | ${cell(records(pipe))} | ${cell(records(base))} | ${ratio(records(pipe) ?? NaN, records(base) ?? NaN)} |`,
    ...(internalRow ? [`| records Kafka wrote to its own topics (committed offsets, transaction state) | ${cell(internal(pipe))} | ${cell(internal(base))} | ${ratio(internal(pipe) ?? NaN, internal(base) ?? NaN)} |`] : []),
    `| objects the pipeline's process put to MinIO | ${cell(objects)} | | |`,
    "",
    "Records: what every topic of the pipeline (`topology/topics.ts`; the passthrough's phase: its two topics) grew by from just before the first publish to just after the last answer (end offsets summed over partitions, so transaction markers count, and so does what others publish there meanwhile), less the events published, over the events published. Kafka's own topics: what `__consumer_offsets` and `__transaction_state` grew by over the same span, over the events published: each transaction writes its offsets and a marker to the group's partition of the first, and its states (begun, partitions added, committing, committed) to the second; a consumer outside transactions writes its offsets. Objects: the puts the pipeline's process counts (`oz0_object_puts_total`) over the same span: trace parts, audit objects, offloaded results and files; the sinks flush every few seconds, so a flush of the warm-up's may fall in and one of the phase's last events out.",
  ];
}

export interface ProcessorCounters {
  readonly name: string;
  readonly in: number;
  readonly out: number;
  readonly deadLetters: number;
  readonly retries: number;
}

export interface PipelineAge {
  readonly seconds: number;
  /** Its CPU seconds by then; null when not known. */
  readonly cpuSeconds: number | null;
}

/** How a pipeline's age reads in a report: "had run 312 s (84.2 s of CPU)". */
export function ageWords(age: PipelineAge): string {
  return `had run ${Math.round(age.seconds)} s${age.cpuSeconds === null ? "" : ` (${age.cpuSeconds.toFixed(1)} s of CPU)`}`;
}

export interface LoadResult {
  readonly at: Date;
  readonly command: string;
  readonly seed: number;
  /** Events of the warm-up plan played against each side before it was measured (0: none). */
  readonly warmUpEvents?: number;
  readonly seconds: number;
  /** Runtimes (or agents, in an agents run) playing at once. */
  readonly runtimes: number;
  /** An agents run (`--agents N`): its agents, how their waits were scaled and capped, the load the plan offers. */
  readonly agents?: { readonly count: number; readonly thinkScale: number; readonly start: AgentStart; readonly capS: number; readonly offered: Offered; readonly inRun: OfferedInRun };
  /** Whether the pipeline ran elsewhere (`--external`) rather than in this process. */
  readonly external: boolean;
  /**
   * How long the pipeline had run when its phase began, and the CPU it had used by then: a
   * pipeline just started is still compiling its code, so its CPU an event is higher than one's
   * that has run a few minutes. None when it could not be read.
   */
  readonly pipelineAge?: PipelineAge;
  /**
   * How long the sinks wait to fill a batch before they write it to MinIO
   * (`OZ0_SINK_MAX_WAIT_MS` as this command sees it): a phase a few of these long holds their
   * writes of what it caused, a shorter one may miss them. None: not said.
   */
  readonly sinkWaitMs?: number;
  readonly node: string;
  readonly plan: { readonly events: number; readonly trees: Readonly<Record<TreeKind, number>>; readonly steps: Readonly<Record<StepKind, number>> };
  readonly pipeline: PhaseResult;
  readonly passthrough: PhaseResult;
  /** The in-process pipeline's own counters; none when it runs elsewhere. */
  readonly processors?: readonly ProcessorCounters[];
  /** The chart's file name, beside the report. */
  readonly chartFile: string;
  /** Each processor's consumer group, by name. */
  readonly groups?: Readonly<Record<string, string>>;
}

/** Events published over the phase's active time (first publish to last answer), per second. */
export function sustained(p: PhaseResult): { seconds: number; perSecond: number } {
  const { firstAt, lastAt } = p.rec;
  if (firstAt === undefined || lastAt === undefined) return { seconds: 0, perSecond: NaN };
  const seconds = Math.max(0.001, (lastAt - firstAt) / 1000);
  return { seconds, perSecond: p.rec.events / seconds };
}

function lagSeries(p: PhaseResult, dashed = false, only?: string): Series[] {
  const names = [...new Set(p.lag.flatMap((s) => Object.keys(s.lags)))].filter((n) => only === undefined || n === only);
  return names.map((name) => ({
    name,
    dashed,
    points: p.lag.filter((s) => s.lags[name] !== undefined).map((s) => [Math.max(0, (s.at - p.startedAt) / 1000), s.lags[name] ?? 0] as [number, number]),
  }));
}

export function loadChart(r: LoadResult): string {
  const rate = (p: PhaseResult): Array<[number, number]> => perSecond(p.rec.sentAt, p.startedAt, p.endedAt);
  return chartSvg(`Load ${r.at.toISOString()}: ${r.pipeline.rec.events} events through the pipeline, ${r.passthrough.rec.events} through the passthrough`, [
    {
      title: "Consumer lag per processor (dashed: the bare passthrough)",
      xLabel: "seconds since the phase started",
      yLabel: "consumer lag (messages)",
      series: [...lagSeries(r.pipeline), ...lagSeries(r.passthrough, true).map((s) => ({ ...s, name: `${s.name} (baseline)` }))],
    },
    {
      title: "Events published per second",
      xLabel: "seconds since the phase started",
      yLabel: "events per second",
      series: [
        { name: "pipeline", points: rate(r.pipeline) },
        { name: "passthrough", points: rate(r.passthrough), dashed: true },
      ],
    },
  ]);
}

function lagRows(p: PhaseResult, group: (name: string) => string): string[] {
  const names = [...new Set(p.lag.flatMap((s) => Object.keys(s.lags)))].sort();
  return names.map((name) => {
    const values = p.lag.map((s) => s.lags[name]).filter((v): v is number => v !== undefined);
    return `| ${name} | ${group(name)} | ${fmt(values[0] ?? NaN)} | ${fmt(Math.max(...values))} | ${fmt(values[values.length - 1] ?? NaN)} | ${values.length} |`;
  });
}

/** Every answer of a phase, all exchanges together: when it came (epoch ms) and its latency (ms), in the same order. */
function answersOf(p: PhaseResult): { at: number[]; lat: number[] } {
  return { at: MEASURED_KINDS.flatMap((k) => p.rec.answeredAt[k]), lat: MEASURED_KINDS.flatMap((k) => p.rec.latencies[k]) };
}

/** The most seconds the report lists where slow answers came. */
const SLOW_SECONDS_LISTED = 20;

/**
 * When the answers slower than the held line came, in each phase: how many, in how many of its
 * seconds, and the seconds that held the most, in time order. Slow answers bunched at a steady
 * beat point at something periodic (the sinks' writes, a collection) more than at the load.
 */
function slowRows(pipe: PhaseResult, base: PhaseResult): string[] {
  const row = (name: string, p: PhaseResult): string => {
    const { at, lat } = answersOf(p);
    const slow = slowSeconds(at, lat, p.startedAt, HELD_P99_MS);
    const count = slow.reduce((n, s) => n + s.count, 0);
    const seconds = Math.max(1, Math.ceil((p.endedAt - p.startedAt) / 1000));
    const listed = [...slow].sort((a, b) => b.count - a.count || a.second - b.second).slice(0, SLOW_SECONDS_LISTED).sort((a, b) => a.second - b.second);
    const where = listed.map((s) => `${s.second} s: ${s.count} (${fmt(s.slowest)})`).join(", ");
    return `| ${name} | ${count} of ${lat.length} | ${slow.length} of ${seconds} | ${where || "none"} |`;
  };
  return [
    "",
    "### Slow answers over time",
    "",
    `Answers slower than ${HELD_P99_MS} ms (all exchanges), by the second of the phase they came in; the ${SLOW_SECONDS_LISTED} seconds holding the most are listed in time order, as \`second: answers (the slowest, ms)\`.`,
    "",
    "| phase | slow answers | seconds holding any | the seconds holding the most |",
    "| --- | ---: | ---: | --- |",
    row("the pipeline's phase", pipe),
    row("the passthrough's phase", base),
    ...stallRows(pipe, base),
  ];
}

/**
 * Redis's stalls in each phase, from its latency monitor, and how many of the slow answers came
 * in a second with one (or the second after). Every decision that asks Redis waits out a stall,
 * so a phase whose slow answers sit beside them was held by Redis, not by the pipeline's work.
 */
function stallRows(pipe: PhaseResult, base: PhaseResult): string[] {
  const row = (name: string, p: PhaseResult): string => {
    const r = p.redis;
    if (r === undefined) return `| ${name} | not read | | |`;
    if (r.thresholdMs <= 0) return `| ${name} | off | | |`;
    const events = stallsByEvent(r.stalls);
    const listed = events.map((e) => `${e.event}: ${e.seconds} s, the longest ${fmt(e.longestMs)} ms`).join("; ");
    const { at, lat } = answersOf(p);
    const slow = lat.filter((l) => l > HELD_P99_MS).length;
    const beside = slowBesideStalls(at, lat, HELD_P99_MS, r.stalls, r.thresholdMs);
    return `| ${name} | ${fmt(r.thresholdMs)} ms | ${listed || "none"} | ${beside} of ${slow} |`;
  };
  return [
    "",
    "Redis's own stalls (its latency monitor, `LATENCY HISTORY`): the seconds in which an event took at least the monitor's threshold, by event (`aof-fsync-always` is the append-only file's fsync, `fork` the start of a rewrite of it, `command` a slow command), and the slow answers that came in such a second or the one after it: while Redis stalls, every decision that asks it waits. `off`: the threshold is 0 (`CONFIG SET latency-monitor-threshold 10`; the stack starts Redis with it). `not read`: a Redis Cluster, or a Redis that refused `CONFIG`. Redis keeps an event's last " +
      `${REDIS_LATENCY_KEPT} seconds, so a longer phase shows only its end.`,
    "",
    "| phase | threshold | seconds with a stall, by event | slow answers beside one |",
    "| --- | ---: | --- | ---: |",
    row("the pipeline's phase", pipe),
    row("the passthrough's phase", base),
  ];
}

/** An agents run's offered and answered rates: what the plan offers, what each phase sent and had answered. */
function agentRows(r: LoadResult, ag: NonNullable<LoadResult["agents"]>): string[] {
  const rate = (p: PhaseResult, n: number): number => {
    const seconds = (p.endedAt - p.startedAt) / 1000;
    return seconds > 0 ? n / seconds : NaN;
  };
  const pipe = r.pipeline;
  const base = r.passthrough;
  return [
    "",
    "### Offered and answered",
    "",
    `Each agent waits before a model call's usage for the model's generation (lognormal, median 4.9 s, mean 11.5 s) and before a tool call's result for the tool's run (lognormal, median 0.3 s, mean 14 s a call), each draw capped at ${ag.capS} s${ag.thinkScale !== 1 ? `, then scaled by ${ag.thinkScale}` : ""}; ${ag.start === "cold" ? "every agent starts afresh, spread over the first think time (`--cold-start`)" : "each agent starts as if it had long been playing, once the rest of a wait drawn by its length is over (bench/load/pace.ts)"}. What the plan offers is what the agents would send if every step were played and every answer came at once: over this run of ${r.seconds} s (the agents played with their waits), and in the long run (the plan's events over its waits, ${fmt(ag.offered.eventsPerAgentSecond, 3)} events a second an agent, times ${ag.count}). ${ag.start === "cold" ? "A run of minutes offers more than the long run: every agent starts afresh, and the rare long waits that make most of the mean have barely begun. " : ""}Measured rates are over each phase's whole time.`,
    "",
    "| rate (per second) | offered over the run | offered in the long run | pipeline | passthrough |",
    "| --- | ---: | ---: | ---: | ---: |",
    `| events | ${fmt(ag.inRun.eventsPerSecond, 1)} | ${fmt(ag.offered.eventsPerSecond, 1)} | ${fmt(rate(pipe, pipe.rec.events), 1)} | ${fmt(rate(base, base.rec.events), 1)} |`,
    `| awaited answers | ${fmt(ag.inRun.answersPerSecond, 1)} | ${fmt(ag.offered.answersPerSecond, 1)} | ${fmt(rate(pipe, pipe.rec.answers), 1)} | ${fmt(rate(base, base.rec.answers), 1)} |`,
    "",
    "The pipeline plays fewer steps than the passthrough (it refuses and stops), answers take time, and an agent waiting when the time is up stops there.",
  ];
}

export function loadMarkdown(r: LoadResult): string {
  const pipe = r.pipeline;
  const base = r.passthrough;
  const sp = sustained(pipe);
  const sb = sustained(base);
  const unanswered = (p: PhaseResult): number => MEASURED_KINDS.reduce((s, k) => s + p.rec.unanswered[k], 0);
  const where = r.external ? "against a pipeline running elsewhere (`--external`)" : "with the pipeline in this process";
  const ag = r.agents;
  const who = ag ? "agents" : "runtimes";
  const lines: string[] = [
    `# Load report (${r.at.toISOString()})`,
    "",
    `\`${r.command}\`: seed ${r.seed}, ${ag ? `${ag.count} agents, each waiting between steps as agents do${ag.thinkScale !== 1 ? ` (every wait scaled by ${ag.thinkScale})` : ""}` : `${r.runtimes} runtimes at once`}, each phase bounded by ${r.seconds} s, ${where}; Node ${r.node}.${r.pipelineAge ? ` When its phase began, the pipeline ${ageWords(r.pipelineAge)}.` : ""}`,
    "",
    `Two phases on the same broker, one after the other, with the same plan and the same ${who}${ag ? " and waits" : ""}:`,
    "the pipeline (every event through the runtime client, each answer awaited), then a bare kafkajs",
    "consume-and-produce passthrough (`bench/pipeline/subjects.ts`) on topics of its own, where the",
    "copy of each event stands for its answer. Ratios are pipeline over passthrough.",
    ...((r.warmUpEvents ?? 0) > 0
      ? [`Before each phase, a warm-up plan of ${r.warmUpEvents} events (seed ${r.seed + 1}) was played against it and not counted, so that what is measured is code already compiled.`]
      : ["No warm-up was played (`--warm-up 0`): a pipeline just started is measured while it compiles its code."]),
    "",
    "## Throughput",
    "",
    "| measure | pipeline | passthrough | ratio |",
    "| --- | ---: | ---: | ---: |",
    `| events published | ${pipe.rec.events} | ${base.rec.events} | ${ratio(pipe.rec.events, base.rec.events)} |`,
    `| answers awaited and received | ${pipe.rec.answers} | ${base.rec.answers} | ${ratio(pipe.rec.answers, base.rec.answers)} |`,
    `| not answered in time | ${unanswered(pipe)} | ${unanswered(base)} | |`,
    `| trees played whole / cut short | ${pipe.rec.treesDone} / ${pipe.rec.treesCut} | ${base.rec.treesDone} / ${base.rec.treesCut} | |`,
    `| active seconds (first publish to last answer) | ${fmt(sp.seconds, 1)} | ${fmt(sb.seconds, 1)} | |`,
    `| sustained events per second | ${fmt(sp.perSecond, 1)} | ${fmt(sb.perSecond, 1)} | ${ratio(sp.perSecond, sb.perSecond)} |`,
    "",
    ...(ag ? agentRows(r, ag) : ["The runtimes wait for each answer before their next step, as runtimes do, so the rate is set by", "the latency of the answers: the passthrough plays every step (nothing refuses), the pipeline fewer."]),
    ...cpuRows(pipe, base, r.external),
    ...shortPhaseNote(pipe, r.sinkWaitMs),
    ...writtenRows(pipe, base),
    "",
    "## Latency from ask to decision",
    "",
    `From the publish to the answer the ${ag ? "agent" : "runtime"} awaited, in ms${ag ? " (an agent's waits are never counted)" : ""}. The passthrough's is the same event's copy.`,
    "",
    "| exchange | processors | answers | p50 | p95 | p99 | passthrough p50 | p95 | p99 | p50 ratio | p99 ratio |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const k of MEASURED_KINDS) {
    const a = latency(pipe.rec.latencies[k]);
    const b = latency(base.rec.latencies[k]);
    lines.push(
      `| ${MEASURED[k].exchange} | ${MEASURED[k].processor} | ${a.count} | ${fmt(a.p50)} | ${fmt(a.p95)} | ${fmt(a.p99)} | ${fmt(b.p50)} | ${fmt(b.p95)} | ${fmt(b.p99)} | ${ratio(a.p50, b.p50)} | ${ratio(a.p99, b.p99)} |`,
    );
  }
  lines.push(
    ...slowRows(pipe, base),
    "",
    "## Consumer lag",
    "",
    `Sampled about once a second; messages of the input not yet committed, summed over partitions (a partition drained in transactions shows 1 for its marker). Chart: [${r.chartFile}](${r.chartFile}).`,
    "",
    `![consumer lag and events per second over time](${r.chartFile})`,
    "",
    "| processor | consumer group | at start | max | at end | samples |",
    "| --- | --- | ---: | ---: | ---: | ---: |",
    ...lagRows(pipe, (n) => r.groups?.[n] ?? `oz0.${n}`),
    ...lagRows(base, () => "its own (baseline)"),
    "",
    "## Offloaded results",
    "",
    "| measure | value |",
    "| --- | ---: |",
    `| results offloaded to MinIO | ${pipe.rec.offloaded} |`,
    `| bytes offloaded | ${pipe.rec.offloadedBytes} (${bytes(pipe.rec.offloadedBytes)}) |`,
    `| results fitted | ${pipe.rec.outcomes.get("tool_result:fitted") ?? 0} |`,
    `| results delivered as sent | ${pipe.rec.outcomes.get("tool_result:as-is") ?? 0} |`,
    `| results answered as failed calls | ${pipe.rec.outcomes.get("tool_result:failed") ?? 0} |`,
    `| oz.read_result answers (failed) | ${pipe.rec.outcomes.get("read_result:read") ?? 0} (${pipe.rec.outcomes.get("read_result:failed") ?? 0}) |`,
    "",
    "## Mix",
    "",
    `The plan: ${r.plan.events} events in ${TREE_KINDS.reduce((s, k) => s + r.plan.trees[k], 0)} trees (${TREE_KINDS.map((k) => `${k} ${r.plan.trees[k]}`).join(", ")}).`,
    "",
    "| event | planned | published (pipeline) | published (passthrough) |",
    "| --- | ---: | ---: | ---: |",
    ...STEP_KINDS.map((k) => `| ${k} | ${r.plan.steps[k]} | ${pipe.rec.published[k]} | ${base.rec.published[k]} |`),
    "",
    "Answers by outcome (pipeline):",
    "",
    "| exchange | outcome | count |",
    "| --- | --- | ---: |",
    ...[...pipe.rec.outcomes].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, n]) => {
      const [k, outcome] = key.split(":");
      return `| ${k} | ${outcome} | ${n} |`;
    }),
    "",
  );
  if (r.processors && r.processors.length > 0) {
    lines.push("## Processors (in this process)", "", "| processor | in | out | dead letters | retries |", "| --- | ---: | ---: | ---: | ---: |");
    for (const p of r.processors) lines.push(`| ${p.name} | ${p.in} | ${p.out} | ${p.deadLetters} | ${p.retries} |`);
    lines.push("");
  }
  const errors = [...pipe.rec.errors.map((e) => `pipeline: ${e}`), ...base.rec.errors.map((e) => `passthrough: ${e}`)];
  if (errors.length > 0) lines.push("## Errors", "", ...errors.map((e) => `- ${e}`), "");
  return lines.join("\n");
}
