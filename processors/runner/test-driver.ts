/**
 * Runs a processor's core in memory, with no broker: pipe inputs in, read outputs and dead
 * letters out. Inputs pass through their Avro schema both ways and outputs are checked against
 * theirs, as on Kafka, so a test here catches what the real runner would reject.
 */
import { schema, schemaViolations } from "../../schemas/catalog.ts";
import { topic, type TopicName } from "../../topology/topics.ts";
import { runBatch, type Rejected } from "./batch.ts";
import type { Emit, InputRecord, Processor } from "./processor.ts";

export interface PipeOptions {
  key?: string;
  partition?: number;
}

export class TestDriver<In, Env = void> {
  readonly processor: Processor<In, Env>;
  readonly env: Env;
  readonly emitted: Emit[] = [];
  readonly deadLetters: Rejected[] = [];
  private readonly offsets = new Map<number, number>();

  constructor(processor: Processor<In, Env>, env: Env) {
    this.processor = processor;
    this.env = env;
  }

  /** Pipes one batch of inputs (all to one partition) and returns what it produced. */
  async pipe(values: In | In[], opts: PipeOptions = {}): Promise<{ emits: Emit[]; rejected: Rejected[] }> {
    const list = Array.isArray(values) ? values : [values];
    const name = topic(this.processor.input).schema;
    const type = schema(name).type;
    const partition = opts.partition ?? 0;
    // Each pipe is a batch that commits: the next one starts after it.
    const batchStart = String(this.offsets.get(partition) ?? 0);
    const records: InputRecord<In>[] = list.map((v) => {
      const problems = schemaViolations(name, v);
      if (problems.length > 0) throw new Error(`test input does not fit ${name}: ${problems.join("; ")}`);
      const offset = this.offsets.get(partition) ?? 0;
      this.offsets.set(partition, offset + 1);
      return {
        topic: this.processor.input,
        partition,
        offset: String(offset),
        key: opts.key ?? null,
        value: type.fromBuffer(type.toBuffer(v)) as In,
        timestamp: String(Date.now()),
        batchStart,
      };
    });
    const result = await runBatch(this.processor, records, this.env);
    this.emitted.push(...result.emits);
    this.deadLetters.push(...result.rejected);
    return result;
  }

  /** Pipes a tombstone (a null value under `key`) to a processor that reads them. */
  async pipeTombstone(key: string | null, opts: PipeOptions = {}): Promise<{ emits: Emit[]; rejected: Rejected[] }> {
    if (!this.processor.readsTombstones) throw new Error(`processor ${this.processor.name} reads no tombstones: on Kafka one is dead-lettered as undecodable`);
    const partition = opts.partition ?? 0;
    const offset = this.offsets.get(partition) ?? 0;
    this.offsets.set(partition, offset + 1);
    const record: InputRecord<In> = { topic: this.processor.input, partition, offset: String(offset), key, value: null as In, timestamp: String(Date.now()) };
    const result = await runBatch(this.processor, [record], this.env);
    this.emitted.push(...result.emits);
    this.deadLetters.push(...result.rejected);
    return result;
  }

  /** Values emitted to one topic so far, in order. */
  read<T = unknown>(to: TopicName): T[] {
    return this.emitted.filter((e) => e.to === to).map((e) => e.value as T);
  }
}
