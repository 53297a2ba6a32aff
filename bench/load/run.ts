/**
 * One load run: the plan (bench/load/mix.ts) played by many runtimes through the runtime
 * client against the pipeline, then the same plan against a bare kafkajs passthrough on topics
 * of its own on the same broker; consumer lag sampled throughout; the report and its chart
 * written. Bounded in count (the plan's events) and in time (each phase's seconds).
 */
import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import kafkajs, { type Admin } from "kafkajs";
import { pipelineLayout, startPipeline, type Pipeline } from "../../topology/run.ts";
import { sinkFetchFromEnv } from "../../topology/pipeline.ts";
import { RuntimeClient } from "../../client/runtime-client.ts";
import { kafkaConfig, type Endpoints } from "../../processors/runner/endpoints.ts";
import { createLogger, type Logger } from "../../processors/runner/log.ts";
import { opsAddressFromEnv } from "../../processors/ops/ops-server.ts";
import { Serde } from "../../schemas/serde.ts";
import type { ModelCall } from "../../schemas/types.ts";
import { ensureTopics } from "../../topology/create.ts";
import { TOPICS, topic as topicSpec, type TopicSpec } from "../../topology/topics.ts";
import { objectPuts } from "../../store/objects.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { CpuMeter, localBrokerPid, localStackReadings, metricsReading, type CpuReading } from "../pipeline/cpu.ts";
import { startPassthrough } from "../pipeline/subjects.ts";
import { loadCorpus } from "./corpus.ts";
import { EchoTarget } from "./echo.ts";
import { LagSampler, type WatchedGroup } from "./lag.ts";
import { countSteps, countTrees, makePlan, type Plan, type Tree } from "./mix.ts";
import { agentsEvents, agentsPacing, CAP_S, offered, offeredInRun, type AgentsPlay } from "./pace.ts";
import { MEASURED_KINDS, playAgents, playAll, Recorder, type LoadTarget } from "./play.ts";
import { Progress } from "./progress.ts";
import { readRedisStalls, stallsBetween } from "./redis-stalls.ts";
import { publishLoadConfig } from "./publish-config.ts";
import { loadChart, loadMarkdown, PIPELINE_ELSEWHERE, type LoadResult, type PhaseResult, type PipelineAge } from "./report.ts";
import { sweepChart, sweepMarkdown, sweepPoint } from "./sweep.ts";

export interface LoadOptions {
  readonly endpoints: Endpoints;
  /**
   * Events the plan holds (it stops at the first tree that reaches them). By default 3,000, or
   * with agents what they offer over the seconds, with a margin (`agentsEvents`).
   */
  readonly events?: number;
  /** Each phase stops starting steps after this many seconds; every await ends by then too. */
  readonly seconds: number;
  /** Runtimes playing trees at once (without `agents`). */
  readonly runtimes: number;
  /**
   * Agents instead of runtimes: `count` agents play the plan, each waiting between steps as an
   * agent does (bench/load/pace.ts), every wait multiplied by `thinkScale` (1 as agents wait),
   * starting as agents long at play (`steady`, the default) or all afresh (`cold`).
   */
  readonly agents?: AgentsPlay;
  readonly seed: number;
  /** A pipeline runs elsewhere (`npm start`, compose): none is started here. */
  readonly external: boolean;
  /** The metrics URL of the pipeline elsewhere, whose `process_cpu_seconds_total` the report shows per event. */
  readonly pipelineMetrics?: string;
  /**
   * Events of a plan of another seed played against each side just before it is measured, and
   * not counted: the pipeline's code is compiled by then, as in a pipeline that has run a while.
   * @default 0
   */
  readonly warmUpEvents?: number;
  /** Where load.md and load.svg go. */
  readonly outDir: string;
  /** The command line the report names. */
  readonly command: string;
  /** Draw progress on stderr. @default true */
  readonly progress?: boolean;
  /** A pipeline started already in this process (a sweep's), used and left running. */
  readonly pipeline?: Pipeline;
  readonly log?: Logger;
}

export interface LoadOutcome {
  readonly result: LoadResult;
  readonly markdown: string;
  readonly svg: string;
  readonly files: { readonly markdown: string; readonly chart: string };
}

const CHART_FILE = "load.svg";
/** How long past an agents phase's time an answer asked for before it may still come. */
export const AGENTS_GRACE_MS = 10_000;

/** An agents run's waits, the same in both phases. */
interface Pacing {
  readonly waits: ReadonlyMap<Tree, readonly number[]>;
  readonly starts: readonly number[];
}

/** What a phase's writes are counted on: its topics' end offsets, and the pipeline's object puts (in its phase only). */
interface Counted {
  readonly admin: Admin;
  readonly topics: readonly string[];
  readonly objects?: CpuReading;
  /** Redis, whose latency monitor is read after the phase for the stalls in it. */
  readonly redis?: RedisClient;
}

/**
 * Kafka's own topics, which a phase writes to as well: a group's committed offsets (and, in a
 * transaction, a marker beside them) and the transaction coordinator's log. The pipeline's
 * transactions cost the broker there too, so the report counts them apart.
 */
export const KAFKA_INTERNAL_TOPICS = ["__consumer_offsets", "__transaction_state"] as const;

/** The end offsets of `topics` summed over their partitions; null when the broker did not give them. */
async function endOffsets(admin: Admin, topics: readonly string[]): Promise<number | null> {
  try {
    const each = await Promise.all(topics.map((t) => admin.fetchTopicOffsets(t)));
    return each.flat().reduce((sum, p) => sum + Number(p.high), 0);
  } catch {
    return null;
  }
}

async function countWritten(c: Counted): Promise<{ records: number | null; internal: number | null; objects: number | null }> {
  const [records, internal, objects] = await Promise.all([endOffsets(c.admin, c.topics), endOffsets(c.admin, KAFKA_INTERNAL_TOPICS), c.objects?.() ?? null]);
  return { records, internal, objects };
}

async function phase(name: string, plan: Plan, target: LoadTarget, sampler: LagSampler, counted: Counted, o: LoadOptions, pacing?: Pacing): Promise<PhaseResult> {
  const rec = new Recorder();
  const limitMs = o.seconds * 1000;
  const startedAt = Date.now();
  const progress = o.progress === false ? undefined : new Progress();
  const state = () => ({
    phase: name,
    events: rec.events,
    planned: plan.events,
    answers: rec.answers,
    unanswered: MEASURED_KINDS.reduce((s, k) => s + rec.unanswered[k], 0),
    elapsedMs: Date.now() - startedAt,
    limitMs,
  });
  sampler.start(1_000);
  progress?.start(state);
  // The broker's CPU where it runs here (the local stack), this process's and the machine's,
  // the local stack's other services', and a pipeline's elsewhere from its metrics.
  const others: Record<string, CpuReading> = { ...(o.pipelineMetrics ? { [PIPELINE_ELSEWHERE]: metricsReading(o.pipelineMetrics) } : {}), ...localStackReadings() };
  // Sampled once a second: each sample scrapes a pipeline elsewhere's whole /metrics, which costs
  // that pipeline CPU (at four a second, about 7% of what a pipeline under 100 agents spent).
  const cpu = new CpuMeter(null, 1_000, localBrokerPid(), others);
  await cpu.start();
  let written: PhaseResult["written"];
  try {
    // What the phase writes, counted from just before its first publish to just after its last answer.
    const before = await countWritten(counted);
    // Agents play until the time is up: an answer asked for by then gets up to 10 s more to come.
    if (pacing) await playAgents(plan, target, rec, { deadline: startedAt + limitMs, graceMs: AGENTS_GRACE_MS, waits: pacing.waits, starts: pacing.starts });
    else await playAll(plan, target, rec, { deadline: startedAt + limitMs, runtimes: o.runtimes });
    const after = await countWritten(counted);
    const grown = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : b - a);
    written = { records: grown(before.records, after.records), internal: grown(before.internal, after.internal), ...(counted.objects ? { objects: grown(before.objects, after.objects) } : {}) };
  } finally {
    progress?.stop(state());
    await cpu.stop();
    await sampler.stop();
  }
  const spent = rec.firstAt !== undefined && rec.lastAt !== undefined ? cpu.between(rec.firstAt, rec.lastAt) : undefined;
  const endedAt = Date.now();
  const monitor = counted.redis ? await readRedisStalls(counted.redis) : null;
  const redis = monitor ? { thresholdMs: monitor.thresholdMs, stalls: stallsBetween(monitor.stalls, startedAt, endedAt) } : undefined;
  return { startedAt, endedAt, rec, lag: sampler.samples, ...(spent ? { cpu: spent } : {}), ...(written ? { written } : {}), ...(redis ? { redis } : {}) };
}

/**
 * The warm-up: a plan of `events` events of the next seed, its trees apart from the measured
 * plan's, played against the target at the same number of runtimes and not recorded. A
 * pipeline just started spends its first thousands of events compiling its code: in the same
 * pipeline, run after run of 3,000 events, its process took 3.22, 1.65, 2.56, 1.41 and 1.36 ms
 * of CPU an event (docs/load.md).
 */
async function warmUpPlan(plan: Plan | undefined, target: LoadTarget, o: LoadOptions): Promise<void> {
  if (plan === undefined) return;
  // Agents warm up as runtimes do, without waits: it is the code that is warmed, not the pace.
  const runtimes = o.agents ? Math.min(24, o.agents.count) : o.runtimes;
  await playAll(plan, target, new Recorder(), { deadline: Date.now() + o.seconds * 1000, runtimes });
}

/**
 * One exchange before the clock starts, so joining groups and first transactions are not
 * counted against the first trees: a model-call ask of a probe tree. A pipeline elsewhere may
 * still be starting (compose starts the load beside it), so it is given longer.
 */
async function warmUp(target: LoadTarget, uid: string, phaseName: string, timeoutMs = 60_000): Promise<void> {
  const tree = `load-${uid}-probe-${phaseName}`;
  const ask: ModelCall = { id: `${tree}-ask`, tenant: "load-probe", tree_id: tree, job_id: tree, run_id: `${tree}-run`, request_id: `${tree}-req`, kind: "ask", model: "claude-haiku-3.5", input_tokens: 10, max_output_tokens: 10, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, agent: null, ts: Date.now() };
  await target.askModelCall(ask, timeoutMs);
}

/** Until the in-process pipeline's groups are all stable with members (its /health/ready), at most `timeoutMs`. */
export async function untilReady(pipeline: Pipeline, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = pipeline.ops.health.ready();
    if (r.ready) return;
    if (Date.now() > until) throw new Error(`the pipeline was not ready within ${timeoutMs} ms: ${r.reasons.join("; ")}`);
    await sleep(250);
  }
}

export async function runLoad(o: LoadOptions): Promise<LoadOutcome> {
  const log = o.log ?? createLogger({ component: "load" });
  const uid = randomUUID().slice(0, 8);
  const corpus = await loadCorpus();
  const events = o.events ?? (o.agents ? agentsEvents(o.agents.count, o.seconds, o.agents.thinkScale) : 3_000);
  const plan = makePlan({ seed: o.seed, events, tag: uid, corpus });
  const pacing: Pacing | undefined = o.agents ? agentsPacing(plan, o.seed, o.agents) : undefined;
  const warmEvents = o.warmUpEvents ?? 0;
  if (!(Number.isInteger(warmEvents) && warmEvents >= 0)) throw new Error(`the warm-up needs a whole number of events, 0 or more, got ${warmEvents}`);
  const warm: Plan | undefined = warmEvents > 0 ? makePlan({ seed: o.seed + 1, events: warmEvents, tag: `${uid}w`, corpus }) : undefined;
  const kafka = new kafkajs.Kafka(kafkaConfig(`oz0-load-${uid}`, o.endpoints, process.env, log));
  const admin = kafka.admin();
  const serde = new Serde({ registryUrl: o.endpoints.registryUrl });
  let pipeline: Pipeline | undefined;
  let client: RuntimeClient | undefined;
  const passIn = `load.${uid}.passthrough.in`;
  const passOut = `load.${uid}.passthrough.out`;
  let topicsMade = false;
  // Only asked after each phase, for its latency monitor; a Redis that does not answer leaves the report without it.
  const redis = redisClient(o.endpoints, { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    await admin.connect();
    await serde.registerAll();
    const published = await publishLoadConfig(kafka, serde, log);
    if (published.length > 0) log.info("the load's agents published", { keys: published });
    if (o.pipeline) {
      pipeline = o.pipeline;
    } else if (!o.external) {
      pipeline = await startLoadPipeline(o.endpoints);
    } else if (published.length > 0) {
      // A running pipeline follows the table; give it a moment to read the new rows.
      await sleep(2_000);
    }
    if (pipeline) await untilReady(pipeline, 120_000);
    client = await RuntimeClient.connect(o.endpoints, { log, timeoutMs: 30_000 });
    await warmUp(client, uid, "pipeline", o.external ? 300_000 : 60_000);
    await warmUpPlan(warm, client, o);
    const watched: WatchedGroup[] = pipelineLayout().map((p) => ({ name: p.name, group: p.group, topic: p.consumes }));
    // The objects the pipeline puts: counted in this process, or read from the metrics of a pipeline elsewhere.
    const objects: CpuReading = pipeline ? objectPuts : o.pipelineMetrics ? metricsReading(o.pipelineMetrics, 1_000, "oz0_object_puts_total") : () => null;
    const pipelineAge = await ageOf(pipeline ?? o.pipelineMetrics);
    const pipe = await phase("pipeline", plan, client, new LagSampler(admin, watched), { admin, topics: TOPICS.map((t) => t.name), objects, redis }, o, pacing);
    const processors = pipeline?.running.map((r) => ({ name: r.name, in: r.stats.in, out: r.stats.out, deadLetters: r.stats.deadLetters, retries: r.stats.retries }));

    // The baseline: the same plan through a bare passthrough on topics of this run, with the real topics' partitions.
    const spec = (name: string): TopicSpec => ({ ...topicSpec("oz0.tool-results"), name, retentionMs: 3_600_000, compacted: false, doc: `load ${uid}: the passthrough baseline` });
    await ensureTopics(admin, [spec(passIn), spec(passOut)]);
    topicsMade = true;
    const group = `load.${uid}.passthrough`;
    const subject = await startPassthrough({ kafka, serde, log, groupId: group, input: passIn, outputs: new Map([["out", passOut]]) });
    const echo = new EchoTarget(kafka, serde, { input: passIn, output: passOut });
    let base: PhaseResult;
    try {
      await echo.start();
      await warmUp(echo, uid, "passthrough");
      await warmUpPlan(warm, echo, o);
      base = await phase("passthrough", plan, echo, new LagSampler(admin, [{ name: "passthrough", group, topic: passIn }]), { admin, topics: [passIn, passOut], redis }, o, pacing);
    } finally {
      await echo.close().catch(() => undefined);
      await subject.stop().catch(() => undefined);
    }

    const result: LoadResult = {
      at: new Date(),
      command: o.command,
      seed: o.seed,
      warmUpEvents: warm?.events ?? 0,
      seconds: o.seconds,
      runtimes: o.agents?.count ?? o.runtimes,
      ...(o.agents && pacing
        ? { agents: { count: o.agents.count, thinkScale: o.agents.thinkScale, start: o.agents.start ?? "steady", capS: CAP_S, offered: offered(plan, pacing.waits, o.agents.count), inRun: offeredInRun(plan, pacing.waits, pacing.starts, o.seconds * 1000) } }
        : {}),
      external: o.external,
      ...(pipelineAge ? { pipelineAge } : {}),
      sinkWaitMs: sinkFetchFromEnv(process.env).maxWaitMs,
      node: process.version,
      plan: { events: plan.events, trees: countTrees(plan), steps: countSteps(plan) },
      pipeline: pipe,
      passthrough: base,
      ...(processors ? { processors } : {}),
      chartFile: CHART_FILE,
      groups: Object.fromEntries(pipelineLayout().map((p) => [p.name, p.group])),
    };
    const markdown = loadMarkdown(result);
    const svg = loadChart(result);
    await mkdir(o.outDir, { recursive: true });
    const files = { markdown: join(o.outDir, "load.md"), chart: join(o.outDir, CHART_FILE) };
    await writeFile(files.markdown, markdown);
    await writeFile(files.chart, svg);
    return { result, markdown, svg, files };
  } finally {
    if (topicsMade) await admin.deleteTopics({ topics: [passIn, passOut], timeout: 30_000 }).catch((err: unknown) => log.warn("deleting the passthrough's topics failed; delete them by hand", { topics: [passIn, passOut], error: String(err) }));
    await client?.close().catch(() => undefined);
    if (!o.pipeline) await pipeline?.stop().catch((err: unknown) => log.warn("stopping the pipeline failed", { error: String(err) }));
    await admin.disconnect().catch(() => undefined);
    redis.disconnect();
  }
}


/** When each pipeline this module started in process began, for its age in the report. */
const startedAt = new WeakMap<Pipeline, number>();

/** A pipeline in this process, its health and metrics on any free port unless OZ0_METRICS_PORT says (so a running `npm start` keeps 9464). */
async function startLoadPipeline(endpoints: Endpoints): Promise<Pipeline> {
  const at = Date.now();
  const pipeline = await startPipeline(endpoints, createLogger({ component: "pipeline" }, () => {}), { ops: opsAddressFromEnv({ OZ0_METRICS_PORT: "0", ...process.env }), retention: "off" });
  startedAt.set(pipeline, at);
  return pipeline;
}

/**
 * How long the pipeline has run, and its CPU so far: one in this process from when it was
 * started here (its CPU is this process's, so not known apart); one elsewhere from its
 * `/metrics` (`process_start_time_seconds`, `process_cpu_seconds_total`). Undefined when not known.
 */
async function ageOf(pipeline: Pipeline | string | undefined): Promise<PipelineAge | undefined> {
  if (pipeline === undefined) return undefined;
  if (typeof pipeline !== "string") {
    const at = startedAt.get(pipeline);
    return at === undefined ? undefined : { seconds: (Date.now() - at) / 1000, cpuSeconds: null };
  }
  const [started, cpu] = await Promise.all([metricsReading(pipeline, 1_000, "process_start_time_seconds")(), metricsReading(pipeline)()]);
  return started === null ? undefined : { seconds: Date.now() / 1000 - started, cpuSeconds: cpu };
}

export interface SweepOutcome {
  /** `runtimes`: the number of runtimes, or of agents in an agents sweep. */
  readonly levels: ReadonlyArray<{ readonly runtimes: number; readonly outcome: LoadOutcome }>;
  readonly markdown: string;
  readonly files: { readonly markdown: string; readonly chart: string };
}

/**
 * A sweep of offered load: the same plan played at each number of runtimes (or of agents, with
 * `agents`) in turn, pipeline then passthrough each time, on one pipeline (started here unless
 * `external`). Each level's report goes to `outDir/runtimes-<n>/` (`agents-<n>/`); the sweep's
 * table and its chart (latency against events per second, where the knee of each shows) to
 * `outDir/sweep.md` and `sweep.svg`.
 */
export async function runSweep(o: Omit<LoadOptions, "runtimes" | "pipeline" | "agents"> & { readonly levels: readonly number[]; readonly agents?: Omit<AgentsPlay, "count"> }): Promise<SweepOutcome> {
  let pipeline: Pipeline | undefined;
  const levels: Array<{ runtimes: number; outcome: LoadOutcome }> = [];
  const unit = o.agents ? "agents" : "runtimes";
  try {
    if (!o.external) {
      pipeline = await startLoadPipeline(o.endpoints);
      await untilReady(pipeline, 120_000);
    }
    for (const [i, runtimes] of o.levels.entries()) {
      process.stderr.write(`sweep: ${runtimes} ${unit}\n`);
      const { agents: _, ...rest } = o;
      // One pipeline through the whole sweep: warmed up before the first level only.
      const outcome = await runLoad({
        ...rest,
        runtimes,
        ...(o.agents ? { agents: { ...o.agents, count: runtimes } } : {}),
        outDir: join(o.outDir, `${unit}-${runtimes}`),
        ...(pipeline ? { pipeline } : {}),
        warmUpEvents: i === 0 ? (o.warmUpEvents ?? 0) : 0,
      });
      levels.push({ runtimes, outcome });
    }
  } finally {
    await pipeline?.stop().catch(() => undefined);
  }
  const points = levels.map(({ runtimes, outcome }) => sweepPoint(runtimes, outcome.result));
  const markdown = sweepMarkdown(o.command, points, unit);
  await mkdir(o.outDir, { recursive: true });
  const files = { markdown: join(o.outDir, "sweep.md"), chart: join(o.outDir, "sweep.svg") };
  await writeFile(files.markdown, markdown);
  await writeFile(files.chart, sweepChart(points, unit));
  return { levels, markdown, files };
}
