/**
 * A soak run (`npm run load -- --agents N --minutes M`): the pipeline phase only, N agents
 * playing the plan with their waits for M minutes (at most 240), and every `sampleSeconds` a
 * sample of the answers that came in the window, the consumer lag, the pipeline's memory, the
 * dead letters and the unanswered so far. The report (bench/load/soak.ts) goes to
 * DIR/load.md, its samples and verdicts to DIR/load.json, its chart to DIR/load.svg.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import kafkajs from "kafkajs";
import { pipelineLayout, startPipeline, type Pipeline } from "../../topology/run.ts";
import { RuntimeClient } from "../../client/runtime-client.ts";
import { kafkaConfig, type Endpoints } from "../../processors/runner/endpoints.ts";
import { createLogger, type Logger } from "../../processors/runner/log.ts";
import { opsAddressFromEnv } from "../../processors/ops/ops-server.ts";
import { Serde } from "../../schemas/serde.ts";
import type { ModelCall } from "../../schemas/types.ts";
import { loadCorpus } from "./corpus.ts";
import { sampleLag, type WatchedGroup } from "./lag.ts";
import { makePlan, type Plan } from "./mix.ts";
import { agentsEvents, agentsPacing, type AgentsPlay } from "./pace.ts";
import { MEASURED_KINDS, playAgents, playAll, Recorder, type LoadTarget } from "./play.ts";
import { Progress } from "./progress.ts";
import { publishLoadConfig } from "./publish-config.ts";
import { AGENTS_GRACE_MS, untilReady } from "./run.ts";
import { DEFAULT_SAMPLE_SECONDS, markOf, MAX_SOAK_MINUTES, MIN_SAMPLE_SECONDS, soakChart, soakMarkdown, soakVerdicts, vmRssBytes, windowBetween, type SoakResult, type SoakSample } from "./soak.ts";

/** The topic the pipeline's processors write what they cannot handle to. */
const DEAD_LETTER_TOPIC = "oz0.dead-letter";

export interface SoakOptions {
  readonly endpoints: Endpoints;
  readonly agents: AgentsPlay;
  /** How long the agents play, in minutes: more than 0, at most MAX_SOAK_MINUTES. */
  readonly minutes: number;
  /** Seconds between samples, at least MIN_SAMPLE_SECONDS. @default DEFAULT_SAMPLE_SECONDS */
  readonly sampleSeconds?: number;
  /** Events the plan holds. @default what the agents offer over the minutes, with a margin (`agentsEvents`) */
  readonly events?: number;
  readonly seed: number;
  /** Events of a warm-up plan (seed + 1) played without waits before the soak, not counted. @default 0 */
  readonly warmUpEvents?: number;
  /** A pipeline runs elsewhere: none is started here. */
  readonly external: boolean;
  /** With `external`, the pipeline's process id on this machine: its memory is read from /proc/<pid>/status. */
  readonly pipelinePid?: number;
  readonly outDir: string;
  readonly command: string;
  /** Draw progress on stderr. @default true */
  readonly progress?: boolean;
  readonly log?: Logger;
}

export interface SoakOutcome {
  readonly result: SoakResult;
  readonly markdown: string;
  readonly svg: string;
  readonly files: { readonly markdown: string; readonly json: string; readonly chart: string };
}

const CHART_FILE = "load.svg";

/** One probe exchange before the clock starts, so joining groups and first transactions are not counted. */
async function probe(target: LoadTarget, uid: string, timeoutMs: number): Promise<void> {
  const tree = `load-${uid}-probe-soak`;
  const ask: ModelCall = { id: `${tree}-ask`, tenant: "load-probe", tree_id: tree, job_id: tree, run_id: `${tree}-run`, request_id: `${tree}-req`, kind: "ask", model: "claude-haiku-3.5", input_tokens: 10, max_output_tokens: 10, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, agent: null, ts: Date.now() };
  await target.askModelCall(ask, timeoutMs);
}

/** The pipeline's memory: this process's with the pipeline in it, a pid's from /proc, or none. */
function memoryReader(o: SoakOptions): { read: () => { rss: number | null; heap: number | null }; source: string } {
  if (!o.external) {
    return {
      read: () => {
        const m = process.memoryUsage();
        return { rss: m.rss, heap: m.heapUsed };
      },
      source: "`process.memoryUsage()` of this process, which holds the pipeline and the agents (RSS, and the V8 heap used)",
    };
  }
  if (o.pipelinePid !== undefined) {
    const pid = o.pipelinePid;
    return {
      read: () => {
        try {
          return { rss: vmRssBytes(readFileSync(`/proc/${pid}/status`, "utf8")), heap: null };
        } catch {
          return { rss: null, heap: null };
        }
      },
      source: `VmRSS of /proc/${pid}/status, the pipeline's process (its heap is not visible from outside: left out)`,
    };
  }
  return { read: () => ({ rss: null, heap: null }), source: "not known: the pipeline runs elsewhere and no `--pipeline-pid` was given, so memory is left out" };
}

export async function runSoak(o: SoakOptions): Promise<SoakOutcome> {
  const sampleSeconds = o.sampleSeconds ?? DEFAULT_SAMPLE_SECONDS;
  if (!(o.minutes > 0 && o.minutes <= MAX_SOAK_MINUTES)) throw new Error(`a soak lasts more than 0 and at most ${MAX_SOAK_MINUTES} minutes, got ${o.minutes}`);
  if (!(sampleSeconds >= MIN_SAMPLE_SECONDS && Number.isFinite(sampleSeconds))) throw new Error(`a soak samples every ${MIN_SAMPLE_SECONDS} s or more, got ${sampleSeconds}`);
  if (!(Number.isInteger(o.agents.count) && o.agents.count > 0)) throw new Error(`a soak needs a whole number of agents, got ${o.agents.count}`);
  const log = o.log ?? createLogger({ component: "load" });
  const uid = randomUUID().slice(0, 8);
  const seconds = o.minutes * 60;
  const corpus = await loadCorpus();
  const plan = makePlan({ seed: o.seed, events: o.events ?? agentsEvents(o.agents.count, seconds, o.agents.thinkScale), tag: uid, corpus });
  const { waits, starts } = agentsPacing(plan, o.seed, o.agents);
  const warmEvents = o.warmUpEvents ?? 0;
  const warm: Plan | undefined = warmEvents > 0 ? makePlan({ seed: o.seed + 1, events: warmEvents, tag: `${uid}w`, corpus }) : undefined;
  const kafka = new kafkajs.Kafka(kafkaConfig(`oz0-load-${uid}`, o.endpoints, process.env, log));
  const admin = kafka.admin();
  const serde = new Serde({ registryUrl: o.endpoints.registryUrl });
  const memory = memoryReader(o);
  let pipeline: Pipeline | undefined;
  let client: RuntimeClient | undefined;
  try {
    await admin.connect();
    await serde.registerAll();
    const published = await publishLoadConfig(kafka, serde, log);
    if (!o.external) {
      pipeline = await startPipeline(o.endpoints, createLogger({ component: "pipeline" }, () => {}), { ops: opsAddressFromEnv({ OZ0_METRICS_PORT: "0", ...process.env }), retention: "off" });
      await untilReady(pipeline, 120_000);
    } else if (published.length > 0) {
      await sleep(2_000);
    }
    client = await RuntimeClient.connect(o.endpoints, { log, timeoutMs: 30_000 });
    await probe(client, uid, o.external ? 300_000 : 60_000);
    // Warmed without waits, as a load run's agents are: it is the code that is warmed, not the pace.
    if (warm) await playAll(warm, client, new Recorder(), { deadline: Date.now() + 300_000, runtimes: Math.min(24, o.agents.count) });

    // Dead letters: the in-process pipeline's own counters; elsewhere, what the dead-letter topic grew by.
    const running = pipeline?.running;
    const deadLettersSource = running
      ? "the in-process pipeline's processors' dead-letter counters, since the soak started"
      : `what \`${DEAD_LETTER_TOPIC}\` grew by since the soak started (every writer's records on the topic, transaction markers included)`;
    const countDeadLetters = running
      ? (): Promise<number> => Promise.resolve(running.reduce((s, r) => s + r.stats.deadLetters, 0))
      : async (): Promise<number> => (await admin.fetchTopicOffsets(DEAD_LETTER_TOPIC)).reduce((s, p) => s + Number(p.high), 0);
    const deadLettersAtStart = await countDeadLetters().catch(() => null);
    const watched: WatchedGroup[] = pipelineLayout().map((p) => ({ name: p.name, group: p.group, topic: p.consumes }));

    const rec = new Recorder();
    const startedAt = Date.now();
    const deadline = startedAt + seconds * 1000;
    const samples: SoakSample[] = [];
    let from = startedAt;
    // Windows are cut by what the recorder held at each sample, not by time: a record made in
    // the sample's millisecond, or in the soak's first, falls in exactly one window.
    let mark = markOf(rec);
    const take = async (end: boolean): Promise<void> => {
      const at = Date.now();
      const now = markOf(rec);
      const w = windowBetween(rec, mark.answers, now.answers);
      const events = now.events - mark.events;
      mark = now;
      const windowS = (at - from) / 1000;
      from = at;
      const unanswered = MEASURED_KINDS.reduce((s, k) => s + rec.unanswered[k], 0);
      const mem = memory.read();
      const [lag, dl] = await Promise.all([sampleLag(admin, watched).then((s) => s.lags, () => null), countDeadLetters().catch(() => null)]);
      samples.push({ at, t: (at - startedAt) / 1000, windowS, ...(end ? { end } : {}), events, ...w, lag, rss: mem.rss, heap: mem.heap, deadLetters: dl === null || deadLettersAtStart === null ? null : dl - deadLettersAtStart, unanswered });
    };
    const progress = o.progress === false ? undefined : new Progress();
    const state = () => ({ phase: "soak", events: rec.events, planned: plan.events, answers: rec.answers, unanswered: MEASURED_KINDS.reduce((s, k) => s + rec.unanswered[k], 0), elapsedMs: Date.now() - startedAt, limitMs: seconds * 1000 });
    progress?.start(state);
    const sampling = (async () => {
      for (let k = 1; startedAt + k * sampleSeconds * 1000 <= deadline; k++) {
        await sleep(Math.max(0, startedAt + k * sampleSeconds * 1000 - Date.now()));
        await take(false);
      }
    })();
    try {
      await playAgents(plan, client, rec, { deadline, graceMs: AGENTS_GRACE_MS, waits, starts });
      await sampling;
    } finally {
      progress?.stop(state());
    }
    // What came after the last sample in the time: the answers of the grace, shown and not judged.
    const recorded = markOf(rec);
    if (Date.now() > from || recorded.events > mark.events || MEASURED_KINDS.some((k) => recorded.answers[k] > mark.answers[k])) await take(true);
    const unanswered = MEASURED_KINDS.reduce((s, k) => s + rec.unanswered[k], 0);
    const last = samples[samples.length - 1];
    const result: SoakResult = {
      at: new Date(startedAt),
      command: o.command,
      seed: o.seed,
      warmUpEvents: warm?.events ?? 0,
      agents: o.agents,
      minutes: o.minutes,
      sampleSeconds,
      external: o.external,
      node: process.version,
      plan: { events: plan.events, exhausted: rec.treesDone + rec.treesCut >= plan.trees.length },
      totals: { events: rec.events, answers: rec.answers, unanswered, treesDone: rec.treesDone, treesCut: rec.treesCut, deadLetters: last?.deadLetters ?? null },
      memorySource: memory.source,
      deadLettersSource,
      samples,
      errors: [...rec.errors],
      chartFile: CHART_FILE,
    };
    const markdown = soakMarkdown(result);
    const svg = soakChart(result);
    await mkdir(o.outDir, { recursive: true });
    const files = { markdown: join(o.outDir, "load.md"), json: join(o.outDir, "load.json"), chart: join(o.outDir, CHART_FILE) };
    await writeFile(files.markdown, markdown);
    await writeFile(files.json, `${JSON.stringify({ ...result, verdicts: soakVerdicts(samples) }, null, 2)}\n`);
    await writeFile(files.chart, svg);
    return { result, markdown, svg, files };
  } finally {
    await client?.close().catch(() => undefined);
    await pipeline?.stop().catch((err: unknown) => log.warn("stopping the pipeline failed", { error: String(err) }));
    await admin.disconnect().catch(() => undefined);
  }
}
