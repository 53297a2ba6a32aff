/**
 * Runs one processor on Kafka: consume a batch, decode it, call the core, encode the outputs,
 * and commit outputs and offsets together. Undecodable or invalid input goes to the
 * dead-letter topic with its reason and original bytes; the processor keeps going.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { DecodeError, WRITER_NOT_KNOWN, type Serde } from "../../schemas/serde.ts";
import type { DeadLetter } from "../../schemas/types.ts";
import { topic } from "../../topology/topics.ts";
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

export async function startProcessor<In, Env>(p: Processor<In, Env>, env: Env, deps: RunnerDeps): Promise<RunningProcessor> {
  const stats: RunnerStats = { in: 0, out: 0, deadLetters: 0, batches: 0, retries: 0, outcomes: {}, deadLetterErrors: {} };
  const latency = new Histogram();
  const log = deps.log.child({ processor: p.name });
  const inputSchema = topic(p.input).schema;
  const maxBackoff = deps.maxBackoffMs ?? 10_000;
  let stopping = false;

  const backoff = async (ctx: BatchContext, err: unknown, attempt: number): Promise<void> => {
    stats.retries++;
    if (stopping || !ctx.isRunning()) throw new Stopping();
    const wait = Math.min(maxBackoff, 100 * 2 ** Math.min(attempt, 10));
    log.warn("dependency failed; retrying the batch", { attempt, waitMs: wait, error: messageOf(err) });
    await sleep(wait);
    await ctx.heartbeat();
  };

  const handle = async (raws: RawRecord[], ctx: BatchContext): Promise<OutMessage[]> => {
    stats.in += raws.length;
    stats.batches++;
    const byOffset = new Map(raws.map((r) => [r.offset, r]));
    // The first offset of each partition in the batch: every offset before it was committed.
    const starts = new Map<string, string>();
    for (const raw of raws) {
      const source = `${raw.topic}:${raw.partition}`;
      if (!starts.has(source)) starts.set(source, raw.offset);
    }
    const records: InputRecord<In>[] = [];
    const rejected: Rejected[] = [];
    for (const [i, raw] of raws.entries()) {
      // A long batch keeps the instance in its group (kafkajs sends at most one heartbeat per interval).
      if (i % 500 === 499) await ctx.heartbeat();
      const batchStart = starts.get(`${raw.topic}:${raw.partition}`);
      if (raw.value === null && p.readsTombstones) {
        records.push({ topic: raw.topic, partition: raw.partition, offset: raw.offset, key: raw.key?.toString("utf8") ?? null, value: null as In, timestamp: raw.timestamp, batchStart });
        continue;
      }
      for (let attempt = 1; ; attempt++) {
        try {
          // Without waiting when the writer's schema is known, as it is for all but a schema's first message.
          const known = deps.serde.decodeKnown<In>(inputSchema, raw.value);
          const value = known === WRITER_NOT_KNOWN ? await deps.serde.decode<In>(inputSchema, raw.value) : known;
          records.push({ topic: raw.topic, partition: raw.partition, offset: raw.offset, key: raw.key?.toString("utf8") ?? null, value, timestamp: raw.timestamp, batchStart });
          break;
        } catch (err) {
          if (err instanceof DecodeError) {
            rejected.push({ topic: raw.topic, partition: raw.partition, offset: raw.offset, error: err.kind, reason: err.message });
            break;
          }
          if (!isRetriable(err)) throw err;
          await backoff(ctx, err, attempt);
        }
      }
    }
    // Each output is encoded once, when its size is checked: one too large for its topic dead-letters its input.
    const encoded = new Map<Emit, Buffer>();
    const checkEmit = (e: Emit): string | undefined => {
      const value = deps.serde.encodeChecked(topic(e.to).schema, e.value);
      encoded.set(e, value);
      return outputTooLarge(e, value);
    };
    await ctx.heartbeat();
    const result = await runBatch(p, records, env, { onRetry: (err, attempt) => backoff(ctx, err, attempt), checkEmit });
    await ctx.heartbeat();
    const out: OutMessage[] = result.emits.map((e) => ({ topic: e.to, key: e.key, value: encoded.get(e) ?? deps.serde.encodeChecked(topic(e.to).schema, e.value) }));
    for (const r of [...rejected, ...result.rejected]) {
      const raw = byOffset.get(r.offset);
      if (!raw) continue;
      log.warn("input dead-lettered", { topic: raw.topic, partition: raw.partition, offset: raw.offset, error: r.error, reason: capReason(r.reason) });
      out.push({ topic: DEAD_LETTER_TOPIC, key: `${raw.topic}/${raw.partition}/${raw.offset}`, value: deps.serde.encode("DeadLetter", deadLetter(p.name, raw, r)) });
      stats.deadLetters++;
      stats.deadLetterErrors[r.error] = (stats.deadLetterErrors[r.error] ?? 0) + 1;
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

  await deps.transport.start(handle);
  log.info("processor started", { input: p.input, outputs: p.outputs });
  return {
    name: p.name,
    input: p.input,
    stats,
    latency,
    stop: async () => {
      stopping = true;
      await deps.transport.stop();
      log.info("processor stopped", { ...stats });
    },
  };
}
