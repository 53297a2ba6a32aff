/**
 * The Kafka client in a thread of its own. kafkajs decodes every fetched record batch and
 * encodes every produce request in JavaScript: for a processor, as much CPU as the processor's
 * own work, and all of it on the thread that runs the processors. Here the consumers and the
 * transactional producers run in a worker thread (`kafka-thread-worker.ts`), one
 * `KafkaTransport` per processor as before, and each batch crosses to the main thread to be
 * decided (`thread-batches.ts`: its keys and values moved in one buffer), so the two threads
 * work on two cores at once. Nothing else changes: a batch's outputs and offsets still commit in
 * one transaction, after the processor answered it; an error the processor throws fails the
 * batch in the Kafka thread as it would in one thread.
 */
import type { Worker } from "node:worker_threads";
import type { Endpoints } from "./endpoints.ts";
import { isRetriable, messageOf } from "./errors.ts";
import type { Level, Logger } from "./log.ts";
import { wholeFromEnv, type Env } from "./settings.ts";
import { threadHeapFromEnv, workerWithHeap } from "./thread-heap.ts";
import { packOutputs, unpackRecords, type PackedOutputs, type PackedRecords } from "./thread-batches.ts";
import { kafkaTransport, type BatchHandler, type KafkaTransportOptions, type Transport } from "./transport.ts";
import { takingTurns, Turns, type TurnsOptions } from "./turns.ts";
import type { Kafka } from "kafkajs";

export interface ThreadError {
  readonly name: string;
  readonly message: string;
  readonly retriable: boolean;
}

type TransportOptions = Pick<KafkaTransportOptions, "groupId" | "topics" | "fromBeginning" | "concurrency" | "exactlyOnce" | "commitIntervalMs" | "minBytes" | "maxWaitMs" | "consumers">;

export type ToKafkaThread =
  | { readonly type: "open"; readonly id: number; readonly options: TransportOptions }
  | { readonly type: "answer"; readonly batch: number; readonly out?: PackedOutputs; readonly error?: ThreadError }
  | { readonly type: "close"; readonly id: number };

export type FromKafkaThread =
  | { readonly type: "opened" | "closed"; readonly id: number }
  | { readonly type: "failed"; readonly id: number; readonly error: string }
  | { readonly type: "batch"; readonly id: number; readonly batch: number; readonly records: PackedRecords }
  | { readonly type: "committed"; readonly id: number; readonly batch: number }
  | { readonly type: "log"; readonly level: Level; readonly msg: string; readonly fields: Record<string, unknown> };

/**
 * `OZ0_KAFKA_THREAD`: `on` (the default) runs the Kafka client in a thread of its own, `off`
 * in the processors' thread.
 */
export function kafkaThreadFromEnv(env: Env = process.env): boolean {
  const raw = (env.OZ0_KAFKA_THREAD ?? "").trim().toLowerCase();
  if (raw === "" || raw === "on" || raw === "1" || raw === "true") return true;
  if (raw === "off" || raw === "0" || raw === "false") return false;
  throw new Error(`OZ0_KAFKA_THREAD=${env.OZ0_KAFKA_THREAD} is neither on nor off`);
}

/** An application's own bound on its batches in hand, when it has one (`turns.ts`). */
export interface ApplicationTurns extends TurnsOptions {
  readonly atOnce: number;
}

/** Where a process's transports get their Kafka client: a thread of their own, or this one. */
export interface KafkaTransports {
  /**
   * An application's transport. In the Kafka thread its batches take turns, `turns.atOnce` at
   * once, or `OZ0_BATCHES_AT_ONCE`; in this thread, `turns` if given, else as they come.
   */
  transport(options: TransportOptions, turns?: ApplicationTurns): Transport;
  /** Ends the Kafka thread, if any, once every transport is stopped. */
  stop(): Promise<void>;
}

/**
 * The transports a process gives its processors: in a Kafka thread of its own, unless
 * `OZ0_KAFKA_THREAD=off`, then each a `KafkaTransport` on `kafka` in this thread. `onExit`
 * hears if the thread ends other than by `stop`.
 */
export function kafkaTransports(o: {
  readonly clientId: string;
  readonly endpoints: Endpoints;
  readonly kafka: Kafka;
  readonly log: Logger;
  readonly onExit?: (err: Error) => void;
  readonly env?: Env;
}): KafkaTransports {
  if (!kafkaThreadFromEnv(o.env)) {
    return {
      transport: (options, turns) => {
        const transport = kafkaTransport({ kafka: o.kafka, log: o.log, ...options });
        return turns ? takingTurns(transport, new Turns(turns.atOnce, turns)) : transport;
      },
      stop: () => Promise.resolve(),
    };
  }
  const thread = new KafkaThread(o.clientId, o.endpoints, o.log, o.onExit);
  return { transport: (options, turns) => thread.transport(options, turns), stop: () => thread.stop() };
}

/**
 * `OZ0_BATCHES_AT_ONCE` (default 16): how many of one application's batches the processors' thread
 * decides at once when the Kafka client runs in a thread of its own, unless the application
 * declares its own bound (the sinks'). The rest wait their turn, in the order they were fetched
 * (`turns.ts`). With a fetch's batches committed together (`commits.ts`), sixteen at a time keeps
 * many of a fetch's small batches waiting on Redis or MinIO at once.
 */
export const DEFAULT_BATCHES_AT_ONCE = 16;

export function batchesAtOnceFromEnv(env: Env = process.env): number {
  return wholeFromEnv(env, "OZ0_BATCHES_AT_ONCE", DEFAULT_BATCHES_AT_ONCE, 1, 64);
}

interface Opened {
  readonly handler: BatchHandler;
  /** This processor's batches, decided a few at a time in the order they came. */
  readonly turns: Turns;
  /** Batches answered, not yet known to be committed, by partition (a partition's batches come one at a time). */
  readonly pending: Map<number, { batch: number; fns: Array<() => void> }>;
  stopping: boolean;
}

export class KafkaThread {
  private readonly worker: Worker;
  private readonly log: Logger;
  private readonly opened = new Map<number, Opened>();
  private readonly calls = new Map<number, { resolve(): void; reject(err: Error): void }>();
  private nextId = 0;
  private exited: Error | null = null;
  private readonly atOnce = batchesAtOnceFromEnv();

  /** Starts the thread; `onExit` hears if it ends other than by `stop` (the processors can go on no longer). */
  constructor(clientId: string, endpoints: Endpoints, log: Logger, onExit: (err: Error) => void = () => undefined) {
    this.log = log.child({ component: "kafka-thread" });
    this.worker = workerWithHeap(new URL("./kafka-thread-boot.mjs", import.meta.url), { workerData: { clientId, endpoints }, execArgv: [] }, threadHeapFromEnv());
    this.worker.on("message", (m: FromKafkaThread) => this.onMessage(m));
    this.worker.on("error", (err) => this.log.error("the Kafka thread failed", { error: messageOf(err) }));
    this.worker.on("exit", (code) => {
      this.exited = new Error(`the Kafka thread exited with code ${code}`);
      for (const c of this.calls.values()) c.reject(this.exited);
      this.calls.clear();
      if (this.opened.size > 0) {
        this.log.error("the Kafka thread exited while processors ran on it", { code });
        onExit(this.exited);
      }
    });
  }

  /** A Transport whose Kafka client runs in this thread; its batches take `turns`, else this thread's. */
  transport(options: TransportOptions, turns?: ApplicationTurns): Transport {
    const id = this.nextId++;
    return {
      start: async (handler) => {
        this.opened.set(id, { handler, turns: new Turns(turns?.atOnce ?? this.atOnce, turns), pending: new Map(), stopping: false });
        await this.call(id, { type: "open", id, options });
      },
      stop: async () => {
        const o = this.opened.get(id);
        if (o) {
          o.stopping = true;
          // The batches still waiting (a sinks' fetch spread over its window) go at once.
          o.turns.hurry();
        }
        await this.call(id, { type: "close", id });
        this.opened.delete(id);
      },
    };
  }

  /** Ends the thread once every transport is stopped. */
  async stop(): Promise<void> {
    this.opened.clear();
    await this.worker.terminate();
  }

  private call(id: number, m: ToKafkaThread): Promise<void> {
    if (this.exited) return Promise.reject(this.exited);
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject });
      this.worker.postMessage(m);
    });
  }

  private onMessage(m: FromKafkaThread): void {
    if (m.type === "batch") {
      void this.decide(m.id, m.batch, m.records);
      return;
    }
    if (m.type === "log") {
      this.log[m.level](m.msg, m.fields);
      return;
    }
    if (m.type === "committed") {
      const o = this.opened.get(m.id);
      for (const [partition, p] of o?.pending ?? []) {
        if (p.batch !== m.batch) continue;
        o?.pending.delete(partition);
        for (const fn of p.fns) fn();
      }
      return;
    }
    const c = this.calls.get(m.id);
    this.calls.delete(m.id);
    if (m.type === "failed") c?.reject(new Error(m.error));
    else c?.resolve();
  }

  private decide(id: number, batch: number, packed: PackedRecords): Promise<void> {
    const o = this.opened.get(id);
    if (!o) {
      this.answerFailed(batch, new Error(`the Kafka thread handed over a batch for transport ${id}, which is not open`));
      return Promise.resolve();
    }
    // A batch handed over while the application stops waits for no spread either.
    return o.turns.run(() => this.decideNow(o, batch, packed), o.stopping);
  }

  private async decideNow(o: Opened, batch: number, packed: PackedRecords): Promise<void> {
    try {
      const records = unpackRecords(packed);
      // A partition's earlier batch not committed by now never will be: its latency is not observed.
      const fns: Array<() => void> = [];
      o.pending.set(packed.partition, { batch, fns });
      const out = await o.handler(records, {
        // The Kafka thread heartbeats every second while a batch is in hand, whatever this thread does.
        heartbeat: () => Promise.resolve(),
        isRunning: () => !o.stopping,
        afterCommit: (fn) => void fns.push(fn),
      });
      const packedOut = packOutputs(out);
      this.worker.postMessage({ type: "answer", batch, out: packedOut } satisfies ToKafkaThread, [packedOut.bytes]);
    } catch (err) {
      this.answerFailed(batch, err);
    }
  }

  private answerFailed(batch: number, err: unknown): void {
    const error: ThreadError = { name: err instanceof Error ? err.name : "Error", message: messageOf(err), retriable: isRetriable(err) };
    this.worker.postMessage({ type: "answer", batch, error } satisfies ToKafkaThread);
  }
}
