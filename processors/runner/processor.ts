/**
 * What a processor is: a pure core that turns a batch of decoded inputs into outputs, one
 * outcome per input. The runner (Kafka) and the test driver (memory) both run it; neither the
 * core nor its tests know which.
 */
import { schema } from "../../schemas/catalog.ts";
import { Oz0Error } from "../../lib/errors.ts";
import { topic, type TopicName, TOPICS } from "../../topology/topics.ts";

export interface InputRecord<T> {
  readonly topic: string;
  readonly partition: number;
  /** Kafka offsets are 64-bit: kept as the decimal string Kafka gives. */
  readonly offset: string;
  readonly key: string | null;
  readonly value: T;
  readonly timestamp: string;
  /**
   * The offset of the first record of its partition in the batch this record came in. Every
   * offset before it was committed (a partition's next batch is handed out only after the last
   * one committed, and a failed one is fetched again from there), so Kafka never hands those
   * inputs out again. Left out where the source cannot say.
   */
  readonly batchStart?: string;
}

/** One output record: to a declared output topic, with a key and a value of that topic's schema. */
export interface Emit {
  readonly to: TopicName;
  readonly key: string;
  readonly value: unknown;
}

/**
 * What became of one input: its outputs (possibly none), or why it is dead-lettered: invalid
 * (the input is wrong), or, with `error: "failed"`, a step of it that a dependency refused for
 * good (`isolate.ts`: the store's words and the key).
 */
export type Outcome = { readonly emits: readonly Emit[] } | { readonly invalid: string; readonly error?: "failed" };

export interface Processor<In, Env = void> {
  /** Also the consumer group's name and the `processor` field of its outputs. */
  readonly name: string;
  readonly input: TopicName;
  readonly outputs: readonly TopicName[];
  /** Reasons an input is unusable though it decoded; none when it is fine. */
  validate?(value: In): string[];
  /**
   * A compacted input's tombstones (a null value: the key's row removed) reach the core as
   * records whose value is null, so `In` includes null. Left out, a tombstone is dead-lettered
   * as undecodable.
   */
  readonly readsTombstones?: boolean;
  /**
   * Decides a batch of inputs, in order, returning one outcome per input. May use `env`
   * (Redis scripts, the object store, the config table); throws a retriable error when one of
   * them fails for now, and the whole batch is tried again.
   */
  process(records: ReadonlyArray<InputRecord<In>>, env: Env): Promise<Outcome[]> | Outcome[];
}

export class TopologyError extends Oz0Error {
  constructor(message: string) {
    super(message);
    this.name = "TopologyError";
  }
}

/**
 * Checks a processor's wiring when it is defined, not when the first record arrives: its
 * topics are declared, and it does not write to its own input.
 */
export function defineProcessor<In, Env = void>(p: Processor<In, Env>): Processor<In, Env> {
  const known = new Set<string>(TOPICS.map((t) => t.name));
  for (const t of [p.input, ...p.outputs]) {
    if (!known.has(t)) throw new TopologyError(`processor ${p.name} names topic ${t}, which topology/topics.ts does not declare`);
  }
  if (p.outputs.includes(p.input)) throw new TopologyError(`processor ${p.name} writes to its own input ${p.input}`);
  schema(topic(p.input).schema);
  return p;
}

export function isInvalid(o: Outcome): o is Extract<Outcome, { invalid: string }> {
  return "invalid" in o;
}
