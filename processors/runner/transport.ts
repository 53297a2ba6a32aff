/**
 * The runner's one seam to Kafka: consume batches, produce a batch with the input offsets in
 * one transaction. kafkajs sits behind it today; another client can take its place without
 * touching a processor.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Admin, Consumer, EachBatchPayload, Kafka, Producer, Transaction } from "kafkajs";
import { EXACTLY_ONCE_PRODUCER } from "./endpoints.ts";
import type { Logger } from "./log.ts";
import { Commits, landedIn, offsetsOf, type BatchAt, type Handed } from "./commits.ts";
import { wholeFromEnv, type Env } from "./settings.ts";

export interface RawRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: string;
}

export interface OutMessage {
  readonly topic: string;
  readonly key: string | null;
  readonly value: Buffer | null;
}

export interface BatchContext {
  heartbeat(): Promise<void>;
  isRunning(): boolean;
  /** Runs `fn` once the batch's outputs and offsets are committed (decision latency ends there). */
  afterCommit?(fn: () => void): void;
}

export type BatchHandler = (records: RawRecord[], ctx: BatchContext) => Promise<OutMessage[]>;

export interface Transport {
  /** Starts consuming; resolves once the consumer is running. */
  start(handler: BatchHandler): Promise<void>;
  /** Finishes the batch in hand, commits it, and disconnects. */
  stop(): Promise<void>;
}

/**
 * Outputs go to the broker in sends of at most this many bytes, so the record batch of a
 * partition stays under the broker's limit even when outputs outweigh their inputs (a batch
 * of 1 MiB of results can answer with more). One larger record goes alone.
 */
export const MAX_SEND_BYTES = 768 * 1024;

/** How often a batch in hand heartbeats (kafkajs sends at most one per `heartbeatInterval`). */
const HEARTBEAT_EVERY_MS = 1_000;

/** Splits messages, in order, into runs whose keys and values add up to at most `cap` bytes. */
export function chunks(messages: readonly OutMessage[], cap: number): OutMessage[][] {
  const out: OutMessage[][] = [];
  let current: OutMessage[] = [];
  let size = 0;
  for (const m of messages) {
    const bytes = (m.value?.length ?? 0) + Buffer.byteLength(m.key ?? "");
    if (current.length > 0 && size + bytes > cap) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(m);
    size += bytes;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** Messages grouped by topic, each topic's in order, as kafkajs's `sendBatch` takes them. */
export function topicMessages(messages: readonly OutMessage[]): Array<{ topic: string; messages: Array<{ key: string | null; value: Buffer | null }> }> {
  const byTopic = new Map<string, Array<{ key: string | null; value: Buffer | null }>>();
  for (const m of messages) {
    const list = byTopic.get(m.topic);
    if (list) list.push({ key: m.key, value: m.value });
    else byTopic.set(m.topic, [{ key: m.key, value: m.value }]);
  }
  return [...byTopic].map(([topic, list]) => ({ topic, messages: list }));
}

export interface KafkaTransportOptions {
  kafka: Kafka;
  groupId: string;
  /** The topics the group reads: one consumer fetches them all. */
  topics: readonly string[];
  log: Logger;
  /** Read a new group's input from the start (default) or only what arrives from now on. */
  fromBeginning?: boolean;
  /**
   * How many partitions' batches are handled at once. Records of one key stay on one
   * partition, so batches handled at once never share a run or a tree. Default
   * `OZ0_PARTITIONS_CONCURRENTLY`, else 64: every partition a fetch brings.
   */
  concurrency?: number;
  /**
   * `true` (the default): outputs and offsets of the batches handled together commit in one
   * Kafka transaction. `false`: for a consumer whose effects are idempotent (the sinks), its
   * outputs (dead letters) are sent, then its offsets committed, with no transaction.
   */
  exactlyOnce?: boolean;
  /** The longest a batch waits for the others before a commit goes without them. Default `OZ0_COMMIT_INTERVAL_MS`. */
  commitIntervalMs?: number;
  /** A fetch waits for this many bytes (up to `maxWaitMs`): bigger batches for a sink. @default 1 */
  minBytes?: number;
  /** @default 5000 (kafkajs's) */
  maxWaitMs?: number;
  /**
   * Consumers of the group in this instance, each with its own fetches, commits and
   * transactional producer (Kafka Streams' stream threads): the group's partitions are split
   * between them, so one's slow batch (a result offloaded to a slow store) does not hold up
   * the others' fetches, and one commits while another fetches; each makes its own
   * transactions, so more consumers make more of them for the same events. Default
   * `OZ0_CONSUMERS`, else 1 (`topology/pipeline.ts` says which groups read it).
   */
  consumers?: number;
  /** Which of an instance's consumers this is; names its transactional ID. @default 0 */
  index?: number;
}

/** `OZ0_CONSUMERS`: consumers a group has in each instance (1 to 16, else `fallback`). */
export function consumersFromEnv(env: Env = process.env, fallback = 1): number {
  return wholeFromEnv(env, "OZ0_CONSUMERS", fallback, 1, 16);
}

/** The transport of `opts`: one consumer, or several of one group that share the handler. */
export function kafkaTransport(opts: KafkaTransportOptions): Transport {
  const n = opts.consumers ?? consumersFromEnv();
  if (n === 1) return new KafkaTransport(opts);
  const all = Array.from({ length: n }, (_, index) => new KafkaTransport({ ...opts, index, consumers: 1 }));
  return {
    start: async (handler) => {
      await Promise.all(all.map((t) => t.start(handler)));
    },
    stop: async () => {
      await Promise.all(all.map((t) => t.stop()));
    },
  };
}

export const DEFAULT_CONCURRENCY = 64;

/**
 * How long an open transaction may stay open before the broker aborts it. A read-committed
 * consumer cannot read past an open transaction, so after a crash this bounds how long the
 * outputs of the partitions it wrote stall, unless a restart under the same instance ID
 * (`OZ0_INSTANCE_ID`) aborts it at once. A batch must commit within it.
 */
export const TRANSACTION_TIMEOUT_MS = 20_000;

export interface InstanceSettings {
  /** Names this instance's transactional IDs; stable across restarts when given. */
  readonly instanceId: string | null;
  readonly sessionTimeoutMs: number;
}

/**
 * `OZ0_INSTANCE_ID`: a stable name of this instance (a pod's name), unique among the running
 * instances of the pipeline. With it, a restarted instance takes the same transactional IDs,
 * which fences its predecessor and aborts the transactions it left open at once. Without it,
 * each start takes new IDs, and a crashed instance's open transactions are aborted by the
 * broker after TRANSACTION_TIMEOUT_MS. `OZ0_KAFKA_SESSION_TIMEOUT_MS` (default 30 s, at least
 * the broker's 6 s minimum): how soon a crashed instance's partitions go to the others.
 */
export function instanceFromEnv(env: Env = process.env): InstanceSettings {
  const id = env.OZ0_INSTANCE_ID?.trim() || null;
  if (id !== null && !/^[A-Za-z0-9_.-]{1,100}$/.test(id)) throw new Error(`OZ0_INSTANCE_ID=${id} may hold only letters, digits, '_', '.' and '-' (at most 100)`);
  return { instanceId: id, sessionTimeoutMs: wholeFromEnv(env, "OZ0_KAFKA_SESSION_TIMEOUT_MS", 30_000, 6_000, 300_000, "milliseconds") };
}

/** The concurrency from the environment: a whole number from 1 to 256, else the default. */
export function concurrencyFromEnv(env: Env = process.env): number {
  return wholeFromEnv(env, "OZ0_PARTITIONS_CONCURRENTLY", DEFAULT_CONCURRENCY, 1, 256);
}

/**
 * `OZ0_COMMIT_INTERVAL_MS` (default 100, as Kafka Streams' `commit.interval.ms` under
 * exactly-once): the longest a batch's outputs wait for the other batches of its fetch before
 * a commit goes without them. A commit goes at once when no batch is still being handled.
 */
export const DEFAULT_COMMIT_INTERVAL_MS = 100;

export function commitIntervalFromEnv(env: Env = process.env): number {
  return wholeFromEnv(env, "OZ0_COMMIT_INTERVAL_MS", DEFAULT_COMMIT_INTERVAL_MS, 1, 60_000, "milliseconds");
}

/** Outputs waiting past this many bytes commit at once, whatever else is still being handled. */
export const COMMIT_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Transactional producers handed out one per batch in hand: a producer has at most one open
 * transaction, so batches handled at once each need their own.
 */
export class ProducerPool<T = Producer> {
  private readonly idle: T[] = [];
  private readonly waiting: Array<(p: T) => void> = [];
  readonly all: readonly T[];

  constructor(producers: T[]) {
    this.all = producers;
    this.idle.push(...producers);
  }

  async take(): Promise<T> {
    const p = this.idle.pop();
    if (p) return p;
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  give(p: T): void {
    const next = this.waiting.shift();
    if (next) next(p);
    else this.idle.push(p);
  }
}

/**
 * One transactional producer of the pool, renewed after a failed transaction: a producer whose
 * broker went away mid-transaction can be left unable to begin another (its abort never
 * reached the broker). A fresh producer under the same transactional ID fences the old one's
 * epoch and aborts what it left open when it connects.
 */
export class TransactionalSlot {
  private readonly make: () => Producer;
  private current: Producer;
  private connected = false;

  constructor(make: () => Producer) {
    this.make = make;
    this.current = make();
  }

  /** The producer, connected (connecting again after a renewal; throws while the broker is away). */
  async producer(): Promise<Producer> {
    if (!this.connected) {
      await this.current.connect();
      this.connected = true;
    }
    return this.current;
  }

  async renew(): Promise<void> {
    const old = this.current;
    this.current = this.make();
    this.connected = false;
    await old.disconnect().catch(() => undefined);
  }

  async disconnect(): Promise<void> {
    this.connected = false;
    await this.current.disconnect();
  }
}


const sameBatch = (a: BatchAt, b: BatchAt): boolean => a.topic === b.topic && a.partition === b.partition && a.last === b.last;
const batchKey = (b: BatchAt): string => `${b.topic}\u0000${b.partition}\u0000${b.last}`;

/** A transaction begun while a fetch's batches are being decided, their offsets already in it. */
interface Prepared {
  /** The batches whose offsets it holds: every batch of the fetch, as they were handed out. */
  readonly batches: readonly BatchAt[];
  /**
   * The transaction once the offsets are in it; null when they could not be sent and the
   * transaction was ended again (the batches commit in a transaction of their own); rejects when
   * it could not be ended either (the producer is renewed).
   */
  readonly txn: Promise<Transaction | null>;
  readonly begun: number;
}

/**
 * A transaction begun early is used only this soon after it began, well within
 * TRANSACTION_TIMEOUT_MS, after which the broker aborts it: a batch decided slowly (results
 * offloaded to a slow store) commits in a transaction of its own, begun when it is decided.
 */
const PREPARED_FOR_MS = 5_000;

/** How long whether a failed commit landed is asked while Kafka does not answer (a coordinator failing over). */
const IN_DOUBT_FOR_MS = 60_000;

/**
 * kafkajs transport: one consumer of the group reads every topic it is given, and hands each
 * fetched partition batch to the handler, every batch of a fetch at once. The outputs and
 * input offsets of the batches handled together commit in one Kafka transaction (`commits.ts`),
 * so a crash never shows a decision twice to a read-committed consumer. Effects outside Kafka
 * (Redis, MinIO) must be idempotent by input partition and offset, since a batch whose
 * transaction did not commit is handled again. Without exactly-once (`exactlyOnce: false`, the
 * sinks), outputs are sent and the offsets committed after them, with no transaction.
 */
export class KafkaTransport implements Transport {
  private consumer: Consumer;
  private readonly makeConsumer: () => Consumer;
  private stopping = false;
  private readonly slot: TransactionalSlot;
  private readonly concurrency: number;
  private readonly opts: KafkaTransportOptions;
  private readonly exactlyOnce: boolean;
  private readonly commits: Commits;
  /** Batches in the handler now, by `batchKey`. */
  private readonly inHandler = new Map<string, BatchAt>();
  private prepared: Prepared | null = null;
  /** Transactions begun while their fetch's batches were decided: begun, then committed with them, or aborted. */
  readonly early = { begun: 0, used: 0, aborted: 0 };
  /**
   * Commits whose end was sent but not answered (the coordinator lost with it), settled by the
   * group's offsets: committed after all, not committed (handled again), or left unknown.
   */
  readonly inDoubt = { committed: 0, notCommitted: 0, unknown: 0 };
  private admin: Admin | null = null;

  constructor(opts: KafkaTransportOptions) {
    this.opts = opts;
    this.exactlyOnce = opts.exactlyOnce ?? true;
    const instance = instanceFromEnv();
    this.makeConsumer = () =>
      opts.kafka.consumer({
        groupId: opts.groupId,
        readUncommitted: false,
        sessionTimeout: instance.sessionTimeoutMs,
        heartbeatInterval: 3_000,
        maxBytesPerPartition: 1_048_576,
        minBytes: opts.minBytes ?? 1,
        maxWaitTimeInMs: opts.maxWaitMs ?? 5_000,
        allowAutoTopicCreation: false,
      });
    this.consumer = this.makeConsumer();
    this.concurrency = opts.concurrency ?? concurrencyFromEnv();
    // A transactional ID unique per instance, so instances of a group never fence each other;
    // stable across restarts when the instance is named (OZ0_INSTANCE_ID).
    const name = instance.instanceId ?? `${hostname()}.${process.pid}.${randomUUID().slice(0, 8)}`;
    this.slot = new TransactionalSlot(() =>
      opts.kafka.producer(
        this.exactlyOnce
          ? { transactionalId: `${opts.groupId}.${name}.${opts.index ?? 0}`, transactionTimeout: TRANSACTION_TIMEOUT_MS, ...EXACTLY_ONCE_PRODUCER, allowAutoTopicCreation: false }
          : { ...EXACTLY_ONCE_PRODUCER, allowAutoTopicCreation: false },
      ),
    );
    this.commits = new Commits({
      intervalMs: opts.commitIntervalMs ?? commitIntervalFromEnv(),
      maxBytes: COMMIT_MAX_BYTES,
      commit: (batches) => this.commitTogether(batches),
    });
  }

  async start(handler: BatchHandler): Promise<void> {
    await this.slot.producer();
    await this.run(this.consumer, handler);
  }

  /**
   * kafkajs restarts a crashed consumer itself only for some errors; after others (such as
   * "Failed to find group coordinator" once a restarted broker's retries ran out) the consumer
   * stays stopped while the process lives on. Such a consumer is replaced by a new one, after
   * a pause, until the transport is stopped.
   */
  private watchCrashes(consumer: Consumer, handler: BatchHandler): void {
    consumer.on(consumer.events.CRASH, (event) => {
      if (event.payload.restart || this.stopping) return;
      this.opts.log.error("the consumer crashed and kafkajs does not restart it; starting a new one in 5 s", { error: String(event.payload.error) });
      setTimeout(() => void this.replaceConsumer(consumer, handler), 5_000);
    });
  }

  private async replaceConsumer(crashed: Consumer, handler: BatchHandler): Promise<void> {
    if (this.stopping || this.consumer !== crashed) return;
    await crashed.disconnect().catch(() => undefined);
    const fresh = this.makeConsumer();
    this.consumer = fresh;
    try {
      await this.run(fresh, handler);
      this.opts.log.info("a new consumer runs in place of the crashed one");
    } catch (err) {
      this.opts.log.error("starting a new consumer failed; trying again in 5 s", { error: String(err) });
      setTimeout(() => void this.replaceConsumer(fresh, handler), 5_000);
    }
  }

  private async run(consumer: Consumer, handler: BatchHandler): Promise<void> {
    this.watchCrashes(consumer, handler);
    await consumer.connect();
    await consumer.subscribe({ topics: [...this.opts.topics], fromBeginning: this.opts.fromBeginning ?? true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.concurrency,
      eachBatch: async (payload) => {
        const { batch } = payload;
        const heartbeat = () => payload.heartbeat();
        const isRunning = () => payload.isRunning() && !payload.isStale();
        if (batch.messages.length === 0 || !isRunning()) return;
        const records: RawRecord[] = batch.messages.map((m) => ({
          topic: batch.topic,
          partition: batch.partition,
          offset: m.offset,
          key: m.key,
          value: m.value,
          timestamp: m.timestamp,
        }));
        const committed: Array<() => void> = [];
        // A batch can take longer than the session (results offloaded one by one to a slow
        // MinIO), and waits for the others of its fetch to commit: the instance keeps
        // heartbeating meanwhile, or the group would drop it, hand the partition on, and the
        // batch would start over there, again and again.
        const beat = setInterval(() => void heartbeat().catch(() => undefined), HEARTBEAT_EVERY_MS);
        let done: boolean;
        try {
          done = await this.handleBatch(handler, records, payload, committed, { heartbeat, isRunning });
        } finally {
          clearInterval(beat);
        }
        if (!done) return;
        for (const fn of committed) fn();
        await heartbeat();
      },
    });
  }

  /** Hands the batch to the handler and commits its outputs with its offsets beside the others'; false when it is not committed (stale). */
  private async handleBatch(
    handler: BatchHandler,
    records: RawRecord[],
    payload: EachBatchPayload,
    committed: Array<() => void>,
    ctx: { heartbeat(): Promise<void>; isRunning(): boolean },
  ): Promise<boolean> {
    const { batch } = payload;
    const last = batch.messages[batch.messages.length - 1]?.offset ?? batch.lastOffset();
    const at: BatchAt = { topic: batch.topic, partition: batch.partition, last };
    const key = batchKey(at);
    this.commits.begin();
    this.inHandler.set(key, at);
    // Once the batches of this fetch are all handed out (kafkajs hands them out in one go),
    // their transaction begins while they are decided.
    if (this.exactlyOnce) setImmediate(() => this.prepare());
    let out: OutMessage[];
    try {
      out = await handler(records, { ...ctx, afterCommit: (fn) => void committed.push(fn) });
    } catch (err) {
      this.inHandler.delete(key);
      await this.dropPrepared(at);
      this.commits.abandon();
      throw err;
    } finally {
      this.inHandler.delete(key);
    }
    // The partition moved to another instance while the batch was in hand (a rebalance): its
    // new owner handles the batch again from the committed offset, so committing here would
    // only write its outputs twice.
    const done = await this.commits.hand({ ...at, out, isStale: () => payload.isStale() });
    if (done) payload.resolveOffset(last);
    else await this.dropPrepared(at);
    return done;
  }

  /**
   * While a fetch's batches are decided, and nothing else waits to commit, their transaction
   * begins and their offsets go into it (AddOffsetsToTxn, TxnOffsetCommit), so only the outputs
   * and the end of the transaction are left once they are decided: two of a commit's five
   * round trips in series move out of the time between an answer and the next fetch. The
   * offsets count only if the transaction commits, with the outputs, as when they are sent
   * after them. It is used only by a commit of every one of those batches: when one fails,
   * moves to another member, or is left for a later commit (decided past the commit interval),
   * it is aborted and the batches commit in a transaction begun when they are decided.
   */
  private prepare(): void {
    if (this.stopping || this.prepared !== null || this.inHandler.size === 0 || !this.commits.quiet) return;
    const batches = [...this.inHandler.values()];
    const txn = (async () => {
      const producer = await this.slot.producer();
      const t = await producer.transaction();
      const topics = offsetsOf(batches.map((b) => ({ ...b, out: [], isStale: () => false })));
      try {
        // Begun right after the last transaction ended, the coordinator may still be writing its
        // markers and answer CONCURRENT_TRANSACTIONS for a moment: tried again, as kafkajs
        // tries a send again.
        for (let attempt = 0; ; attempt++) {
          try {
            await t.sendOffsets({ consumerGroupId: this.opts.groupId, topics });
            return t;
          } catch (err) {
            if ((err as { type?: string }).type !== "CONCURRENT_TRANSACTIONS" || attempt >= 6) throw err;
            await new Promise((resolve) => setTimeout(resolve, 5 * 2 ** attempt));
          }
        }
      } catch (err) {
        // Nothing is in the transaction yet, so aborting it sends nothing; the batches then
        // commit in a transaction begun when they are decided.
        this.opts.log.debug("a transaction begun early could not take its offsets; the batches commit in one of their own", { error: String(err) });
        await t.abort();
        return null;
      }
    })();
    txn.catch(() => undefined);
    this.prepared = { batches, txn, begun: Date.now() };
    this.early.begun++;
  }

  /** Aborts the transaction begun early for this batch's fetch, if any (the batch failed, or moved to another instance). */
  private async dropPrepared(at: BatchAt): Promise<void> {
    const p = this.prepared;
    if (p === null || !p.batches.some((b) => sameBatch(b, at))) return;
    this.prepared = null;
    await this.abortPrepared(p);
  }

  private async abortPrepared(p: Prepared): Promise<void> {
    this.early.aborted++;
    const txn = await p.txn.catch(() => undefined);
    if (txn === null) return;
    if (txn === undefined) {
      await this.slot.renew();
      return;
    }
    try {
      await txn.abort();
    } catch (err) {
      this.opts.log.warn("transaction abort failed", { error: String(err) });
      await this.slot.renew();
    }
  }

  /** The batches' outputs and the offsets after each one's last, in one transaction (or sent, then committed). */
  private async commitTogether(batches: readonly Handed[]): Promise<void> {
    const out = batches.flatMap((b) => b.out);
    const early = this.prepared;
    this.prepared = null;
    let ending = false;
    try {
      const producer = await this.slot.producer();
      if (!this.exactlyOnce) {
        const offsets = offsetsOf(batches);
        for (const chunk of chunks(out, MAX_SEND_BYTES)) await producer.sendBatch({ topicMessages: topicMessages(chunk) });
        await this.consumer.commitOffsets(offsets.flatMap((t) => t.partitions.map((p) => ({ topic: t.topic, partition: p.partition, offset: p.offset }))));
        return;
      }
      // The transaction begun early when every batch whose offset it holds is among these, else a
      // new one, any other begun early aborted first (a batch left for a later commit, such as a
      // slow one past the interval, would have its offset committed without its outputs).
      let rest: readonly Handed[] = batches;
      let txn: Transaction;
      const holdsOnly = early !== null && early.batches.every((e) => batches.some((b) => sameBatch(b, e)));
      const begunEarly = early !== null && holdsOnly && Date.now() - early.begun < PREPARED_FOR_MS ? await early.txn : null;
      if (early !== null && begunEarly !== null) {
        txn = begunEarly;
        this.early.used++;
        rest = batches.filter((b) => !early.batches.some((e) => sameBatch(e, b)));
      } else {
        if (early !== null) await this.abortPrepared(early);
        txn = await (await this.slot.producer()).transaction();
      }
      try {
        for (const chunk of chunks(out, MAX_SEND_BYTES)) await txn.sendBatch({ topicMessages: topicMessages(chunk) });
        if (rest.length > 0) await txn.sendOffsets({ consumerGroupId: this.opts.groupId, topics: offsetsOf(rest) });
        ending = true;
        await txn.commit();
      } catch (err) {
        await txn.abort().catch((e: unknown) => this.opts.log.warn("transaction abort failed", { error: String(e) }));
        throw err;
      }
    } catch (err) {
      // The batches are handled again (their effects are idempotent); the next transaction
      // starts on a fresh producer, whatever state this one was left in.
      await this.slot.renew();
      // A commit sent but not answered may have landed: handled again, its outputs would be
      // written twice. The group's offsets tell, once the transaction is completed.
      if (ending && (await this.landedAfterAll(batches, err))) return;
      throw err;
    }
  }

  /**
   * Whether the transaction of these batches, whose commit was sent but failed, committed after
   * all. The renewed producer's first transaction fences the failed one (InitProducerId under
   * the same transactional ID), and the coordinator answers that only once the failed one is
   * completed, committed or aborted; the group's committed offsets then say which. Asked again
   * while Kafka does not answer, for up to IN_DOUBT_FOR_MS: left unknown after that, the
   * batches are handled again, as before a commit could be in doubt.
   */
  private async landedAfterAll(batches: readonly Handed[], failure: unknown): Promise<boolean> {
    const until = Date.now() + IN_DOUBT_FOR_MS;
    for (let attempt = 0; ; attempt++) {
      try {
        const fence = await (await this.slot.producer()).transaction();
        await fence.abort();
        this.admin ??= this.opts.kafka.admin();
        await this.admin.connect();
        const fetched = await this.admin.fetchOffsets({ groupId: this.opts.groupId, topics: [...new Set(batches.map((b) => b.topic))] });
        const landed = landedIn(batches, fetched);
        if (landed === "all") {
          this.inDoubt.committed++;
          this.opts.log.warn("a commit that failed had landed: its batches are not handled again", { batches: batches.length, error: String(failure) });
          return true;
        }
        this.inDoubt.notCommitted++;
        this.opts.log.warn("a commit that failed did not land: its batches are handled again", { batches: batches.length, landed, error: String(failure) });
        return false;
      } catch (err) {
        await this.slot.renew();
        if (this.stopping || Date.now() >= until) {
          this.inDoubt.unknown++;
          this.opts.log.error("whether a failed commit landed is unknown: its batches are handled again and their outputs may be written twice", { batches: batches.length, error: String(err) });
          return false;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * 2 ** attempt)));
      }
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.consumer.disconnect();
    const early = this.prepared;
    this.prepared = null;
    if (early !== null) await this.abortPrepared(early);
    await this.slot.disconnect();
    await this.admin?.disconnect();
  }
}
