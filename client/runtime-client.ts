/**
 * The client an agent runtime embeds: publish what its agents do, and await the pipeline's
 * answer to each event, correlated by the event's ID, with a timeout that says what to check
 * when none comes.
 */
import { randomUUID } from "node:crypto";
import { Kafka, type Consumer, type Producer } from "kafkajs";
import { EXACTLY_ONCE_PRODUCER, kafkaConfig, type Endpoints } from "../processors/runner/endpoints.ts";
import { createLogger, type Logger } from "../processors/runner/log.ts";
import { Serde } from "../schemas/serde.ts";
import type { ResultDelivered, ToolCall, ToolResult } from "../schemas/types.ts";

export class NoAnswer extends Error {
  readonly retriable = true;
  constructor(message: string) {
    super(message);
    this.name = "NoAnswer";
  }
}

interface Waiter<T> {
  resolve(value: T): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

const DELIVERED = "oz0.results-delivered";

export class RuntimeClient {
  private readonly kafka: Kafka;
  private readonly producer: Producer;
  private readonly replies: Consumer;
  private readonly serde: Serde;
  private readonly group = `oz0.runtime.${randomUUID()}`;
  private readonly waiting = new Map<string, Waiter<ResultDelivered>>();
  /** Answers that came before anyone awaited them, kept briefly. */
  private readonly early = new Map<string, ResultDelivered>();

  private constructor(endpoints: Endpoints, log: Logger) {
    this.kafka = new Kafka(kafkaConfig(`oz0-runtime-${randomUUID().slice(0, 8)}`, endpoints, process.env, log));
    this.producer = this.kafka.producer(EXACTLY_ONCE_PRODUCER);
    this.replies = this.kafka.consumer({ groupId: this.group, readUncommitted: false });
    this.serde = new Serde({ registryUrl: endpoints.registryUrl });
  }

  /** Connects, registers the schemas and starts listening for answers from now on. */
  static async connect(endpoints: Endpoints, log: Logger = createLogger({ component: "runtime-client" })): Promise<RuntimeClient> {
    const client = new RuntimeClient(endpoints, log);
    await client.serde.registerAll();
    await client.producer.connect();
    await client.listen();
    return client;
  }

  private async listen(): Promise<void> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      // A fresh group starts at the topic's end: only answers to what this client sends next.
      const ends = await admin.fetchTopicOffsets(DELIVERED);
      await admin.setOffsets({ groupId: this.group, topic: DELIVERED, partitions: ends.map((p) => ({ partition: p.partition, offset: p.high })) });
    } finally {
      await admin.disconnect();
    }
    await this.replies.connect();
    await this.replies.subscribe({ topic: DELIVERED });
    let joined: () => void = () => {};
    const ready = new Promise<void>((resolve) => (joined = resolve));
    this.replies.on(this.replies.events.GROUP_JOIN, () => joined());
    await this.replies.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) {
          const d = await this.serde.decode<ResultDelivered>("ResultDelivered", m.value).catch(() => undefined);
          if (!d) continue;
          const w = this.waiting.get(d.input_id);
          if (w) {
            clearTimeout(w.timer);
            this.waiting.delete(d.input_id);
            w.resolve(d);
          } else if (this.early.size < 100_000) this.early.set(d.input_id, d);
        }
      },
    });
    await ready;
  }

  async publishToolCalls(calls: readonly ToolCall[]): Promise<void> {
    await this.producer.send({ topic: "oz0.tool-calls.requested", messages: calls.map((c) => ({ key: c.run_id, value: this.serde.encode("ToolCall", c) })) });
  }

  async publishToolResults(results: readonly ToolResult[]): Promise<void> {
    await this.producer.send({ topic: "oz0.tool-results", messages: results.map((r) => ({ key: r.run_id, value: this.serde.encode("ToolResult", r) })) });
  }

  /** What the model reads for a published tool result. */
  awaitDelivered(resultId: string, timeoutMs = 30_000): Promise<ResultDelivered> {
    const ready = this.early.get(resultId);
    if (ready) {
      this.early.delete(resultId);
      return Promise.resolve(ready);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(resultId);
        reject(new NoAnswer(`no answer to tool result ${resultId} on ${DELIVERED} within ${timeoutMs} ms: is the pipeline running (npm start), and is its fit-results group lagging?`));
      }, timeoutMs);
      this.waiting.set(resultId, { resolve, reject, timer });
    });
  }

  async close(): Promise<void> {
    for (const [id, w] of this.waiting) {
      clearTimeout(w.timer);
      w.reject(new NoAnswer(`the client closed before tool result ${id} was answered`));
    }
    this.waiting.clear();
    await this.replies.disconnect();
    await this.producer.disconnect();
  }
}
