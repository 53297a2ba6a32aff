/** Kafka helpers for integration tests: publish Avro events and collect decoded outputs. */
import { Kafka, logLevel, type Consumer, type Producer } from "kafkajs";
import { inject } from "vitest";
import type { SchemaName } from "../../schemas/catalog.ts";
import { Serde } from "../../schemas/serde.ts";
import { kafkaConfig } from "../../processors/runner/endpoints.ts";
import { uid } from "./events.ts";

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
  const consumer: Consumer = kafka().consumer({ groupId: uid("collect"), readUncommitted: false });
  const found: T[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`collected ${found.length} of ${want} records from ${topic} within ${timeoutMs} ms`)), timeoutMs);
      consumer
        .run({
          eachMessage: async ({ message }) => {
            const v = await s.decode<T>(schemaName, message.value);
            if (!match(v)) return;
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
