/**
 * Runs a declared topology whole in memory, with no broker and no registry (as Kafka Streams'
 * `TopologyTestDriver` does): each application is started with the runner's own
 * `startApplication` on an in-memory `Transport`, so records are encoded, decoded, chained,
 * dead-lettered and committed by the same code as on Kafka. Topics are in-memory logs,
 * partitioned by key as Kafka's default partitioner does; an application reads what another
 * writes (the sinks read the deciders' outputs, loop-approvals reads what the loop-deadlines
 * punctuator writes). Time is a virtual clock: `advance(ms)` moves it and fires the
 * punctuators given in memory at the new time.
 *
 * A processor runs when the test gives its environment (memory stores where the domain has
 * them: `MemoryLoopStore`, `memoryLimitsStore`); the others are left out of their application
 * (`absent`), which is wired without them.
 */
import { Partitioners, type PartitionMetadata } from "kafkajs";
import { schema, type SchemaName } from "../schemas/catalog.ts";
import { Serde } from "../schemas/serde.ts";
import type { Decision, DeadLetter } from "../schemas/types.ts";
import type { PublishAnswers } from "../processors/loops/deadlines.ts";
import { sweepDeadlines } from "../processors/loops/deadlines.ts";
import type { LoopStore } from "../processors/loops/store.ts";
import { createLogger, type Logger } from "../processors/runner/log.ts";
import type { Emit } from "../processors/runner/processor.ts";
import { DEFAULT_RETRY } from "../processors/runner/retry.ts";
import { DEAD_LETTER_TOPIC, startApplication, type RunningApplication } from "../processors/runner/runner.ts";
import type { BatchHandler, OutMessage, RawRecord, Transport } from "../processors/runner/transport.ts";
import { PIPELINE_TOPOLOGY, type PipelineTopology } from "./pipeline.ts";
import { TOPICS, type TopicName, type TopicSpec } from "./topics.ts";

/** One tick of a punctuator at the virtual time `now`: what it publishes. */
export type MemoryPunctuator = (now: number) => Promise<readonly Emit[]>;

/** LOOP-5: the `loop-deadlines` punctuator over a loop store, as `startLoopDeadlines` runs it on Kafka. */
export function loopDeadlinesInMemory(store: LoopStore): MemoryPunctuator {
  return async (now) => {
    const out: Emit[] = [];
    const publish: PublishAnswers = (answers: Decision[]) => Promise.resolve(void out.push(...answers.map((a) => ({ to: "oz0.loop-approvals" as const, key: a.run_id ?? a.job_id, value: a }))));
    await sweepDeadlines(store, publish, now);
    return out;
  };
}

/** A Serde whose registry is a map in memory: IDs handed out at registration, as the registry does. */
export async function memorySerde(): Promise<Serde> {
  const serde = new Serde({ registryUrl: "http://registry.invalid" });
  const bySubject = new Map<string, number>();
  const registry = {
    register: (s: { schema: string }, o: { subject: string }) => {
      const key = `${o.subject}\n${s.schema}`;
      let id = bySubject.get(key);
      if (id === undefined) bySubject.set(key, (id = bySubject.size + 1));
      return Promise.resolve({ id });
    },
    getSchema: () => Promise.reject(Object.assign(new Error("not in the memory registry"), { status: 404 })),
  };
  (serde as unknown as { registry: unknown }).registry = registry;
  await serde.registerAll();
  return serde;
}

/** A record of an in-memory topic, decoded. */
export interface TopicRecord<T> {
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  readonly value: T;
}

interface Stored extends RawRecord {
  /** Position in the topic's whole log (every partition), to read back in publishing order. */
  readonly seq: number;
}

class MemoryTopic {
  readonly partitions: Stored[][];
  private seq = 0;
  readonly spec: TopicSpec;
  constructor(spec: TopicSpec) {
    this.spec = spec;
    this.partitions = Array.from({ length: spec.partitions }, () => []);
  }

  append(key: string | null, value: Buffer | null, partition: number, timestamp: number): void {
    const log = this.partitions[partition] as Stored[];
    log.push({ topic: this.spec.name, partition, offset: String(log.length), key: key === null ? null : Buffer.from(key), value, timestamp: String(timestamp), seq: this.seq++ });
  }

  all(): Stored[] {
    return this.partitions.flat().sort((a, b) => a.seq - b.seq);
  }
}

/** The in-memory transport of one application: hands each partition's unread records to the runner's handler. */
class MemoryTransport implements Transport {
  handler: BatchHandler | null = null;
  /** Next offset to read, by `topic:partition`. */
  readonly positions = new Map<string, number>();
  /** The topics the application consumes, as the runner wired it. */
  topics: readonly string[] = [];
  start(handler: BatchHandler): Promise<void> {
    this.handler = handler;
    return Promise.resolve();
  }
  stop(): Promise<void> {
    this.handler = null;
    return Promise.resolve();
  }
}

export interface AppTestDriverOptions {
  /** @default PIPELINE_TOPOLOGY */
  readonly topology?: PipelineTopology;
  /** The environment of each processor to run, by its name; the others are not run. */
  readonly envs: Readonly<Record<string, unknown>>;
  /** Punctuators run in memory at each `advance`, by their declared name. */
  readonly punctuators?: Readonly<Record<string, MemoryPunctuator>>;
  /** The virtual clock's start. @default Date.now() */
  readonly now?: number;
  readonly log?: Logger;
}

/** The longest chain of applications feeding one another that `run()` follows before it gives up. */
const MAX_ROUNDS = 100;

export class AppTestDriver {
  private clock: number;
  private readonly topics = new Map<string, MemoryTopic>();
  private readonly partitioner = Partitioners.DefaultPartitioner();
  /** Processors declared but not run (no environment given). */
  readonly absent: readonly string[];

  readonly serde: Serde;
  private readonly apps: ReadonlyArray<{ readonly name: string; readonly transport: MemoryTransport; readonly app: RunningApplication }>;
  private readonly punctuators: ReadonlyArray<readonly [string, MemoryPunctuator, readonly string[]]>;

  private constructor(
    serde: Serde,
    apps: ReadonlyArray<{ readonly name: string; readonly transport: MemoryTransport; readonly app: RunningApplication }>,
    punctuators: ReadonlyArray<readonly [string, MemoryPunctuator, readonly string[]]>,
    absent: readonly string[],
    now: number,
  ) {
    this.serde = serde;
    this.apps = apps;
    this.punctuators = punctuators;
    this.clock = now;
    this.absent = absent;
    for (const spec of TOPICS) this.topics.set(spec.name, new MemoryTopic(spec));
  }

  /** Starts every application of the topology that has a processor to run, in memory. */
  static async start(options: AppTestDriverOptions): Promise<AppTestDriver> {
    const topology = options.topology ?? PIPELINE_TOPOLOGY;
    const declared = new Set(topology.nodes.map((n) => n.processor.name));
    for (const name of Object.keys(options.envs)) if (!declared.has(name)) throw new Error(`an environment was given for ${name}, which the topology does not declare`);
    const punctuators: Array<readonly [string, MemoryPunctuator, readonly string[]]> = [];
    for (const [name, p] of Object.entries(options.punctuators ?? {})) {
      const decl = topology.applications.flatMap((a) => a.punctuators).find((x) => x.name === name);
      if (!decl) throw new Error(`a punctuator ${name} was given, which the topology does not declare`);
      punctuators.push([name, p, decl.writes]);
    }
    const serde = await memorySerde();
    const log = options.log ?? createLogger({ component: "app-test-driver" }, () => {});
    const apps: Array<{ name: string; transport: MemoryTransport; app: RunningApplication }> = [];
    for (const a of topology.applications) {
      const members = a.processors.filter((n) => n.processor.name in options.envs).map((n) => ({ processor: n.processor, env: options.envs[n.processor.name] }));
      if (members.length === 0) continue;
      // The runner wires the members as on Kafka: the same chaining, the same topics consumed.
      const transport = new MemoryTransport();
      const app = await startApplication(members, { transport, serde, log, retry: { ...DEFAULT_RETRY, maxBackoffMs: 1 } });
      transport.topics = app.topics;
      apps.push({ name: a.name, transport, app });
    }
    const absent = topology.nodes.map((n) => n.processor.name).filter((n) => !(n in options.envs));
    return new AppTestDriver(serde, apps, punctuators, absent, options.now ?? Date.now());
  }

  /** The virtual time, in milliseconds since the epoch. */
  now(): number {
    return this.clock;
  }

  private topic(name: string): MemoryTopic {
    const t = this.topics.get(name);
    if (!t) throw new Error(`no topic named ${name}`);
    return t;
  }

  private partitionOf(t: MemoryTopic, key: string | null): number {
    const partitionMetadata: PartitionMetadata[] = t.partitions.map((_, i) => ({ partitionErrorCode: 0, partitionId: i, leader: 0, replicas: [0], isr: [0] }));
    return this.partitioner({ topic: t.spec.name, partitionMetadata, message: { key, value: null } });
  }

  /** Publishes a value to a topic, encoded with the topic's schema, at the virtual time; not handled until `run()`. */
  publish(to: TopicName, key: string | null, value: unknown): void {
    const t = this.topic(to);
    this.append(t, key, this.serde.encode(t.spec.schema, value));
  }

  /** Publishes raw bytes (an undecodable record, a tombstone). */
  publishRaw(to: TopicName, key: string | null, value: Buffer | null): void {
    this.append(this.topic(to), key, value);
  }

  private append(t: MemoryTopic, key: string | null, value: Buffer | null): void {
    t.append(key, value, this.partitionOf(t, key), this.clock);
  }

  /** Publishes a value and runs every application until nothing is left to read. */
  async pipe(to: TopicName, key: string | null, value: unknown): Promise<void> {
    this.publish(to, key, value);
    await this.run();
  }

  /**
   * Hands every application each partition's unread records, a batch a partition, and appends
   * its outputs to their topics (the batch commits), until no application has anything left.
   */
  async run(): Promise<void> {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      let handled = 0;
      for (const { transport } of this.apps) {
        const handler = transport.handler;
        if (!handler) continue;
        for (const name of transport.topics) {
          const t = this.topic(name);
          for (const [partition, log] of t.partitions.entries()) {
            const at = `${name}:${partition}`;
            const from = transport.positions.get(at) ?? 0;
            if (from >= log.length) continue;
            const batch: RawRecord[] = log.slice(from).map(({ seq: _seq, ...r }) => r);
            const committed: Array<() => void> = [];
            const out = await handler(batch, { heartbeat: () => Promise.resolve(), isRunning: () => true, afterCommit: (fn) => void committed.push(fn) });
            for (const m of out) this.appendOut(m);
            transport.positions.set(at, from + batch.length);
            for (const fn of committed) fn();
            handled += batch.length;
          }
        }
      }
      if (handled === 0) return;
    }
    throw new Error(`the applications still had records to read after ${MAX_ROUNDS} rounds: a cycle between them?`);
  }

  private appendOut(m: OutMessage): void {
    this.append(this.topic(m.topic), m.key, m.value);
  }

  /**
   * Moves the virtual clock by `ms`, fires each punctuator given at the new time (publishing
   * what it gives, to topics it declares), and runs the applications.
   */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new Error(`the clock only moves forward (${ms} ms)`);
    this.clock += ms;
    for (const [name, tick, writes] of this.punctuators) {
      for (const e of await tick(this.clock)) {
        if (!writes.includes(e.to)) throw new Error(`punctuator ${name} published to ${e.to}, which it does not declare`);
        this.publish(e.to, e.key, e.value);
      }
    }
    await this.run();
  }

  /** Every record of a topic so far, decoded, in the order published. */
  async records<T>(from: TopicName): Promise<Array<TopicRecord<T>>> {
    const t = this.topic(from);
    const name: SchemaName = t.spec.schema;
    schema(name);
    return Promise.all(t.all().map(async (r) => ({ partition: r.partition, offset: Number(r.offset), key: r.key?.toString("utf8") ?? null, value: await this.serde.decode<T>(name, r.value) })));
  }

  /** The values of a topic so far, in the order published. */
  async read<T>(from: TopicName): Promise<T[]> {
    return (await this.records<T>(from)).map((r) => r.value);
  }

  async deadLetters(): Promise<DeadLetter[]> {
    return this.read<DeadLetter>(DEAD_LETTER_TOPIC);
  }

  /** The running processors (their stats), by application. */
  running(): Array<{ readonly application: string; readonly processors: RunningApplication["processors"] }> {
    return this.apps.map((a) => ({ application: a.name, processors: a.app.processors }));
  }

  async close(): Promise<void> {
    for (const a of this.apps) await a.app.stop();
  }
}
