/**
 * Starts every processor of the pipeline against the given services: topics, schemas, the
 * object store's bucket and the config table first, then each processor under its own
 * consumer group. Used by `npm start` and by the load generator.
 */
import { redisClient } from "../store/redis/client.ts";
import { Kafka, type Admin } from "kafkajs";
import { loopStore, startLoopDeadlines } from "../processors/loops/index.ts";
import { PIPELINE } from "../processors/pipeline.ts";
import { ensureSinkBuckets } from "../processors/sinks.ts";
import { ConfigTable } from "../processors/runner/config-table.ts";
import { kafkaConfig, PIPELINE_REDIS, type Endpoints } from "../processors/runner/endpoints.ts";
import type { Logger } from "../processors/runner/log.ts";
import { consumerLag } from "../processors/runner/monitor.ts";
import { startOps, type Ops } from "../processors/runner/ops.ts";
import { opsAddressFromEnv, type OpsAddress } from "../processors/runner/ops-server.ts";
import { startProcessor, type RunningProcessor } from "../processors/runner/runner.ts";
import { kafkaTransports } from "../processors/runner/kafka-thread.ts";
import { Serde } from "../schemas/serde.ts";
import { FileStore } from "../store/files.ts";
import { minioClient } from "../store/objects.ts";
import { PayloadKeys } from "../store/payload-keys.ts";
import { ensureTopics } from "../topology/create.ts";
import { TOPICS } from "../topology/topics.ts";

export interface Pipeline {
  readonly running: RunningProcessor[];
  /** Each processor's consumer group, by processor name. */
  readonly groups: ReadonlyMap<string, string>;
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly serde: Serde;
  /** Health, lag and metrics, served over HTTP (docs/operations.md). */
  readonly ops: Ops;
  /** Messages not yet consumed by a processor's group, summed over its input's partitions. */
  lag(processor: RunningProcessor): Promise<number>;
  stop(): Promise<void>;
}

export interface PipelineOptions {
  /** Where `/health/*` and `/metrics` listen. @default `OZ0_METRICS_HOST`:`OZ0_METRICS_PORT`, else 127.0.0.1:9464 */
  ops?: OpsAddress;
  /**
   * Each processor's consumer group is this prefix and its name. A prefix of its own gives a
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
}

/** Commits a group that has committed nothing at its topic's end, so it reads only what comes next. */
async function startGroupAtEnd(admin: Admin, groupId: string, topic: string): Promise<void> {
  const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
  if (committed?.partitions.some((p) => p.offset !== "-1")) return;
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.setOffsets({ groupId, topic, partitions: ends.map((p) => ({ partition: p.partition, offset: p.high })) });
}

export async function startPipeline(endpoints: Endpoints, log: Logger, options: PipelineOptions = {}): Promise<Pipeline> {
  const kafka = new Kafka(kafkaConfig("oz0-pipeline", endpoints, process.env, log));
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
  const groupOf = (name: string): string => `${options.groupPrefix ?? "oz0."}${name}`;
  // The processors' consumers and producers in a thread of their own, unless OZ0_KAFKA_THREAD=off.
  const transports = kafkaTransports({ clientId: "oz0-pipeline", endpoints, kafka, log, onExit: (err) => ops.health.failed(err.message) });
  const inputs = new Map<string, string>(PIPELINE.map((e) => [e.processor.name, e.processor.input]));
  const groups = new Map<string, string>(PIPELINE.map((e) => [e.processor.name, groupOf(e.processor.name)]));
  // All at once: a start returns once its consumer first joined its group, which takes the
  // broker's initial rebalance delay and more (about 5 s here), so one after the other the
  // pipeline took that long per processor.
  const running: RunningProcessor[] = await Promise.all(
    PIPELINE.map(async (e) => {
      const groupId = groupOf(e.processor.name);
      if (options.startAt === "end") await startGroupAtEnd(admin, groupId, e.processor.input);
      ops.starting(e.processor.name, groupId);
      const consume = { groupId, topic: e.processor.input };
      const transport = transports.transport(consume);
      const started = await startProcessor(e.processor, await e.env({ endpoints, redis, config, files }), { transport, serde, log });
      ops.started(started, groupId);
      return started;
    }),
  );
  // LOOP-5: deadlines of loop approvals fire by a timer, even when the run sends nothing more.
  const loopDeadlines = await startLoopDeadlines({ store: loopStore(redis), kafka, serde, log });
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
      const input = inputs.get(r.name);
      const group = groups.get(r.name);
      if (!input || !group) return NaN;
      return consumerLag(admin, group, input);
    },
    stop: async () => {
      ops.health.stopping();
      await Promise.all(running.map((r) => r.stop()));
      await transports.stop();
      await loopDeadlines.stop();
      await config.stop();
      await ops.stop();
      await admin.disconnect();
      redis.disconnect();
    },
  };
}
