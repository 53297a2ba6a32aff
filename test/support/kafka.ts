/** Kafka helpers for integration tests: publish Avro events and collect decoded outputs. */
import { setGroupOffsets } from "../../topology/group-offsets.ts";
import { Kafka, logLevel, type Consumer, type Producer } from "kafkajs";
import { inject } from "vitest";
import type { SchemaName } from "../../schemas/catalog.ts";
import { DecodeError, Serde } from "../../schemas/serde.ts";
import { kafkaConfig } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { Processor } from "../../processors/runner/processor.ts";
import { startProcessor, type RunningProcessor } from "../../processors/runner/runner.ts";
import { KafkaTransport } from "../../processors/runner/transport.ts";
import { uid } from "./events.ts";

/**
 * How long a test's fetch waits when there is nothing to read (kafkajs's default is 5 s): a
 * consumer's disconnect, and so a processor's stop, waits for its fetch in flight to return, so
 * an idle one with the default took about 3.5 s to stop. A record that comes is read at once
 * either way (minBytes 1); only the idle wait is shorter.
 */
export const TEST_FETCH_WAIT_MS = 200;

export function endpoints() {
  return inject("endpoints");
}

export function kafka(clientId = uid("test")): Kafka {
  return new Kafka({ ...kafkaConfig(clientId, endpoints()), logLevel: logLevel.ERROR });
}

export async function serde(): Promise<Serde> {
  const s = new Serde({ registryUrl: endpoints().registryUrl });
  await s.registerAll();
  return s;
}

export async function publish(producer: Producer, topic: string, messages: Array<{ key: string; value: Buffer | null }>): Promise<void> {
  await producer.send({ topic, messages });
}

/**
 * Reads a topic from the start (committed records only) until `want` decoded values match,
 * or fails after `timeoutMs` saying how many it saw.
 */
export async function collect<T>(
  topic: string,
  schemaName: SchemaName,
  s: Serde,
  match: (v: T) => boolean,
  want: number,
  timeoutMs = 30_000,
  /** After `want` matched, keep reading this long so extra (duplicate) records show too. */
  settleMs = 0,
): Promise<T[]> {
  const consumer: Consumer = kafka().consumer({ groupId: uid("collect"), readUncommitted: false, maxWaitTimeInMs: TEST_FETCH_WAIT_MS });
  const found: T[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`collected ${found.length} of ${want} records from ${topic} within ${timeoutMs} ms`)), timeoutMs);
      consumer
        .run({
          eachMessage: async ({ message }) => {
            // Other tests put undecodable bytes on shared topics on purpose: not ours, skipped.
            const v = await s.decode<T>(schemaName, message.value).catch((err: unknown) => {
              if (err instanceof DecodeError) return undefined;
              throw err;
            });
            if (v === undefined || !match(v)) return;
            found.push(v);
            if (found.length === want) {
              clearTimeout(timer);
              setTimeout(resolve, settleMs);
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return found;
}

/** Commits a new group's offsets at the topic's current end, so it sees only what comes next. */
export async function groupAtEnd(groupId: string, topic: string): Promise<void> {
  const k = kafka();
  const admin = k.admin();
  await admin.connect();
  try {
    const ends = await admin.fetchTopicOffsets(topic);
    await setGroupOffsets(k, admin, groupId, [{ topic, partitions: ends.map((p) => ({ partition: p.partition, offset: p.high })) }]);
  } finally {
    await admin.disconnect();
  }
}

/**
 * Runs a processor on the real broker under a fresh consumer group that starts at its input's
 * current end, so a test sees the outcome of its own inputs only. A sink (no output topic)
 * commits without transactions, as the pipeline runs the sinks.
 */
export async function startOnKafka<In, Env>(p: Processor<In, Env>, env: Env, s: Serde, group = uid(p.name)): Promise<RunningProcessor> {
  await groupAtEnd(group, p.input);
  const log = createLogger({ test: p.name }, () => {});
  const transport = new KafkaTransport({ kafka: kafka(group), groupId: group, topics: [p.input], log, exactlyOnce: p.outputs.length > 0, maxWaitMs: TEST_FETCH_WAIT_MS });
  return startProcessor(p, env, { transport, serde: s, log });
}
