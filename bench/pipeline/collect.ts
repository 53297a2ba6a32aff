/**
 * Reads a subject's outputs as a downstream consumer would (read committed, from the start)
 * and notes, for each input ID it answers, when the answer was first readable.
 */
import { randomUUID } from "node:crypto";
import type { Consumer, Kafka } from "kafkajs";
import type { SchemaName } from "../../schemas/catalog.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { DeadLetter } from "../../schemas/types.ts";

export interface OutputTopic {
  readonly topic: string;
  /** How to name the input an output answers: the schema to decode it with and the field. */
  readonly read: "input_id" | "id" | "dead_letter";
  readonly schema: SchemaName;
}

export class Collector {
  private readonly consumer: Consumer;
  private readonly serde: Serde;
  private readonly byTopic: Map<string, OutputTopic>;
  private readonly inputSchema: SchemaName;
  /** Input ID to when its first answer was read (ms since epoch). */
  readonly seen = new Map<string, number>();
  outputs = 0;
  deadLetters = 0;
  undecodable = 0;

  constructor(kafka: Kafka, serde: Serde, topics: readonly OutputTopic[], inputSchema: SchemaName) {
    this.consumer = kafka.consumer({ groupId: `bench.collector.${randomUUID()}`, readUncommitted: false, maxBytesPerPartition: 1_048_576, allowAutoTopicCreation: false });
    this.serde = serde;
    this.byTopic = new Map(topics.map((t) => [t.topic, t]));
    this.inputSchema = inputSchema;
  }

  /** Resolves once the consumer has joined its group and reads. */
  async start(timeoutMs = 30_000): Promise<void> {
    await this.consumer.connect();
    await this.consumer.subscribe({ topics: [...this.byTopic.keys()], fromBeginning: true });
    let joined: () => void = () => {};
    const ready = new Promise<void>((resolve) => (joined = resolve));
    const off = this.consumer.on(this.consumer.events.GROUP_JOIN, () => joined());
    await this.consumer.run({
      eachBatch: async ({ batch }) => {
        const now = Date.now();
        const spec = this.byTopic.get(batch.topic);
        if (!spec) return;
        for (const m of batch.messages) {
          this.outputs++;
          const id = await this.inputIdOf(spec, m.value);
          if (id !== undefined && !this.seen.has(id)) this.seen.set(id, now);
        }
      },
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the output reader did not join its group within ${timeoutMs} ms`)), timeoutMs)));
    try {
      await Promise.race([ready, timeout]);
    } finally {
      clearTimeout(timer);
      off();
    }
  }

  private async inputIdOf(spec: OutputTopic, value: Buffer | null): Promise<string | undefined> {
    try {
      if (spec.read === "dead_letter") {
        this.deadLetters++;
        const dl = await this.serde.decode<DeadLetter>("DeadLetter", value);
        return (await this.serde.decode<{ id: string }>(this.inputSchema, dl.value)).id;
      }
      const v = await this.serde.decode<{ id: string; input_id?: string }>(spec.schema, value);
      return spec.read === "input_id" ? v.input_id : v.id;
    } catch {
      this.undecodable++;
      return undefined;
    }
  }

  /**
   * Waits until every ID has been answered, or the time is up. Returns the time the last of
   * them was read, or undefined when some are still missing (then `missing` says how many).
   */
  async waitFor(ids: readonly string[], timeoutMs: number): Promise<{ last: number | undefined; missing: number }> {
    const until = Date.now() + timeoutMs;
    let i = 0;
    for (;;) {
      while (i < ids.length && this.seen.has(ids[i] as string)) i++;
      if (i === ids.length) break;
      if (Date.now() > until) return { last: undefined, missing: ids.filter((id) => !this.seen.has(id)).length };
      await new Promise((r) => setTimeout(r, 10));
    }
    let last = 0;
    for (const id of ids) last = Math.max(last, this.seen.get(id) ?? 0);
    return { last, missing: 0 };
  }

  stop(): Promise<void> {
    return this.consumer.disconnect();
  }
}
