/**
 * `npm run load`: many runtimes at once, through the runtime client, against the pipeline, and
 * the same plan against a bare kafkajs passthrough on the same broker; a report with figures
 * and a chart. Bounded in count and time: it stops by itself.
 *
 *   npm run load -- [--events N] [--seconds S] [--runtimes R[,R...] | --agents N[,N...] [--think-scale F] [--cold-start]] [--seed K] [--warm-up W] [--external] [--out DIR]
 *
 * Trees of several tenants: paging, large results offloaded to MinIO and read back with
 * oz.read_result, loops, delegated children, budgets that run out (bench/load/mix.ts), with
 * text from real documents of the repository. Without --external the pipeline runs in this
 * process. The report goes to DIR/load.md and DIR/load.svg (default bench/out); progress to
 * stderr. With several numbers of runtimes (`--runtimes 1,8,24,64`), a sweep: the plan at each in
 * turn on one pipeline, each level's report in DIR/runtimes-<n>/, and DIR/sweep.md and sweep.svg
 * with latency against events per second for the pipeline and the passthrough.
 * With `--agents N` instead of runtimes, N agents play the plan, each waiting between steps as
 * coding agents do (the model's generation, the tools' runs: bench/load/pace.ts); several
 * numbers make an agents sweep, with the most agents held at a p99 of 100 ms. The agents start
 * as if they had long been playing, so a run offers the long run's load from its start;
 * `--cold-start` starts them all afresh, as after a restart (about twice that over minutes).
 * With `--agents N --minutes M`, a soak: the pipeline alone (no passthrough phase) played by N
 * agents for M minutes (at most 240), sampled every `--sample-seconds` (default 30, at least 5):
 * each window's latencies, the consumer lag, the pipeline's memory, dead letters and unanswered,
 * with a table and a chart over time and a verdict on each series (bench/load/soak.ts).
 * Exit status 0 when every awaited answer came, 1 otherwise, 2 on a usage mistake.
 */
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { runLoad, runSweep } from "../bench/load/run.ts";
import { runSoak } from "../bench/load/soak-run.ts";
import type { AgentStart } from "../bench/load/pace.ts";
import { DEFAULT_SAMPLE_SECONDS, MAX_SOAK_MINUTES, MIN_SAMPLE_SECONDS } from "../bench/load/soak.ts";
import type { LoadResult } from "../bench/load/report.ts";
import { MEASURED_KINDS } from "../bench/load/play.ts";
import { createLogger } from "../processors/runner/log.ts";
import { opsAddressFromEnv } from "../processors/ops/ops-server.ts";
import { servicesForCommand } from "../topology/services.ts";

const usage = "usage: npm run load -- [--events N>0] [--seconds S>0] [--runtimes R>0[,R...] | --agents N>0[,N...] [--think-scale F>0] [--cold-start]] [--seed K] [--warm-up W>=0] [--external] [--out DIR]\n       npm run load -- --agents N>0 --minutes M (0<M<=240) [--sample-seconds S>=5] [--think-scale F>0] [--cold-start] [--events N] [--seed K] [--warm-up W>=0] [--external [--pipeline-pid P]] [--out DIR]\n";
let values;
try {
  ({ values } = parseArgs({
    options: {
      // By default 3,000; with agents, what they offer over the seconds (bench/load/pace.ts).
      events: { type: "string" },
      seconds: { type: "string" },
      // A soak: the pipeline alone for this many minutes, sampled every --sample-seconds.
      minutes: { type: "string" },
      "sample-seconds": { type: "string" },
      // With --external in a soak: the pipeline's process here, whose memory /proc shows.
      "pipeline-pid": { type: "string" },
      runtimes: { type: "string" },
      agents: { type: "string" },
      // Every wait of the agents multiplied by this: for tests and quick looks.
      "think-scale": { type: "string" },
      // The agents all start afresh, as after a restart, instead of as if long at play.
      "cold-start": { type: "boolean", default: false },
      seed: { type: "string", default: "1" },
      // Events of a warm-up plan before each phase, not counted; by default as many as the plan's.
      "warm-up": { type: "string" },
      external: { type: "boolean", default: false },
      out: { type: "string", default: fileURLToPath(new URL("../bench/out/", import.meta.url)) },
    },
  }));
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${usage}`);
  process.exit(2);
}
if (values.agents !== undefined && values.runtimes !== undefined) {
  process.stderr.write(`--agents and --runtimes exclude each other\n${usage}`);
  process.exit(2);
}
if (values["think-scale"] !== undefined && values.agents === undefined) {
  process.stderr.write(`--think-scale scales the agents' waits: it needs --agents\n${usage}`);
  process.exit(2);
}
if (values["cold-start"] && values.agents === undefined) {
  process.stderr.write(`--cold-start is how the agents begin: it needs --agents\n${usage}`);
  process.exit(2);
}
const soak = values.minutes !== undefined;
if (soak && (values.agents === undefined || values.runtimes !== undefined || values.seconds !== undefined || values.agents.includes(","))) {
  process.stderr.write(`--minutes makes a soak: it needs --agents with one number, and takes neither --runtimes nor --seconds\n${usage}`);
  process.exit(2);
}
if (!soak && (values["sample-seconds"] !== undefined || values["pipeline-pid"] !== undefined)) {
  process.stderr.write(`--sample-seconds and --pipeline-pid belong to a soak (--minutes)\n${usage}`);
  process.exit(2);
}
if (values["pipeline-pid"] !== undefined && !values.external) {
  process.stderr.write(`--pipeline-pid names a pipeline running elsewhere: it needs --external\n${usage}`);
  process.exit(2);
}
const minutes = Number(values.minutes ?? "0");
const sampleSeconds = Number(values["sample-seconds"] ?? String(DEFAULT_SAMPLE_SECONDS));
const pipelinePid = values["pipeline-pid"] === undefined ? undefined : Number(values["pipeline-pid"]);
if (soak && !(minutes > 0 && minutes <= MAX_SOAK_MINUTES && Number.isFinite(sampleSeconds) && sampleSeconds >= MIN_SAMPLE_SECONDS && (pipelinePid === undefined || (Number.isInteger(pipelinePid) && pipelinePid > 0)))) {
  process.stderr.write(`a soak lasts 0 < M <= ${MAX_SOAK_MINUTES} minutes, sampled every ${MIN_SAMPLE_SECONDS} s or more\n${usage}`);
  process.exit(2);
}
const agents = values.agents !== undefined;
const events = values.events === undefined ? undefined : Number(values.events);
const seconds = Number(values.seconds ?? "120");
const levels = (values.agents ?? values.runtimes ?? "24").split(",").map((r) => Number(r.trim()));
const seed = Number(values.seed);
const thinkScale = Number(values["think-scale"] ?? "1");
const start: AgentStart = values["cold-start"] ? "cold" : "steady";
// Agents warm up on 3,000 events by default, played without waits (their plans are larger).
const warmUpEvents = values["warm-up"] === undefined ? (agents ? 3_000 : (events ?? 3_000)) : Number(values["warm-up"]);
if (
  !(
    (events === undefined || (Number.isInteger(events) && events > 0)) &&
    seconds > 0 &&
    levels.every((r) => Number.isInteger(r) && r > 0) &&
    Number.isInteger(seed) &&
    Number.isInteger(warmUpEvents) &&
    warmUpEvents >= 0 &&
    Number.isFinite(thinkScale) &&
    thinkScale > 0
  )
) {
  process.stderr.write(usage);
  process.exit(2);
}

// The runner and kafkajs log at info; a load run wants warnings only, unless told otherwise.
process.env.OZ0_LOG_LEVEL ??= "warn";
const endpoints = await servicesForCommand();
const command = `npm run load -- ${process.argv.slice(2).join(" ")}`.trim();
// A pipeline elsewhere is asked for its CPU at its metrics (OZ0_METRICS_HOST and _PORT, as it serves them).
const ops = values.external ? opsAddressFromEnv(process.env) : undefined;
const pipelineMetrics = ops && ops.port > 0 ? `http://${ops.host === "0.0.0.0" || ops.host === "::" ? "127.0.0.1" : ops.host}:${ops.port}/metrics` : undefined;
const common = { endpoints, ...(events !== undefined ? { events } : {}), seconds, seed, warmUpEvents, external: values.external, ...(pipelineMetrics ? { pipelineMetrics } : {}), outDir: values.out, command, log: createLogger({ component: "load" }) };
if (soak) {
  const count = levels[0] as number;
  const { result, markdown, files } = await runSoak({
    endpoints,
    agents: { count, thinkScale, start },
    minutes,
    sampleSeconds,
    ...(events !== undefined ? { events } : {}),
    seed,
    warmUpEvents,
    external: values.external,
    ...(pipelinePid !== undefined ? { pipelinePid } : {}),
    outDir: values.out,
    command,
    log: createLogger({ component: "load" }),
  });
  process.stdout.write(`${markdown}\n`);
  process.stderr.write(`report: ${files.markdown}, samples: ${files.json}, chart: ${files.chart}\n`);
  process.exit(result.totals.unanswered > 0 || result.errors.length > 0 ? 1 : 0);
}
const failed = (r: LoadResult): boolean => MEASURED_KINDS.reduce((s, k) => s + r.pipeline.rec.unanswered[k], 0) > 0 || r.pipeline.rec.errors.length > 0;
if (levels.length === 1) {
  const n = levels[0] as number;
  const { result, markdown, files } = await runLoad({ ...common, runtimes: n, ...(agents ? { agents: { count: n, thinkScale, start } } : {}) });
  process.stdout.write(`${markdown}\n`);
  process.stderr.write(`report: ${files.markdown}, chart: ${files.chart}\n`);
  process.exit(failed(result) ? 1 : 0);
}
const sweep = await runSweep({ ...common, levels, ...(agents ? { agents: { thinkScale, start } } : {}) });
process.stdout.write(`${sweep.markdown}\n`);
process.stderr.write(`sweep: ${sweep.files.markdown}, chart: ${sweep.files.chart}; each level's report under ${values.out}\n`);
process.exit(sweep.levels.some((l) => failed(l.outcome.result)) ? 1 : 0);
