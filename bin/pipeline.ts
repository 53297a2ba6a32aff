/**
 * Starts every processor of the pipeline against the given services: topics, schemas, the
 * object store's bucket and the config table first, then each processor under its own
 * consumer group. Used by `npm start` and by the load generator.
 */
import { Redis } from "ioredis";
import { Kafka, type Admin } from "kafkajs";
import { loopStore, startLoopDeadlines } from "../processors/loops/index.ts";
import { PIPELINE } from "../processors/pipeline.ts";
import { ConfigTable } from "../processors/runner/config-table.ts";
import { kafkaConfig, type Endpoints } from "../processors/runner/endpoints.ts";
import type { Logger } from "../processors/runner/log.ts";
import { startProcessor, type RunningProcessor } from "../processors/runner/runner.ts";
import { KafkaTransport } from "../processors/runner/transport.ts";
import { Serde } from "../schemas/serde.ts";
import { FileStore } from "../store/files.ts";
import { minioClient } from "../store/objects.ts";
import { PayloadKeys } from "../store/payload-keys.ts";
import { ensureTopics } from "../topology/create.ts";
import { TOPICS } from "../topology/topics.ts";

export interface Pipeline {
  readonly running: RunningProcessor[];
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly serde: Serde;
  /** Messages not yet consumed by a processor's group, summed over its input's partitions. */
  lag(processor: RunningProcessor): Promise<number>;
  stop(): Promise<void>;
}

export async function startPipeline(endpoints: Endpoints, log: Logger): Promise<Pipeline> {
  const kafka = new Kafka(kafkaConfig("oz0-pipeline", endpoints, process.env, log));
  const admin = kafka.admin();
  await admin.connect();
  const topics = await ensureTopics(admin, TOPICS);
  log.info("topics ready", { created: topics.created.length, existing: topics.existing.length, warnings: topics.warnings });
  const serde = new Serde({ registryUrl: endpoints.registryUrl });
  await serde.registerAll();
  log.info("schemas registered");
  const redis = new Redis(endpoints.redisUrl, { maxRetriesPerRequest: 3 });
  const keys = PayloadKeys.fromEnv();
  if (keys.development) log.warn("OZ0_PAYLOAD_KEY is not set: files are sealed with the public development key; set it for any real data");
  const files = new FileStore({ client: minioClient(endpoints), bucket: process.env.OZ0_BUCKET ?? "oz0-files", keys });
  await files.ensureBucket();
  const config = await ConfigTable.start(kafka, serde, log);
  const running: RunningProcessor[] = [];
  const inputs = new Map<string, string>();
  for (const e of PIPELINE) {
    const transport = new KafkaTransport({ kafka, groupId: `oz0.${e.processor.name}`, topic: e.processor.input, log });
    running.push(await startProcessor(e.processor, await e.env({ endpoints, redis, config, files }), { transport, serde, log }));
    inputs.set(e.processor.name, e.processor.input);
  }
  // LOOP-5: deadlines of loop approvals fire by a timer, even when the run sends nothing more.
  const loopDeadlines = await startLoopDeadlines({ store: loopStore(redis), kafka, serde, log });
  if (running.length === 0) log.warn("the pipeline lists no processors: topics and schemas are ready, nothing consumes them");

  return {
    running,
    kafka,
    admin,
    serde,
    lag: async (r) => {
      const input = inputs.get(r.name);
      if (!input) return NaN;
      const [committed, ends] = await Promise.all([admin.fetchOffsets({ groupId: `oz0.${r.name}`, topics: [input] }), admin.fetchTopicOffsets(input)]);
      const done = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset === "-1" ? "0" : p.offset)]));
      return ends.reduce((sum, p) => sum + Number(BigInt(p.high) - (done.get(p.partition) ?? 0n)), 0);
    },
    stop: async () => {
      await Promise.all(running.map((r) => r.stop()));
      await loopDeadlines.stop();
      await config.stop();
      await admin.disconnect();
      redis.disconnect();
    },
  };
}
