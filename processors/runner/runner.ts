/**
 * Runs one processor on Kafka: consume a batch, decode it, call the core, encode the outputs,
 * and commit outputs and offsets together. Undecodable or invalid input goes to the
 * dead-letter topic with its reason and original bytes; the processor keeps going.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { DecodeError, WRITER_NOT_KNOWN, type Serde } from "../../schemas/serde.ts";
import type { DeadLetter } from "../../schemas/types.ts";
import { topic, type TopicName } from "../../topology/topics.ts";
import type { SchemaName } from "../../schemas/catalog.ts";
import { runBatch, type Rejected } from "./batch.ts";
import { isRetriable, messageOf } from "./errors.ts";
import { deriveId } from "./ids.ts";
import type { Logger } from "./log.ts";
import { Histogram } from "./metrics.ts";
import { outcomeKind } from "./outcomes.ts";
import type { Emit, InputRecord, Processor } from "./processor.ts";
import { capReason, deadLetterBytes, outputTooLarge } from "./record-size.ts";
import type { BatchContext, OutMessage, RawRecord, Transport } from "./transport.ts";

export const DEAD_LETTER_TOPIC = "oz0.dead-letter";

export interface RunnerStats {
  in: number;
  out: number;
  deadLetters: number;
  batches: number;
  retries: number;
  /** Outputs by decision kind (`outcomes.ts`): verdicts, delivered, fitted, offloaded. */
  outcomes: Record<string, number>;
  /** Dead letters by error class. */
  deadLetterErrors: Record<string, number>;
}

export interface RunningProcessor {
  readonly name: string;
  readonly input: string;
  readonly stats: Readonly<RunnerStats>;
  /** Seconds from each input record's timestamp to the commit of its outputs. */
  readonly latency: Histogram;
  stop(): Promise<void>;
}

export interface RunnerDeps {
  transport: Transport;
  serde: Serde;
  log: Logger;
  /** Longest pause between retries of a failing dependency. */
  maxBackoffMs?: number;
}

class Stopping extends Error {
  readonly retriable = true;
  constructor() {
    super("processor is stopping; the batch stays uncommitted and is handled again after restart");
  }
}

function deadLetter(processor: string, raw: RawRecord, r: Pick<Rejected, "error" | "reason">): DeadLetter {
  // A huge input cannot go whole into the dead-letter topic: its first MiB does, with a note.
  const { key, value, reason } = deadLetterBytes(raw, r.reason);
  return {
    id: deriveId("dead-letter", raw.topic, raw.partition, raw.offset),
    processor,
    topic: raw.topic,
    partition: raw.partition,
    offset: raw.offset,
    key,
    value,
    reason,
    error: r.error,
    ts: Date.now(),
  };
}

/** An input record as decoded once for every processor that reads its topic, or why it is not usable. */
type Decoded<In> = { readonly record: InputRecord<In> } | { readonly tombstone: InputRecord<In>; readonly rejected: Rejected } | { readonly rejected: Rejected };

/** One processor's share of a batch: its stats, its latency, and how it decides the batch's records. */
interface Stage {
  readonly running: Omit<RunningProcessor, "stop">;
  decide(raws: RawRecord[], decoded: ReadonlyArray<Decoded<unknown>>, ctx: BatchContext): Promise<OutMessage[]>;
}

/**
 * Decodes a batch's records once, with the reader schema of its topic, for every processor
 * that reads it. A retriable failure (the registry cannot be reached) waits and tries again.
 */
async function decodeBatch<In>(raws: RawRecord[], schema: SchemaName, serde: Serde, ctx: BatchContext, backoff: (ctx: BatchContext, err: unknown, attempt: number) => Promise<void>): Promise<Decoded<In>[]> {
  // The first offset of each partition in the batch: every offset before it was committed.
  const starts = new Map<string, string>();
  for (const raw of raws) {
    const source = `${raw.topic}:${raw.partition}`;
    if (!starts.has(source)) starts.set(source, raw.offset);
  }
  const out: Decoded<In>[] = [];
  for (const [i, raw] of raws.entries()) {
    // A long batch keeps the instance in its group (kafkajs sends at most one heartbeat per interval).
    if (i % 500 === 499) await ctx.heartbeat();
    const batchStart = starts.get(`${raw.topic}:${raw.partition}`);
    const record = (value: In): InputRecord<In> => ({ topic: raw.topic, partition: raw.partition, offset: raw.offset, key: raw.key?.toString("utf8") ?? null, value, timestamp: raw.timestamp, batchStart });
    for (let attempt = 1; ; attempt++) {
      try {
        // Without waiting when the writer's schema is known, as it is for all but a schema's first message.
        const known = serde.decodeKnown<In>(schema, raw.value);
        const value = known === WRITER_NOT_KNOWN ? await serde.decode<In>(schema, raw.value) : known;
        out.push({ record: record(value) });
        break;
      } catch (err) {
        if (err instanceof DecodeError) {
          const rejected: Rejected = { topic: raw.topic, partition: raw.partition, offset: raw.offset, error: err.kind, reason: err.message };
          // A compacted topic's tombstone: a processor that reads tombstones takes it as a null value.
          out.push(raw.value === null ? { tombstone: record(null as In), rejected } : { rejected });
          break;
        }
        if (!isRetriable(err)) throw err;
        await backoff(ctx, err, attempt);
      }
    }
  }
  return out;
}

function makeStage<In, Env>(p: Processor<In, Env>, env: Env, deps: RunnerDeps, backoff: (ctx: BatchContext, err: unknown, attempt: number) => Promise<void>): Stage {
  const stats: RunnerStats = { in: 0, out: 0, deadLetters: 0, batches: 0, retries: 0, outcomes: {}, deadLetterErrors: {} };
  const latency = new Histogram();
  const log = deps.log.child({ processor: p.name });

  const decide = async (raws: RawRecord[], decoded: ReadonlyArray<Decoded<unknown>>, ctx: BatchContext): Promise<OutMessage[]> => {
    stats.in += raws.length;
    stats.batches++;
    const records: InputRecord<In>[] = [];
    const rejected: Rejected[] = [];
    for (const d of decoded as ReadonlyArray<Decoded<In>>) {
      if ("record" in d) records.push(d.record);
      else if ("tombstone" in d && p.readsTombstones) records.push(d.tombstone);
      else rejected.push(d.rejected);
    }
    // Each output is encoded once, when its size is checked: one too large for its topic dead-letters its input.
    const encoded = new Map<Emit, Buffer>();
    const checkEmit = (e: Emit): string | undefined => {
      const value = deps.serde.encodeChecked(topic(e.to).schema, e.value);
      encoded.set(e, value);
      return outputTooLarge(e, value);
    };
    await ctx.heartbeat();
    const result = await runBatch(p, records, env, { onRetry: (err, attempt) => backoff(ctx, err, attempt).finally(() => stats.retries++), checkEmit });
    await ctx.heartbeat();
    const out: OutMessage[] = result.emits.map((e) => ({ topic: e.to, key: e.key, value: encoded.get(e) ?? deps.serde.encodeChecked(topic(e.to).schema, e.value) }));
    const rejections = [...rejected, ...result.rejected];
    if (rejections.length > 0) {
      const byOffset = new Map(raws.map((r) => [r.offset, r]));
      for (const r of rejections) {
        const raw = byOffset.get(r.offset);
        if (!raw) continue;
        log.warn("input dead-lettered", { topic: raw.topic, partition: raw.partition, offset: raw.offset, error: r.error, reason: capReason(r.reason) });
        out.push({ topic: DEAD_LETTER_TOPIC, key: `${raw.topic}/${raw.partition}/${raw.offset}`, value: deps.serde.encode("DeadLetter", deadLetter(p.name, raw, r)) });
        stats.deadLetters++;
        stats.deadLetterErrors[r.error] = (stats.deadLetterErrors[r.error] ?? 0) + 1;
      }
    }
    stats.out += result.emits.length;
    for (const e of result.emits) {
      const kind = outcomeKind(e);
      if (kind) stats.outcomes[kind] = (stats.outcomes[kind] ?? 0) + 1;
    }
    const decided = (): void => {
      const now = Date.now();
      for (const raw of raws) latency.observe(Math.max(0, now - Number(raw.timestamp)) / 1000);
    };
    if (ctx.afterCommit) ctx.afterCommit(decided);
    else decided();
    return out;
  };
  return { running: { name: p.name, input: p.input, stats, latency }, decide };
}

/** A processor and the environment its core is given. */
export interface Member<In = unknown, Env = unknown> {
  readonly processor: Processor<In, Env>;
  readonly env: Env;
}

export interface RunningApplication {
  /** One a processor, in the order given. */
  readonly processors: RunningProcessor[];
  /** The topics the application reads: every processor's input, once. */
  readonly topics: readonly string[];
  stop(): Promise<void>;
}

/** The distinct inputs of these processors, in the order first named. */
export function inputsOf(members: ReadonlyArray<{ readonly processor: { readonly input: string } }>): string[] {
  return [...new Set(members.map((m) => m.processor.input))];
}

/**
 * Runs several processors as one application on one transport (one consumer group reading
 * every input once): a fetched batch is decoded once, with its topic's schema, and each
 * processor that reads the topic decides it; their outputs commit together with the batch's
 * offset, beside the other batches of the fetch (`commits.ts`). Processors of one topic decide
 * a batch at once, each on its own records: none sees another's outputs before they commit.
 * With `anyTopic`, a single processor takes every batch whatever its topic is named (a bench or
 * a drill reads its input under a topic name of its own).
 */
export async function startApplication(members: readonly Member[], deps: RunnerDeps & { readonly anyTopic?: boolean }): Promise<RunningApplication> {
  const log = deps.log;
  const maxBackoff = deps.maxBackoffMs ?? 10_000;
  let stopping = false;
  const backoff = async (ctx: BatchContext, err: unknown, attempt: number): Promise<void> => {
    if (stopping || !ctx.isRunning()) throw new Stopping();
    const wait = Math.min(maxBackoff, 100 * 2 ** Math.min(attempt, 10));
    log.warn("dependency failed; retrying the batch", { attempt, waitMs: wait, error: messageOf(err) });
    await sleep(wait);
    await ctx.heartbeat();
  };
  const stages = members.map((m) => makeStage(m.processor, m.env, deps, backoff));
  const byTopic = new Map<string, Stage[]>();
  members.forEach((m, i) => {
    const list = byTopic.get(m.processor.input) ?? [];
    list.push(stages[i] as Stage);
    byTopic.set(m.processor.input, list);
  });
  const only = deps.anyTopic && members.length === 1 ? members[0] : undefined;
  if (deps.anyTopic && !only) throw new Error("anyTopic runs exactly one processor");

  const handle = async (raws: RawRecord[], ctx: BatchContext): Promise<OutMessage[]> => {
    const first = raws[0];
    if (!first) return [];
    const name = only ? only.processor.input : first.topic;
    const readers = only ? stages : byTopic.get(name);
    if (!readers) throw new Error(`the application was handed a batch of ${first.topic}, which none of its processors reads`);
    const decoded = await decodeBatch(raws, topic(name as TopicName).schema, deps.serde, ctx, (c, err, attempt) => {
      for (const s of readers) (s.running.stats as RunnerStats).retries++;
      return backoff(c, err, attempt);
    });
    if (readers.length === 1) return (readers[0] as Stage).decide(raws, decoded, ctx);
    const outs = await Promise.all(readers.map((s) => s.decide(raws, decoded, ctx)));
    return outs.flat();
  };

  await deps.transport.start(handle);
  const topics = inputsOf(members);
  log.info("processors started", { processors: members.map((m) => m.processor.name), inputs: topics });
  const running = stages.map(
    (s): RunningProcessor => ({
      ...s.running,
      // Every processor of the application stops with it.
      stop: () => app.stop(),
    }),
  );
  let stopped: Promise<void> | null = null;
  const app: RunningApplication = {
    processors: running,
    topics,
    stop: () => {
      stopped ??= (async () => {
        stopping = true;
        await deps.transport.stop();
        for (const s of stages) log.info("processor stopped", { processor: s.running.name, ...s.running.stats });
      })();
      return stopped;
    },
  };
  return app;
}

/** Runs one processor on its transport: an application of one, reading whatever topic the transport hands it. */
export async function startProcessor<In, Env>(p: Processor<In, Env>, env: Env, deps: RunnerDeps): Promise<RunningProcessor> {
  const app = await startApplication([{ processor: p as Processor<unknown, unknown>, env }], { ...deps, anyTopic: true });
  return app.processors[0] as RunningProcessor;
}
