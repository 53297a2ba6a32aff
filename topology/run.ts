/**
 * Starts the pipeline against the given services: topics, schemas, the object store's bucket
 * and the config table first, then what `topology/pipeline.ts` declares: each application as one
 * consumer group reading each of its inputs once (`docs/architecture.md`), with its settings,
 * and its punctuators beside it. Used by `npm start` (`bin/start.ts`), the doctor, the load
 * generator, the benchmarks and the tests.
 */
import { redisClient } from "../store/redis/client.ts";
import { Kafka, type Admin } from "kafkajs";
import { pricesFromEnv } from "../processors/limits/price-file.ts";
import type { PriceTable } from "../processors/limits/prices.ts";
import { daysToMs, describeSchedule, retentionScheduleFromEnv, traceRetentionDaysFromEnv } from "../processors/retention/schedule.ts";
import { ConfigTable } from "../processors/runner/config-table.ts";
import { kafkaConfig, PIPELINE_REDIS, type Endpoints } from "../processors/runner/endpoints.ts";
import type { Logger } from "../processors/runner/log.ts";
import { consumerLag } from "../processors/ops/monitor.ts";
import { startOps, type Ops } from "../processors/ops/ops.ts";
import { opsAddressFromEnv, type OpsAddress } from "../processors/ops/ops-server.ts";
import { startApplication, type RunningProcessor } from "../processors/runner/runner.ts";
import { kafkaTransports } from "../processors/runner/kafka-thread.ts";
import { retrySettingsFromEnv } from "../processors/runner/retry.ts";
import { Serde } from "../schemas/serde.ts";
import { FileStore } from "../store/files.ts";
import { minioClient } from "../store/objects.ts";
import { PayloadKeys } from "../store/payload-keys.ts";
import { ensureTopics } from "./create.ts";
import { PIPELINE_TOPOLOGY, PUNCTUATORS, type Punctuation, type PunctuatorDeps } from "./pipeline.ts";
import { ensureSinkBuckets } from "../processors/sinks.ts";
import { TOPICS } from "./topics.ts";
import { setGroupOffsets, type TopicOffsets } from "./group-offsets.ts";
import { describeKafkajsPatches, kafkajsPatches } from "../processors/runner/kafkajs-patches.ts";
import { Shutdown } from "../lib/stopping.ts";

export { PIPELINE_CONSUMERS, sinkFetchFromEnv } from "./pipeline.ts";

export interface Pipeline {
  readonly running: RunningProcessor[];
  /** Each processor's consumer group, by processor name: the pipeline's, or the sinks'. */
  readonly groups: ReadonlyMap<string, string>;
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly serde: Serde;
  /** Health, lag and metrics, served over HTTP (docs/operations.md). */
  readonly ops: Ops;
  /** Messages not yet consumed by a processor's group, summed over its input's partitions. */
  lag(processor: RunningProcessor): Promise<number>;
  /** Stops every part, whatever another's stop did; rejects with one StopFailed (lib/stopping.ts) naming each part that failed. */
  stop(): Promise<void>;
}

export interface PipelineOptions {
  /** Where `/health/*` and `/metrics` listen. @default `OZ0_METRICS_HOST`:`OZ0_METRICS_PORT`, else 127.0.0.1:9464 */
  ops?: OpsAddress;
  /**
   * The consumer groups are this prefix and `pipeline` or `sinks`. A prefix of its own gives a
   * pipeline groups that no other instance shares and no earlier run left a backlog in (the
   * end-to-end tests). @default "oz0."
   */
  groupPrefix?: string;
  /**
   * Where a group that has committed nothing starts: at the beginning of its input (every
   * record the topic keeps), or at its end (only what is published from now on). A group that
   * committed resumes where it stopped either way. @default "beginning"
   */
  startAt?: "beginning" | "end";
  /**
   * The retention sweep: as `OZ0_RETENTION_EVERY` says, or off in this instance whatever it says
   * (the benchmarks, which measure the path of each event, not a sweep of everything stored).
   * @default "env"
   */
  retention?: "env" | "off";
  /**
   * What each model costs, for both limits processors. @default the prices file `OZ0_PRICES`
   * names (read and checked before anything starts), else the default table (docs/limits.md "Prices")
   */
  prices?: PriceTable;
}

/** The group's committed offsets of a topic, by partition; none when it committed nothing there. */
async function committedOffsets(admin: Admin, groupId: string, topic: string): Promise<Map<number, bigint>> {
  const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return new Map((committed?.partitions ?? []).filter((p) => p.offset !== "-1").map((p) => [p.partition, BigInt(p.offset)]));
}

/**
 * Where a group that has committed nothing on a topic starts. At the topic's end, for
 * `startAt: "end"`. Else, when groups of an earlier layout (one a processor, `earlier`)
 * committed there, at the lowest of their offsets, partition by partition, so an upgrade
 * neither skips what one of them had not handled nor starts over from the beginning; inputs
 * that some of them had handled already are handled again, which changes nothing (every effect
 * is idempotent by input offset, and outputs carry the same IDs). Else nothing is set, and the
 * group reads from the beginning.
 */
async function startingOffsets(admin: Admin, groupId: string, topic: string, at: "beginning" | "end", earlier: readonly string[]): Promise<TopicOffsets | null> {
  if ((await committedOffsets(admin, groupId, topic)).size > 0) return null;
  if (at === "end") {
    const ends = await admin.fetchTopicOffsets(topic);
    return { topic, partitions: ends.map((p) => ({ partition: p.partition, offset: p.high })) };
  }
  const lowest = new Map<number, bigint>();
  for (const old of earlier) {
    for (const [partition, offset] of await committedOffsets(admin, old, topic)) {
      const had = lowest.get(partition);
      if (had === undefined || offset < had) lowest.set(partition, offset);
    }
  }
  if (lowest.size === 0) return null;
  const ends = await admin.fetchTopicOffsets(topic);
  // A partition none of them committed on starts at its beginning, as a new group would.
  return { topic, partitions: ends.map((p) => ({ partition: p.partition, offset: (lowest.get(p.partition) ?? BigInt(p.low)).toString() })) };
}

/** Sets where `groupId` starts on each of `topics` it has committed nothing on (`startingOffsets`), all in one step. */
async function startGroup(kafka: Kafka, admin: Admin, groupId: string, topics: readonly string[], at: "beginning" | "end", earlierOf: (topic: string) => readonly string[]): Promise<void> {
  const offsets = await Promise.all(topics.map((t) => startingOffsets(admin, groupId, t, at, earlierOf(t))));
  await setGroupOffsets(kafka, admin, groupId, offsets.filter((o): o is TopicOffsets => o !== null));
}

/** Where each processor of the pipeline reads: its group, and the topic its inputs are consumed from. */
export function pipelineLayout(prefix = "oz0."): Array<{ readonly name: string; readonly group: string; readonly consumes: string }> {
  return PIPELINE_TOPOLOGY.layout(prefix);
}

export async function startPipeline(endpoints: Endpoints, log: Logger, options: PipelineOptions = {}): Promise<Pipeline> {
  // Read before anything starts, so a wrong setting stops the pipeline at once, naming it.
  const retry = retrySettingsFromEnv(process.env);
  // LIM-7: a prices file with any error stops the start, naming each field.
  const prices = options.prices ?? (await pricesFromEnv(process.env));
  // FILE-6, OFF-10: the retention sweep's schedule and the traces' retention, checked before anything starts.
  const retentionSchedule = options.retention === "off" ? "off" : retentionScheduleFromEnv(process.env);
  const traceRetentionMs = daysToMs(traceRetentionDaysFromEnv(process.env));
  if (options.prices === undefined && process.env.OZ0_PRICES?.trim()) log.info("prices read", { file: process.env.OZ0_PRICES.trim(), models: Object.keys(prices).length });
  const kafka = new Kafka(kafkaConfig("oz0-pipeline", endpoints, process.env, log));
  // The project's changes to kafkajs, applied after npm ci: said either way, warned when missing.
  const patches = kafkajsPatches();
  if (patches.every((p) => p.applied)) log.info(describeKafkajsPatches(patches));
  else log.warn(describeKafkajsPatches(patches));
  const admin = kafka.admin();
  await admin.connect();
  // Served from the start: live at once, ready once every processor's group shows.
  const ops = await startOps({ address: options.ops ?? opsAddressFromEnv(), log: log.child({ component: "ops" }), admin });
  const topics = await ensureTopics(admin, TOPICS);
  log.info("topics ready", { created: topics.created.length, existing: topics.existing.length, warnings: topics.warnings });
  const serde = new Serde({ registryUrl: endpoints.registryUrl });
  await serde.registerAll();
  log.info("schemas registered");
  const redis = redisClient(endpoints, PIPELINE_REDIS);
  const keys = PayloadKeys.fromEnv();
  if (keys.development) log.warn("OZ0_PAYLOAD_KEY is not set: files are sealed with the public development key; set it for any real data");
  const files = new FileStore({ client: minioClient(endpoints), bucket: process.env.OZ0_BUCKET ?? "oz0-files", keys });
  await files.ensureBucket();
  // SYS-5: the traces' bucket and the audit log's, created with object locking.
  await ensureSinkBuckets(endpoints);
  const config = await ConfigTable.start(kafka, serde, log);
  const prefix = options.groupPrefix ?? "oz0.";
  // The processors' consumers and producers in a thread of their own, unless OZ0_KAFKA_THREAD=off.
  const transports = kafkaTransports({ clientId: "oz0-pipeline", endpoints, kafka, log, onExit: (err) => ops.health.failed(err.message) });
  // The applications the topology declares (topology/pipeline.ts): the processors that answer
  // runtimes, exactly-once, and the sinks, whose writes are idempotent, without transactions and
  // in bigger batches.
  const kinds = PIPELINE_TOPOLOGY.applications
    .map((a) => ({ groupId: `${prefix}${a.name}`, yields: a.yields?.fromEnv(process.env) ?? null, entries: a.processors, topics: a.topics, exactlyOnce: a.exactlyOnce, consumers: a.consumers.fromEnv(process.env), ...a.fetch?.fromEnv(process.env) }))
    .filter((k) => k.entries.length > 0);
  const groups = new Map<string, string>(kinds.flatMap((k) => k.entries.map((e) => [e.processor.name, k.groupId] as const)));
  // Both at once: a start returns once its consumer first joined its group, which takes the
  // broker's initial rebalance delay and more (about 5 s here).
  const apps = await Promise.all(
    kinds.map(async ({ groupId, entries, topics, yields, ...consume }) => {
      const earlierOf = (t: string) => entries.filter((e) => e.processor.input === t).map((e) => `${prefix}${e.processor.name}`);
      await startGroup(kafka, admin, groupId, topics, options.startAt ?? "beginning", earlierOf);
      for (const e of entries) ops.starting(e.processor.name, groupId);
      const members = await Promise.all(entries.map(async (e) => ({ processor: e.processor, env: await e.env({ endpoints, redis, config, files, prices }) })));
      const transport = transports.transport({ groupId, topics, ...consume }, yields === null ? undefined : { ...yields, ownLoopTurn: true });
      const app = await startApplication(members, { transport, serde, log, retry });
      for (const p of app.processors) ops.started(p, groupId);
      return app;
    }),
  );
  const running: RunningProcessor[] = apps.flatMap((a) => a.processors);
  // The applications' punctuators (topology/pipeline.ts): loop deadlines (LOOP-5), unknown
  // outcomes' deadlines (LIM-11), retention sweeps (FILE-6, OFF-10); each with a producer of its own.
  const punctuatorDeps: PunctuatorDeps = {
    endpoints,
    redis,
    config,
    files,
    prices,
    kafka,
    serde,
    log,
    retention: { schedule: retentionSchedule, traceRetentionMs, offBecause: options.retention === "off" ? "as its start asked" : "OZ0_RETENTION_EVERY=off" },
  };
  const punctuations: Array<{ readonly name: string; readonly punctuation: Punctuation }> = [];
  for (const p of PIPELINE_TOPOLOGY.applications.flatMap((a) => a.punctuators)) {
    const started = await p.start(punctuatorDeps);
    if (!started) continue;
    punctuations.push({ name: p.name, punctuation: started });
    if (started.metrics) ops.addMetrics(() => started.metrics?.() ?? []);
    if (p === PUNCTUATORS.retention && retentionSchedule !== "off") log.info("retention sweeps scheduled", { schedule: describeSchedule(retentionSchedule) });
  }
  if (running.length === 0) log.warn("the pipeline lists no processors: topics and schemas are ready, nothing consumes them");
  ops.running();

  return {
    running,
    groups,
    kafka,
    admin,
    serde,
    ops,
    lag: async (r) => {
      const group = groups.get(r.name);
      if (!group) return NaN;
      return consumerLag(admin, group, r.consumes);
    },
    stop: async () => {
      ops.health.stopping();
      // Every part is stopped whatever another's stop did; one error then names each that failed.
      const shutdown = new Shutdown("the pipeline");
      // The config table's reader stops beside the applications: each waits out a fetch in flight.
      const configStopped = shutdown.stop("the config table's reader", () => config.stop());
      await Promise.all(apps.map((a, i) => shutdown.stop(`the application ${kinds[i]?.groupId ?? i}`, () => a.stop())));
      await shutdown.stop("the processors' Kafka transports", () => transports.stop());
      for (const p of punctuations) await shutdown.stop(`the punctuator ${p.name}`, () => p.punctuation.stop());
      await configStopped;
      await shutdown.stop("the health and metrics server", () => ops.stop());
      await shutdown.stop("the admin client", () => admin.disconnect());
      await shutdown.stop("the Redis client", () => redis.disconnect());
      shutdown.done();
    },
  };
}
