/**
 * An input topic (one partition unless told more) and an output topic of one partition for a
 * transport test on the broker, an idempotent producer of inputs, and a read-committed reader
 * of the output that collects each value it sees (an answer shows only once its transaction
 * commits).
 */
import type { Admin, Consumer, Producer } from "kafkajs";
import { kafka } from "./kafka.ts";
import { uid } from "./events.ts";

export interface TransportTopics {
  readonly input: string;
  readonly output: string;
  readonly admin: Admin;
  readonly producer: Producer;
  /** The output's values as the read-committed reader saw them, in order. */
  readonly seen: string[];
  /** Sends one input under key "k". */
  readonly send: (value: string) => Promise<unknown>;
  /** Sends one input to a partition of the input topic. */
  readonly sendTo: (partition: number, value: string) => Promise<unknown>;
  readonly close: () => Promise<void>;
}

export async function transportTopics(name: string, inputPartitions = 1): Promise<TransportTopics> {
  const input = uid(`test.${name}.in`);
  const output = uid(`test.${name}.out`);
  const seen: string[] = [];
  const admin = kafka().admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: input, numPartitions: inputPartitions }, { topic: output, numPartitions: 1 }], waitForLeaders: true });
  const producer = kafka().producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const reader: Consumer = kafka().consumer({ groupId: uid(`${name}.reader`), readUncommitted: false, maxWaitTimeInMs: 200 });
  await reader.connect();
  await reader.subscribe({ topics: [output], fromBeginning: true });
  await reader.run({
    eachMessage: ({ message }) => {
      seen.push(message.value?.toString() ?? "");
      return Promise.resolve();
    },
  });
  return {
    input,
    output,
    admin,
    producer,
    seen,
    send: (value) => producer.send({ topic: input, messages: [{ key: "k", value: Buffer.from(value) }] }),
    sendTo: (partition, value) => producer.send({ topic: input, messages: [{ partition, key: null, value: Buffer.from(value) }] }),
    close: async () => {
      await reader.disconnect();
      await producer.disconnect();
      await admin.deleteTopics({ topics: [input, output] }).catch(() => undefined);
      await admin.disconnect();
    },
  };
}
