/**
 * Reads a subject's outputs as a downstream consumer would (read committed, from the start)
 * and notes, for each input ID it answers, when the answer was first readable.
 */
import { randomUUID } from "node:crypto";
import { Worker } from "node:worker_threads";
import type { Consumer, Kafka } from "kafkajs";
import type { Endpoints } from "../../processors/runner/endpoints.ts";
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

export type ToCollector =
  | { readonly type: "start"; readonly call: number; readonly topics: readonly OutputTopic[]; readonly inputSchema: SchemaName }
  | { readonly type: "wait"; readonly call: number; readonly ids: readonly string[]; readonly timeoutMs: number }
  | { readonly type: "stop"; readonly call: number };

export type FromCollector =
  | { readonly type: "done"; readonly call: number }
  | { readonly type: "failed"; readonly call: number; readonly error: string }
  | {
      readonly type: "waited";
      readonly call: number;
      readonly last: number | undefined;
      readonly missing: number;
      /** When each of the IDs waited for was first answered, for those that were. */
      readonly seen: ReadonlyArray<readonly [string, number]>;
      readonly outputs: number;
      readonly deadLetters: number;
    };

export interface Waited {
  /** When the last of the IDs was read, or undefined when some are still missing. */
  readonly last: number | undefined;
  readonly missing: number;
  readonly seen: ReadonlyMap<string, number>;
  /** Outputs and dead letters read so far, of every input. */
  readonly outputs: number;
  readonly deadLetters: number;
}

/**
 * A `Collector` in a worker thread of its own (`collect-thread.ts`), with a Kafka client of its
 * own: a downstream consumer reads the subject's outputs on another core, as it would in
 * another process, and its fetching and decoding take no time from the subject's thread.
 */
export class ThreadedCollector {
  private readonly worker: Worker;
  private readonly calls = new Map<number, { resolve(m: FromCollector): void; reject(err: Error): void }>();
  private nextCall = 0;
  private exited: Error | null = null;

  constructor(clientId: string, endpoints: Endpoints) {
    this.worker = new Worker(new URL("./collect-boot.mjs", import.meta.url), { workerData: { clientId, endpoints }, execArgv: [] });
    this.worker.on("message", (m: FromCollector) => {
      const c = this.calls.get(m.call);
      this.calls.delete(m.call);
      if (m.type === "failed") c?.reject(new Error(`the output reader failed: ${m.error}`));
      else c?.resolve(m);
    });
    this.worker.on("exit", (code) => {
      this.exited = new Error(`the output reader's thread exited with code ${code}`);
      for (const c of this.calls.values()) c.reject(this.exited);
      this.calls.clear();
    });
  }

  /** Resolves once the reader has joined its group and reads `topics`. */
  async start(topics: readonly OutputTopic[], inputSchema: SchemaName): Promise<void> {
    await this.call({ type: "start", call: this.nextCall++, topics, inputSchema });
  }

  /** Waits until every ID has been answered, or the time is up (`Collector.waitFor`). */
  async waitFor(ids: readonly string[], timeoutMs: number): Promise<Waited> {
    const m = await this.call({ type: "wait", call: this.nextCall++, ids, timeoutMs });
    if (m.type !== "waited") throw new Error(`the output reader answered a wait with ${m.type}`);
    return { last: m.last, missing: m.missing, seen: new Map(m.seen), outputs: m.outputs, deadLetters: m.deadLetters };
  }

  /** Stops the reader and ends its thread. */
  async stop(): Promise<void> {
    try {
      await this.call({ type: "stop", call: this.nextCall++ });
    } finally {
      await this.worker.terminate();
    }
  }

  private call(m: ToCollector): Promise<FromCollector> {
    if (this.exited) return Promise.reject(this.exited);
    return new Promise((resolve, reject) => {
      this.calls.set(m.call, { resolve, reject });
      this.worker.postMessage(m);
    });
  }
}
