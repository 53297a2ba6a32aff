/**
 * One processor of a drill, in a process of its own so that a drill can kill it with SIGKILL:
 *
 *   npx tsx drills/worker.ts <subject> <lab>
 *
 * It runs the processor unchanged under the real runner and transport, on the lab's topics and
 * Redis keys (drills/subjects.ts), with the Kafka client in a thread of its own as the pipeline
 * runs it (`OZ0_KAFKA_THREAD`). On stdout it writes JSON lines: `{"ready":true}` once its
 * consumer runs, then `{"in","out","deadLetters","rss","failing"}` every 200 ms (`failing`: the
 * dependency a batch fails on past the retry bound, while the processor is not ready). SIGTERM stops it
 * gracefully; SIGKILL is what the drills are about.
 */
import { redisClient } from "../store/redis/client.ts";
import kafkajs from "kafkajs";
import { endpointsFromEnv, kafkaConfig } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import { retrySettingsFromEnv } from "../processors/runner/retry.ts";
import { startProcessor } from "../processors/runner/runner.ts";
import { kafkaTransports } from "../processors/runner/kafka-thread.ts";
import { Serde } from "../schemas/serde.ts";
import { FileStore } from "../store/files.ts";
import { minioClient } from "../store/objects.ts";
import { PayloadKeys } from "../store/payload-keys.ts";
import { MappedTransport } from "../bench/pipeline/subjects.ts";
import { drillSubject, isSubjectName, labNames } from "./subjects.ts";

const [name, lab] = process.argv.slice(2);
if (!name || !lab || !isSubjectName(name)) {
  process.stderr.write("usage: npx tsx drills/worker.ts <loop-calls|limits-model-calls|fit-results|fit-offload> <lab>\n");
  process.exit(2);
}

const log = createLogger({ component: "drill-worker", subject: name, lab });
const endpoints = endpointsFromEnv();
const subject = await drillSubject(name);
const names = labNames(subject, lab);
const kafka = new kafkajs.Kafka(kafkaConfig(`oz0-drill-${lab}`, endpoints, process.env, log));
const serde = new Serde({ registryUrl: endpoints.registryUrl });
await serde.registerAll();
const redis = redisClient(endpoints, { maxRetriesPerRequest: 3 });
const consume = { groupId: names.groupId, topics: [names.input], fromBeginning: true };
const transports = kafkaTransports({ clientId: `oz0-drill-${lab}`, endpoints, kafka, log, onExit: () => process.exit(1) });
const transport = new MappedTransport(transports.transport(consume), names.topics);
const files = async (): Promise<FileStore> => {
  const store = new FileStore({ client: minioClient(endpoints), bucket: names.bucket, keys: PayloadKeys.fromEnv() });
  await store.ensureBucket();
  return store;
};
const running = await startProcessor(subject.processor, await subject.env(redis, names.keys, files), { transport, serde, log, retry: retrySettingsFromEnv(process.env) });

const say = (v: unknown): void => void process.stdout.write(`${JSON.stringify(v)}\n`);
say({ ready: true });
const timer = setInterval(() => {
  const { in: inputs, out, deadLetters } = running.stats;
  say({ in: inputs, out, deadLetters, rss: process.memoryUsage().rss, failing: running.failing()?.dependency ?? null });
}, 200);

let stopping = false;
const stop = async (): Promise<void> => {
  if (stopping) return;
  stopping = true;
  clearInterval(timer);
  await running.stop();
  await transports.stop();
  redis.disconnect();
  process.exit(0);
};
process.once("SIGTERM", () => void stop());
process.once("SIGINT", () => void stop());
