/**
 * The pipeline's topology: its two applications, the processors each runs with how to build
 * the environment each core needs from the shared connections, and the timers beside them.
 * A processor joins the pipeline by being declared here; `topology/run.ts` runs what this
 * declares, `npm run docs:topology` writes the docs' table and diagram from it, and
 * `topology/app-test-driver.ts` runs it in memory.
 */
import type { Kafka } from "kafkajs";
import type { RedisClient } from "../store/redis/client.ts";
import { FileNotFound } from "../store/file-errors.ts";
import type { FileStore } from "../store/files.ts";
import { Keys } from "../store/redis/keys.ts";
import type { Serde } from "../schemas/serde.ts";
import { fillInProcessor } from "../processors/fill-in/processor.ts";
import { fitResultsProcessor } from "../processors/fit-results/processor.ts";
import { fileArgumentsEnv, filesState, keptThreshold } from "../processors/files/env.ts";
import { filesJobsProcessor } from "../processors/files-jobs/processor.ts";
import { loopApprovalsProcessor, loopCallsProcessor, loopEnv, loopResultsProcessor, loopStore, startLoopDeadlines } from "../processors/loops/index.ts";
import { limitsEnv, limitsJobsProcessor, limitsModelCallsProcessor, spendShare } from "../processors/limits/index.ts";
import { startUnknownOutcomeDeadlines } from "../processors/limits/unknown-deadlines.ts";
import { redisUnknownOutcomeStore, redisStandingStore } from "../processors/limits/redis-store.ts";
import { SINKS, sinkStores } from "../processors/sinks.ts";
import { readResultCacheFromEnv, readResultEnv, readResultProcessor } from "../processors/read-result/index.ts";
import type { PriceTable } from "../processors/limits/prices.ts";
import type { RetentionSchedule } from "../processors/retention/schedule.ts";
import { redisRetentionStore } from "../processors/retention/redis-store.ts";
import { retentionInstance, startRetentionTimer } from "../processors/retention/timer.ts";
import { SPREAD_SHARE } from "../processors/runner/turns.ts";
import type { ConfigView } from "../processors/runner/config-table.ts";
import type { Endpoints } from "../processors/runner/endpoints.ts";
import type { Logger } from "../processors/runner/log.ts";
import type { MetricFamily } from "../processors/ops/metrics.ts";
import type { Processor } from "../processors/runner/processor.ts";
import { wholeFromEnv } from "../processors/runner/settings.ts";
import { consumersFromEnv } from "../processors/runner/transport.ts";
import { TreeHolds } from "../store/tree-holds.ts";
import { declareTopology, type Topology } from "./declare.ts";
import { TOPICS, type TopicName } from "./topics.ts";

type Env = Record<string, string | undefined>;

export interface PipelineDeps {
  endpoints: Endpoints;
  redis: RedisClient;
  config: ConfigView;
  files: FileStore;
  /** What each model costs: the one table both limits processors price with. @default DEFAULT_PRICES */
  prices?: PriceTable;
}

export interface PipelineEntry<In = unknown, Env = unknown> {
  readonly processor: Processor<In, Env>;
  readonly env: (deps: PipelineDeps) => Env | Promise<Env>;
  /** What state it keeps (the docs' table). */
  readonly state?: string;
}

/** Helps type an entry whose environment type differs from its neighbours'. */
export function entry<In, Env>(processor: Processor<In, Env>, env: (deps: PipelineDeps) => Env | Promise<Env>, state?: string): PipelineEntry {
  return { processor, env, state };
}

function notFoundAsNull(err: unknown): null {
  if (err instanceof FileNotFound) return null;
  throw err;
}

/** What a punctuator is started with: the shared connections, and the retention sweep's settings. */
export interface PunctuatorDeps extends PipelineDeps {
  readonly kafka: Kafka;
  readonly serde: Serde;
  readonly log: Logger;
  /** The retention sweep's schedule (`off`: not run in this instance, for the reason `offBecause` gives). */
  readonly retention: { readonly schedule: RetentionSchedule | "off"; readonly traceRetentionMs: number; readonly offBecause?: string };
}

/** A running punctuator. */
export interface Punctuation {
  stop(): Promise<void>;
  metrics?(): MetricFamily[];
}

export interface PipelinePunctuator {
  readonly name: string;
  readonly every: string;
  readonly writes: readonly TopicName[];
  readonly doc: string;
  /** Starts it beside the processors, with a producer of its own; null when it is off in this instance. */
  start(deps: PunctuatorDeps): Promise<Punctuation | null>;
}

/**
 * The sinks' fetches wait for `OZ0_SINK_MIN_BYTES` (default 8 MiB) or `OZ0_SINK_MAX_WAIT_MS`
 * (default 10000), whichever comes first: the trace sink writes one object a tenant and batch,
 * the audit sink one a batch, so longer batches mean fewer, bigger objects (measured: 0.07
 * objects an event against 0.30 with 1 MiB or 2 s, docs/load.md); a trace or an audit entry is
 * in MinIO within about that wait of its event.
 */
export function sinkFetchFromEnv(env: Env = process.env): { minBytes: number; maxWaitMs: number } {
  return {
    minBytes: wholeFromEnv(env, "OZ0_SINK_MIN_BYTES", 8 * 1024 * 1024, 1, 64 * 1024 * 1024, "bytes"),
    maxWaitMs: wholeFromEnv(env, "OZ0_SINK_MAX_WAIT_MS", 10_000, 1, 30_000, "milliseconds"),
  };
}

/**
 * The sinks' batches in hand at once (`OZ0_SINK_BATCHES_AT_ONCE`, 1 to 64). Two, not one: one
 * would leave MinIO idle while a batch decodes; two keeps at most two of the sinks' requests
 * queued ahead of a decision's put or read.
 */
export const DEFAULT_SINK_BATCHES_AT_ONCE = 2;

export function sinkBatchesAtOnceFromEnv(env: Env = process.env): number {
  return wholeFromEnv(env, "OZ0_SINK_BATCHES_AT_ONCE", DEFAULT_SINK_BATCHES_AT_ONCE, 1, 64);
}

/**
 * The least time between the starts of two of the sinks' batches (`OZ0_SINK_BATCH_GAP_MS`, 0
 * to 1000 ms). A sinks' fetch brings a batch for every partition of their topics with records
 * (up to 56), and each batch puts one to three objects; taken back to back, MinIO spent 150 to
 * 340 ms of CPU within a second on them every 10 s, on both cores, and the answers in that
 * second waited (p99 by exchange 90 to 170 ms under 1,000 agents, the slowest answers all in
 * those seconds). 50 ms apart, a fetch's writes spread over about 3 s, well within the sinks'
 * 10-s window (docs/load.md, 2026-12-06).
 */
export const DEFAULT_SINK_BATCH_GAP_MS = 50;

export function sinkBatchGapFromEnv(env: Env = process.env): number {
  return wholeFromEnv(env, "OZ0_SINK_BATCH_GAP_MS", DEFAULT_SINK_BATCH_GAP_MS, 0, 1_000, "milliseconds");
}

/**
 * The most a sinks' fetch's batches are spread over (`OZ0_SINK_SPREAD_MS`, 0 to 30000 ms; 0: only
 * the gap above): by default `SPREAD_SHARE` of their fetch's wait, 8 s of 10. Started 50 ms
 * apart, a fetch's 56 batches came to MinIO within 3 s, and under 3,000 agents the answers of
 * those seconds waited (the slow answers in clusters 10 to 12 s apart); spread over the window,
 * three runs had 0.41x to 0.59x the answers over 100 ms of three runs with the gap alone
 * (docs/load.md, "A fetch's writes spread over its window"). A fetch's entries then reach MinIO
 * within about the wait plus the spread.
 */
export function sinkSpreadFromEnv(env: Env = process.env): number {
  const fallback = Math.round(SPREAD_SHARE * sinkFetchFromEnv(env).maxWaitMs);
  return wholeFromEnv(env, "OZ0_SINK_SPREAD_MS", fallback, 0, 30_000, "milliseconds");
}

/**
 * Consumers of the `oz0.pipeline` group in each instance, unless `OZ0_CONSUMERS` says. One: it
 * fetches every partition at once and commits each fetch in one transaction, where two each
 * fetched and committed half as much; measured, one costs 0.76x the CPU an event in the closed
 * loop and 0.81x under 1,000 agents, and answers no later (docs/load.md, 2026-12-06).
 */
export const PIPELINE_CONSUMERS = 1;

/** The processors that answer runtimes, in the `pipeline` application. */
export const DECIDING: PipelineEntry[] = [
  // FIT-16: the tree's spend share from the budget state (LIM-8), else the event's.
  // FILE-1: file arguments resolved to paths when the call's tree (or an earlier turn, FILE-3) may read them.
  entry(
    fillInProcessor,
    ({ config, redis, files }) => ({ config, spendShare: (tenant: string, tree: string) => spendShare(redis, new Keys(), tenant, tree), files: fileArgumentsEnv(filesState(redis), files) }),
    "the config table; trees' spend shares and files (Redis)",
  ),
  entry(loopCallsProcessor, loopEnv, "Redis, per run (`docs/loops.md`); kill switches from the config table"),
  entry(loopResultsProcessor, loopEnv, "the same run state"),
  entry(loopApprovalsProcessor, loopEnv, "the same run state; deadlines and escalation steps by the `loop-deadlines` punctuator"),
  // LIM-7: both price with the same table (OZ0_PRICES, else the default; docs/limits.md "Prices").
  entry(limitsModelCallsProcessor, ({ redis, config, prices }) => limitsEnv({ redis, config, prices }), "Redis, one hash per tree (`docs/limits.md`)"),
  entry(limitsJobsProcessor, ({ redis, config, prices }) => limitsEnv({ redis, config, prices }), "the same hash per tree"),
  entry(
    fitResultsProcessor,
    ({ config, files, redis }) => {
      const state = filesState(redis);
      return {
        load: async (r) => (r.content_ref ? files.read(await state.reader(r.tenant, r.tree_id), r.content_ref).then((f) => f.bytes, notFoundAsNull) : null),
        // OFF-13: the threshold the job started with, kept in Redis.
        threshold: keptThreshold(state, config),
        storeFile: (owner, bytes, options) => files.store(owner, bytes, options),
        // FIT-8: the plugin manifests say which functions adopt the fit convention.
        config,
      };
    },
    "the file store (MinIO): results published by ref, offloaded results",
  ),
  // FILE-3, FILE-4, FILE-5, OFF-13: trees, turns, files handed at a start, thresholds kept at a start.
  entry(
    filesJobsProcessor,
    ({ config, files, redis }) => ({ config, files, state: filesState(redis), standing: redisStandingStore(redis, new Keys()) }),
    "Redis: trees, conversation turns, jobs' offload thresholds; the file store (`docs/files.md`)",
  ),
  // OFF-6..OFF-9: oz.read_result calls, answered from the file store.
  entry(
    readResultProcessor,
    ({ config, files, redis }) => readResultEnv({ config, files, redis, reader: (tenant, tree) => filesState(redis).reader(tenant, tree), kept: readResultCacheFromEnv() }),
    "the file store (MinIO), the job's joined labels (Redis), the config table; results read kept in memory a while (`OZ0_READ_CACHE_MB`)",
  ),
];

/** SYS-5: the trace and audit sinks write MinIO and emit nothing, in the `sinks` application. */
export const SINK_ENTRIES: PipelineEntry[] = SINKS.map((s) =>
  entry(s.processor as Processor<unknown, unknown>, s.env, s.processor.name.startsWith("audit-") ? "the audit log in MinIO, under object lock (`docs/sinks.md`)" : "the jobs' traces in MinIO, one object per tenant a batch, indexed by job in Redis (`docs/sinks.md`)"),
);

export const PUNCTUATORS: Record<"loopDeadlines" | "unknownOutcomes" | "retention", PipelinePunctuator> = {
  // LOOP-5: deadlines of loop approvals fire by a timer, even when the run sends nothing more.
  // Approvals whose job ended are closed with the job's end (processors/loops/closing.ts).
  loopDeadlines: {
    name: "loop-deadlines",
    every: "1 s",
    writes: ["oz0.loop-approvals"],
    doc: "LOOP-5: passed deadlines and escalation steps of loop approvals, and approvals whose job ended, answered on oz0.loop-approvals (loop-approvals decides them)",
    start: ({ redis, kafka, serde, log, config }) => startLoopDeadlines({ store: loopStore(redis), kafka, serde, log, ended: { standing: redisStandingStore(redis, new Keys()), config } }),
  },
  // LIM-11: an unknown outcome nobody decided by its deadline stops the job with unknown_outcome.
  unknownOutcomes: {
    name: "unknown-outcome-deadlines",
    every: "1 s",
    writes: ["oz0.admissions", "oz0.audit"],
    doc: "LIM-11: an unknown outcome nobody decided by its deadline stops the job with unknown_outcome",
    start: ({ redis, kafka, serde, log }) => startUnknownOutcomeDeadlines({ store: redisUnknownOutcomeStore(redis, new Keys()), kafka, serde, log }),
  },
  // FILE-6, OFF-10: expired files and trace parts swept on a schedule, a tenant at a time under its lock.
  retention: {
    name: "retention-sweeps",
    every: "OZ0_RETENTION_EVERY",
    writes: ["oz0.audit"],
    doc: "FILE-6, OFF-10: expired files and trace parts swept, a tenant at a time under its lock",
    start: async ({ redis, kafka, serde, log, files, endpoints, retention }) => {
      if (retention.schedule === "off") {
        log.info(`retention sweeps are off in this instance (${retention.offBecause ?? "OZ0_RETENTION_EVERY=off"})`);
        return null;
      }
      const holds = new TreeHolds(redis, new Keys());
      return startRetentionTimer({
        files,
        traces: sinkStores(endpoints).traces.indexed(redis),
        traceRetentionMs: retention.traceRetentionMs,
        state: redisRetentionStore(redis, new Keys()),
        heldTrees: (tenant) => holds.heldTrees(tenant),
        kafka,
        serde,
        log,
        schedule: retention.schedule,
        instance: retentionInstance(),
      });
    },
  },
};

export type PipelineTopology = Topology<PipelineEntry, PipelinePunctuator>;

/** The pipeline, declared and checked once. */
export const PIPELINE_TOPOLOGY: PipelineTopology = declareTopology<PipelineEntry, PipelinePunctuator>(
  [
    {
      name: "pipeline",
      doc: "the processors that answer runtimes",
      exactlyOnce: true,
      // One consumer unless OZ0_CONSUMERS says (PIPELINE_CONSUMERS: measured, fewer transactions an event and answers no later than two).
      consumers: { text: `${PIPELINE_CONSUMERS} (OZ0_CONSUMERS)`, fromEnv: (env) => consumersFromEnv(env, PIPELINE_CONSUMERS) },
      processors: DECIDING,
      punctuators: [PUNCTUATORS.loopDeadlines, PUNCTUATORS.unknownOutcomes, PUNCTUATORS.retention],
    },
    {
      name: "sinks",
      doc: "the trace and audit sinks: idempotent writes, no transaction, bigger batches",
      exactlyOnce: false,
      consumers: { text: "1", fromEnv: () => 1 },
      fetch: { text: "8 MiB (OZ0_SINK_MIN_BYTES) or 10000 ms (OZ0_SINK_MAX_WAIT_MS)", fromEnv: sinkFetchFromEnv },
      // A fetch brings every sink partition's batch at once; decided back to back they held the
      // runtimes' answers behind them (docs/load.md).
      yields: {
        text: `${DEFAULT_SINK_BATCHES_AT_ONCE} (OZ0_SINK_BATCHES_AT_ONCE) batches at once, started ${DEFAULT_SINK_BATCH_GAP_MS} ms apart (OZ0_SINK_BATCH_GAP_MS) or more, a fetch's spread over up to ${SPREAD_SHARE * 100}% of its wait (OZ0_SINK_SPREAD_MS)`,
        fromEnv: (env) => ({ atOnce: sinkBatchesAtOnceFromEnv(env), gapMs: sinkBatchGapFromEnv(env), spreadMs: sinkSpreadFromEnv(env) }),
      },
      processors: SINK_ENTRIES,
    },
  ],
  TOPICS,
);

/** Every processor `npm start` runs, with its environment, application by application. */
export const PIPELINE: readonly PipelineEntry[] = PIPELINE_TOPOLOGY.nodes;
