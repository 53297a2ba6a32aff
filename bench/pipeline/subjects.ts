/**
 * What the pipeline benchmark runs, each on topics of its own: bare kafkajs passthroughs (one
 * `send` per batch; and the same in a transaction with `sendOffsets`, as the runner commits),
 * handling as many partitions at once as the runner does (`OZ0_PARTITIONS_CONCURRENTLY`),
 * the runner with a core that decodes and re-encodes each input unchanged, and a real
 * processor under the runner.
 *
 * The processors name the pipeline's fixed topics (`topology/topics.ts`), and the runner looks
 * their schemas up by those names. So they are run unchanged: the transport is told the bench
 * input topic (`KafkaTransport` takes it as an option), and `MappedTransport` renames each
 * output's topic (and the dead-letter topic) to the bench's after the runner has encoded it.
 */
import { randomUUID } from "node:crypto";
import { Partitioners, type Consumer, type Kafka, type Producer } from "kafkajs";
import { endpointsFromEnv, EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import { kafkaTransports } from "../../processors/runner/kafka-thread.ts";
import type { Logger } from "../../processors/runner/log.ts";
import type { Processor } from "../../processors/runner/processor.ts";
import { startProcessor } from "../../processors/runner/runner.ts";
import { concurrencyFromEnv, ProducerPool, type BatchHandler, type OutMessage, type Transport } from "../../processors/runner/transport.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { TopicName } from "../../topology/topics.ts";

export interface RunningSubject {
  /** When the subject was handed its first batch: the start of its throughput window. */
  firstBatchAt(): number | undefined;
  stop(): Promise<void>;
}

export interface SubjectContext {
  readonly kafka: Kafka;
  readonly serde: Serde;
  readonly log: Logger;
  readonly groupId: string;
  /** The bench input topic. */
  readonly input: string;
  /** Real topic name (as the runner emits it) to bench topic name; `"out"` for the passthroughs. */
  readonly outputs: ReadonlyMap<string, string>;
}

/** Consumer settings of the runner's transport, so the passthroughs read the way it does. */
function consumerOf(kafka: Kafka, groupId: string): Consumer {
  return kafka.consumer({ groupId, readUncommitted: false, sessionTimeout: 30_000, heartbeatInterval: 3_000, maxBytesPerPartition: 1_048_576, allowAutoTopicCreation: false });
}

function outTopic(ctx: SubjectContext): string {
  const out = ctx.outputs.get("out");
  if (!out) throw new Error("a passthrough needs an output topic named out");
  return out;
}

/** (a) A bare kafkajs eachBatch passthrough: no decoding, one `send` per batch, offsets auto-committed. */
export async function startPassthrough(ctx: SubjectContext): Promise<RunningSubject> {
  const out = outTopic(ctx);
  const consumer = consumerOf(ctx.kafka, ctx.groupId);
  const producer: Producer = ctx.kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
  let first: number | undefined;
  await producer.connect();
  await consumer.connect();
  await consumer.subscribe({ topic: ctx.input, fromBeginning: true });
  await consumer.run({
    partitionsConsumedConcurrently: concurrencyFromEnv(),
    eachBatch: async ({ batch }) => {
      first ??= Date.now();
      if (batch.messages.length === 0) return;
      await producer.send({ topic: out, messages: batch.messages.map((m) => ({ key: m.key, value: m.value })) });
    },
  });
  return {
    firstBatchAt: () => first,
    stop: async () => {
      await consumer.disconnect();
      await producer.disconnect();
    },
  };
}

/**
 * (a') The same in a Kafka transaction per batch, with the input offsets sent in it
 * (`sendOffsets`) and a read-committed consumer: what exactly-once costs, without the runner.
 */
export async function startTransactionalPassthrough(ctx: SubjectContext): Promise<RunningSubject> {
  const out = outTopic(ctx);
  const consumer = consumerOf(ctx.kafka, ctx.groupId);
  const concurrency = concurrencyFromEnv();
  const instance = `${ctx.groupId}.${randomUUID().slice(0, 8)}`;
  const pool = new ProducerPool(
    Array.from({ length: concurrency }, (_, i) => ctx.kafka.producer({ transactionalId: `${instance}.${i}`, ...EXACTLY_ONCE_PRODUCER, allowAutoTopicCreation: false })),
  );
  let first: number | undefined;
  await Promise.all(pool.all.map((p) => p.connect()));
  await consumer.connect();
  await consumer.subscribe({ topic: ctx.input, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: concurrency,
    eachBatch: async (payload) => {
      const { batch } = payload;
      first ??= Date.now();
      const last = batch.messages[batch.messages.length - 1]?.offset;
      if (last === undefined) return;
      const producer = await pool.take();
      const txn = await producer.transaction();
      try {
        await txn.send({ topic: out, messages: batch.messages.map((m) => ({ key: m.key, value: m.value })) });
        await txn.sendOffsets({ consumerGroupId: ctx.groupId, topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(last) + 1n).toString() }] }] });
        await txn.commit();
      } catch (err) {
        await txn.abort().catch(() => undefined);
        throw err;
      } finally {
        pool.give(producer);
      }
      payload.resolveOffset(last);
      await payload.heartbeat();
    },
  });
  return {
    firstBatchAt: () => first,
    stop: async () => {
      await consumer.disconnect();
      await Promise.all(pool.all.map((p) => p.disconnect()));
    },
  };
}

/**
 * A Transport that hands the runner's outputs on to `inner` with each topic renamed to the
 * bench's, and notes when the first batch arrived. Every topic the runner may write (its
 * outputs and the dead-letter topic) must be mapped; an unmapped one fails the batch loudly.
 */
export class MappedTransport implements Transport {
  private readonly inner: Transport;
  private readonly topics: ReadonlyMap<string, string>;
  first: number | undefined;

  constructor(inner: Transport, topics: ReadonlyMap<string, string>) {
    this.inner = inner;
    this.topics = topics;
  }

  start(handler: BatchHandler): Promise<void> {
    return this.inner.start(async (records, ctx) => {
      this.first ??= Date.now();
      const out = await handler(records, ctx);
      return out.map((m): OutMessage => {
        const to = this.topics.get(m.topic);
        if (to === undefined) throw new Error(`the bench maps no topic for ${m.topic}: add it to the subject's outputs`);
        return { ...m, topic: to };
      });
    });
  }

  stop(): Promise<void> {
    return this.inner.stop();
  }
}

/** (b)-(e) A processor under the real runner and transport, reading the bench input and writing the bench outputs. */
export async function startUnderRunner<In, Env>(ctx: SubjectContext, processor: Processor<In, Env>, env: Env): Promise<RunningSubject> {
  // As the pipeline runs it: the Kafka client in a thread of its own unless OZ0_KAFKA_THREAD=off.
  const transports = kafkaTransports({ clientId: `oz0-bench-${ctx.groupId}`, endpoints: endpointsFromEnv(), kafka: ctx.kafka, log: ctx.log });
  const transport = new MappedTransport(transports.transport({ groupId: ctx.groupId, topics: [ctx.input], fromBeginning: true }), ctx.outputs);
  const running = await startProcessor(processor, env, { transport, serde: ctx.serde, log: ctx.log });
  return {
    firstBatchAt: () => transport.first,
    stop: async () => {
      await running.stop();
      await transports.stop();
    },
  };
}

/**
 * (b) The trivial core: each input decoded, emitted unchanged and encoded again, in the
 * runner's transaction, with no state. Built without `defineProcessor`, which (rightly)
 * refuses a processor writing to its own input; here the output is renamed to a bench topic.
 */
export function identityProcessor<In>(input: TopicName): Processor<In> {
  return {
    name: `bench-identity-${input}`,
    input,
    outputs: [input],
    process: (records) => records.map((r) => ({ emits: [{ to: input, key: r.key ?? "", value: r.value }] })),
  };
}
