/**
 * `npm start`: the main job. Finds the services (or brings up the local stack), creates the
 * topics, registers the schemas, runs every processor of the pipeline, and shows progress
 * until SIGINT or SIGTERM; then stops each processor with its offsets committed and prints a
 * summary.
 */
import { Redis } from "ioredis";
import { Kafka } from "kafkajs";
import { PIPELINE } from "../processors/pipeline.ts";
import { kafkaConfig } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import { startProcessor, type RunningProcessor } from "../processors/runner/runner.ts";
import { KafkaTransport } from "../processors/runner/transport.ts";
import { Serde } from "../schemas/serde.ts";
import { ConfigTable } from "../processors/runner/config-table.ts";
import { minioClient, ObjectStore } from "../store/objects.ts";
import { ensureTopics } from "../topology/create.ts";
import { TOPICS } from "../topology/topics.ts";
import { servicesForCommand } from "./services.ts";

const log = createLogger({ component: "start" });
const endpoints = await servicesForCommand();
const kafka = new Kafka(kafkaConfig("oz0-pipeline", endpoints, process.env, log));

const admin = kafka.admin();
await admin.connect();
const topics = await ensureTopics(admin, TOPICS);
log.info("topics ready", { created: topics.created.length, existing: topics.existing.length, warnings: topics.warnings });
const serde = new Serde({ registryUrl: endpoints.registryUrl });
await serde.registerAll();
log.info("schemas registered");

const redis = new Redis(endpoints.redisUrl, { maxRetriesPerRequest: 3 });
const objects = new ObjectStore(minioClient(endpoints), process.env.OZ0_BUCKET ?? "oz0-files");
await objects.ensureBucket();
const config = await ConfigTable.start(kafka, serde, log);
const running: RunningProcessor[] = [];
for (const e of PIPELINE) {
  const transport = new KafkaTransport({ kafka, groupId: `oz0.${e.processor.name}`, topic: e.processor.input, log });
  running.push(await startProcessor(e.processor, await e.env({ endpoints, redis, config, objects }), { transport, serde, log }));
}
if (running.length === 0) log.warn("the pipeline lists no processors yet: topics and schemas are ready, nothing consumes them");

const started = Date.now();
let last = new Map(running.map((r) => [r.name, r.stats.in]));

async function lagOf(group: string, topic: string): Promise<number> {
  const [committed, ends] = await Promise.all([admin.fetchOffsets({ groupId: group, topics: [topic] }), admin.fetchTopicOffsets(topic)]);
  const done = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset === "-1" ? "0" : p.offset)]));
  return ends.reduce((sum, p) => sum + Number(BigInt(p.high) - (done.get(p.partition) ?? 0n)), 0);
}

const progress = setInterval(() => {
  void (async () => {
    const seconds = 5;
    const lines: string[] = [];
    for (const r of running) {
      const p = PIPELINE.find((e) => e.processor.name === r.name)?.processor;
      const lag = p ? await lagOf(`oz0.${r.name}`, p.input).catch(() => NaN) : NaN;
      const rate = (r.stats.in - (last.get(r.name) ?? 0)) / seconds;
      lines.push(`${r.name}: ${rate.toFixed(0)}/s in, ${r.stats.in} in, ${r.stats.out} out, ${r.stats.deadLetters} dead letters, lag ${lag}`);
    }
    last = new Map(running.map((r) => [r.name, r.stats.in]));
    process.stderr.write(`[${Math.round((Date.now() - started) / 1000)}s] ${lines.join(" | ") || "no processors"}\n`);
  })();
}, 5_000);

let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearInterval(progress);
  log.info("stopping", { signal });
  for (const r of running) await r.stop();
  await config.stop();
  await admin.disconnect();
  redis.disconnect();
  const secs = (Date.now() - started) / 1000;
  process.stderr.write(`\nsummary after ${secs.toFixed(0)} s:\n`);
  for (const r of running) process.stderr.write(`  ${r.name}: ${r.stats.in} in, ${r.stats.out} out, ${r.stats.deadLetters} dead letters, ${r.stats.retries} retries\n`);
  process.exit(0);
}
process.on("SIGINT", () => void stop("SIGINT"));
process.on("SIGTERM", () => void stop("SIGTERM"));
