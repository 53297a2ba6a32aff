/**
 * `oz0 doctor`'s reading of the services: asks each one with a short timeout (a service that
 * does not answer is reported, never started), each processor's group for its committed
 * offsets twice over a sample, `oz0.dead-letter` from the offsets the broker gives for the start
 * of the window, and the daily loop counts in Redis (LOOP-9). `processors/ops/doctor.ts`
 * builds and formats the report.
 */
import kafkajs from "kafkajs";
import { readRange } from "../client/topic-range.ts";
import { loopReport } from "../processors/loops/report.ts";
import { ConfigTable } from "../processors/runner/config-table.ts";
import { deadLetterRows, rateOf, type DoctorReport, type ProcessorRow, type ServiceCheck } from "../processors/ops/doctor.ts";
import { endpointsFromEnv, kafkaConfig } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import { kafkajsPatches } from "../processors/runner/kafkajs-patches.ts";
import { clusterHealth, readCluster } from "../processors/ops/kafka-cluster.ts";
import { TOPICS } from "../topology/topics.ts";
import { committedTotal, endTotal } from "../processors/ops/monitor.ts";
import { messageOf } from "../processors/runner/errors.ts";
import { Serde } from "../schemas/serde.ts";
import type { DeadLetter } from "../schemas/types.ts";
import { minioClient } from "../store/objects.ts";
import { redisClient } from "../store/redis/client.ts";
import { Keys } from "../store/redis/keys.ts";
import { pipelineLayout } from "../topology/run.ts";

export interface DoctorOptions {
  /** Dead letters of the last this many hours. @default 1 */
  readonly hours: number;
  /** Seconds between the two readings of each group's offsets. @default 2 */
  readonly sampleS: number;
  readonly days: number;
  readonly minTenants: number;
}

const TIMEOUT_MS = 5_000;

async function timed(name: string, ask: () => Promise<unknown>): Promise<ServiceCheck> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([ask(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer in ${TIMEOUT_MS / 1000} s`)), TIMEOUT_MS)))]);
    return { name, ok: true, ms: Date.now() - started };
  } catch (err) {
    return { name, ok: false, ms: Date.now() - started, error: messageOf(err) };
  } finally {
    clearTimeout(timer);
  }
}

export async function doctor(opts: DoctorOptions): Promise<DoctorReport> {
  const endpoints = endpointsFromEnv();
  const log = createLogger({ component: "doctor" }, () => {});
  const kafka = new kafkajs.Kafka({ ...kafkaConfig("oz0-doctor", endpoints, process.env, log), retry: { retries: 1, initialRetryTime: 200, maxRetryTime: 1_000 }, connectionTimeout: 3_000 });
  const redis = redisClient(endpoints, { maxRetriesPerRequest: 1, connectTimeout: 3_000, retryStrategy: () => null });
  const minio = minioClient(endpoints);
  const admin = kafka.admin();
  const at = Date.now();
  const since = at - opts.hours * 3_600_000;
  try {
    const services = await Promise.all([
      timed("kafka", async () => {
        await admin.connect();
        await admin.describeCluster();
      }),
      timed("schema registry", async () => {
        const res = await fetch(`${endpoints.registryUrl}/subjects`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
      }),
      timed("redis", () => redis.ping()),
      timed("minio", () => minio.listBuckets()),
    ]);
    const up = new Map(services.map((s) => [s.name, s.ok]));

    let processors: ProcessorRow[];
    const layout = pipelineLayout();
    if (up.get("kafka")) {
      const read = (group: string, topic: string) => committedTotal(admin, group, topic).catch(() => null);
      const first = await Promise.all(layout.map((p) => read(p.group, p.consumes)));
      const started = Date.now();
      await new Promise((r) => setTimeout(r, opts.sampleS * 1000));
      const second = await Promise.all(layout.map((p) => read(p.group, p.consumes)));
      const seconds = (Date.now() - started) / 1000;
      const topicEnds = new Map<string, number | null>();
      for (const topic of new Set(layout.map((p) => p.consumes))) topicEnds.set(topic, await endTotal(admin, topic).catch(() => null));
      processors = layout.map((p, i) => {
        const end = topicEnds.get(p.consumes) ?? null;
        const done = second[i] ?? null;
        return { name: p.name, group: p.group, topic: p.consumes, lag: end === null || done === null ? null : Math.max(0, end - done), rate: rateOf(first[i] ?? null, done, seconds) };
      });
    } else {
      processors = layout.map((p) => ({ name: p.name, group: p.group, topic: p.consumes, lag: null, rate: null }));
    }

    // The brokers, and the pipeline's partitions under-replicated or without a leader.
    let kafkaClusterError: string | undefined;
    const kafkaCluster = up.get("kafka")
      ? await readCluster(admin, TOPICS.map((t) => t.name), new Map(), endpoints.kafkaBrokers).then(clusterHealth, (err: unknown) => ((kafkaClusterError = messageOf(err)), null))
      : null;

    const letters: DeadLetter[] = [];
    const serde = new Serde({ registryUrl: endpoints.registryUrl });
    let deadLettersError: string | undefined;
    if (up.get("kafka") && up.get("schema registry")) {
      // A broker of a cluster lost (its partitions moving) can fail the read: said, not thrown.
      await readRange(kafka, { topics: [{ topic: "oz0.dead-letter", from: since }], groupPrefix: "oz0.doctor", maxMs: 30_000 }, async (_t, _p, message) => {
        const letter = await serde.decode<DeadLetter>("DeadLetter", message.value).catch(() => undefined);
        if (letter && letter.ts >= since) letters.push(letter);
      }).catch((err: unknown) => (deadLettersError = messageOf(err)));
    }

    let looping: DoctorReport["looping"] = null;
    if (up.get("redis")) {
      const config = up.get("kafka") && up.get("schema registry") ? await ConfigTable.start(kafka, serde, log).catch(() => null) : null;
      try {
        looping = { days: opts.days, min_tenants: opts.minTenants, tools: await loopReport(redis, new Keys(), { days: opts.days, minTenants: opts.minTenants, config: config ?? undefined }) };
      } finally {
        await config?.stop();
      }
    }
    return { at, since, services, processors, dead_letters: deadLetterRows(letters), looping, kafkajs: kafkajsPatches(), kafka_cluster: kafkaCluster, ...(kafkaClusterError !== undefined ? { kafka_cluster_error: kafkaClusterError } : {}), ...(deadLettersError !== undefined ? { dead_letters_error: deadLettersError } : {}) };
  } finally {
    await admin.disconnect().catch(() => undefined);
    redis.disconnect();
  }
}
