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
import { runBatch, type BatchResult, type Rejected } from "./batch.ts";
import { Oz0Error, isRetriable, messageOf } from "./errors.ts";
import { backoffMs, DEFAULT_RETRY, RetryWatch, type Episode, type Failing, type RetrySettings } from "./retry.ts";
import { deriveId } from "./ids.ts";
import type { Logger } from "./log.ts";
import { Histogram } from "../ops/metrics.ts";
import { outcomeKind } from "./outcomes.ts";
import type { Emit, InputRecord, Processor } from "./processor.ts";
import { capReason, deadLetterBytes, outputTooLarge } from "./record-size.ts";
import type { BatchContext, OutMessage, RawRecord, Transport } from "./transport.ts";
import { wiringOf, type Wiring } from "../../topology/wiring.ts";

export { inputsOf, wiringOf, type Wiring } from "../../topology/wiring.ts";

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
  /**
   * The topic its inputs are consumed from: its input, or, for a processor chained after the
   * writer of its input, the writer's (the group's lag is counted there).
   */
  readonly consumes: string;
  readonly stats: Readonly<RunnerStats>;
  /** Seconds from each input record's timestamp to the commit of its outputs. */
  readonly latency: Histogram;
  /** A batch failing past the retry bound (the processor is not ready while one is), or null. */
  failing(): Failing | null;
  /** Seconds the batch failing longest has been retrying; 0 when none is. */
  retryingSeconds(): number;
  stop(): Promise<void>;
}

export interface RunnerDeps {
  transport: Transport;
  serde: Serde;
  log: Logger;
  /** Longest pause between retries of a failing dependency (overrides `retry.maxBackoffMs`). */
  maxBackoffMs?: number;
  /** How failing batches are retried, and when the processor reports itself not ready. @default DEFAULT_RETRY */
  retry?: RetrySettings;
}

/** Pauses before another attempt at a batch; throws to give up (the processor is stopping). */
type Backoff = (ctx: BatchContext, err: unknown, attempt: number, episode: Episode, log: Logger) => Promise<void>;

class Stopping extends Oz0Error {
  constructor() {
    super("processor is stopping; the batch stays uncommitted and is handled again after restart", { retriable: true });
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
  readonly watch: RetryWatch;
  decide(raws: RawRecord[], decoded: ReadonlyArray<Decoded<unknown>>, ctx: BatchContext): Promise<Decided>;
}

/** A stage's outputs, encoded, and the emits of each input it answered (for a stage chained after it). */
interface Decided {
  readonly out: OutMessage[];
  readonly answered: BatchResult["answered"];
  readonly encoded: ReadonlyMap<Emit, Buffer>;
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

function makeStage<In, Env>(p: Processor<In, Env>, env: Env, deps: RunnerDeps, backoff: Backoff, watch: RetryWatch): Stage {
  const stats: RunnerStats = { in: 0, out: 0, deadLetters: 0, batches: 0, retries: 0, outcomes: {}, deadLetterErrors: {} };
  const latency = new Histogram();
  const log = deps.log.child({ processor: p.name });

  const decide = async (raws: RawRecord[], decoded: ReadonlyArray<Decoded<unknown>>, ctx: BatchContext): Promise<Decided> => {
    stats.in += decoded.length;
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
    const episode = watch.begin();
    let result: BatchResult;
    try {
      result = await runBatch(p, records, env, { onRetry: (err, attempt) => backoff(ctx, err, attempt, episode, log).finally(() => stats.retries++), checkEmit });
    } finally {
      recovered(episode, log);
    }
    await ctx.heartbeat();
    const out: OutMessage[] = result.emits.map((e) => {
      let value = encoded.get(e);
      if (value === undefined) encoded.set(e, (value = deps.serde.encodeChecked(topic(e.to).schema, e.value)));
      return { topic: e.to, key: e.key, value };
    });
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
    return { out, answered: result.answered, encoded };
  };
  return { running: { name: p.name, input: p.input, consumes: p.input, stats, latency, failing: () => watch.failing(), retryingSeconds: () => watch.retryingSeconds() }, decide, watch };
}

/** Ends a batch's retries; one that had failed past the bound says the dependency answers again. */
function recovered(episode: Episode, log: Logger): void {
  const was = episode.end();
  if (was) log.info("dependency answering again; the batch went through", { dependency: was.dependency, attempts: was.attempts, failedForS: Math.round((Date.now() - was.sinceMs) / 1000) });
}

/** A processor and the environment its core is given. */
export interface Member<In = unknown, Env = unknown> {
  readonly processor: Processor<In, Env>;
  readonly env: Env;
}

export interface RunningApplication {
  /** One a processor, in the order given. */
  readonly processors: RunningProcessor[];
  /** The topics the application reads: every processor's input, once, but those chained. */
  readonly topics: readonly string[];
  stop(): Promise<void>;
}

/**
 * Runs several processors as one application on one transport (one consumer group reading
 * every input once): a fetched batch is decoded once, with its topic's schema, and each
 * processor that reads the topic decides it; their outputs commit together with the batch's
 * offset, beside the other batches of the fetch (`commits.ts`). Processors of one topic decide
 * a batch at once, each on its own records.
 *
 * A processor whose input another member writes is chained after it (`wiringOf`): it decides
 * the writer's outputs to that topic, as a consumer of the topic would decode them, in the same
 * batch, and is not fed the topic from Kafka; the writer's outputs are still published, in the
 * same transaction, so whatever else reads the topic sees the same records. A chained input
 * keeps the position of the input it answers (its topic, partition and offset), one output a
 * input, so replays are known by it as they are for any input.
 *
 * With `anyTopic`, a single processor takes every batch whatever its topic is named (a bench or
 * a drill reads its input under a topic name of its own).
 */
export async function startApplication(members: readonly Member[], deps: RunnerDeps & { readonly anyTopic?: boolean }): Promise<RunningApplication> {
  const log = deps.log;
  const retry: RetrySettings = { ...(deps.retry ?? DEFAULT_RETRY), ...(deps.maxBackoffMs !== undefined ? { maxBackoffMs: deps.maxBackoffMs } : {}) };
  let stopping = false;
  // Retried for as long as it takes, so an outage loses nothing; past the bound the processor reports itself not ready.
  const backoff: Backoff = async (ctx, err, attempt, episode, plog) => {
    if (stopping || !ctx.isRunning()) throw new Stopping();
    const { crossed, state } = episode.failed(err, attempt);
    const wait = backoffMs(attempt, retry);
    if (crossed) {
      plog.error("dependency failing past the retry bound: the processor reports not ready and keeps retrying", { dependency: state.dependency, attempts: attempt, failingForS: Math.round((Date.now() - state.sinceMs) / 1000), error: messageOf(err), check: state.check });
    }
    plog.warn("dependency failed; retrying the batch", { dependency: state.dependency, attempt, waitMs: wait, error: messageOf(err) });
    await sleep(wait);
    await ctx.heartbeat();
  };
  const only = deps.anyTopic && members.length === 1 ? members[0] : undefined;
  if (deps.anyTopic && !only) throw new Error("anyTopic runs exactly one processor");
  const wiring: Wiring = only ? { topics: [only.processor.input], chained: new Map(), consumes: [only.processor.input] } : wiringOf(members);
  const stages = members.map((m, i) => {
    const s = makeStage(m.processor, m.env, deps, backoff, new RetryWatch(retry));
    return { ...s, running: { ...s.running, consumes: wiring.consumes[i] as string } };
  });
  const byTopic = new Map<string, number[]>();
  members.forEach((m, i) => {
    if (!wiring.topics.includes(m.processor.input)) return;
    const list = byTopic.get(m.processor.input) ?? [];
    list.push(i);
    byTopic.set(m.processor.input, list);
  });

  /** What member `i` decides of these records, then what each member chained after it decides of its outputs. */
  const decideChain = async (i: number, raws: RawRecord[], decoded: ReadonlyArray<Decoded<unknown>>, ctx: BatchContext): Promise<OutMessage[]> => {
    const d = await (stages[i] as Stage).decide(raws, decoded, ctx);
    const after = wiring.chained.get(i);
    if (!after) return d.out;
    const outs = [d.out];
    for (const c of after) {
      const schema = topic(c.topic as TopicName).schema;
      const fed: Decoded<unknown>[] = [];
      for (const { input, emits } of d.answered) {
        const to = emits.filter((e) => e.to === c.topic);
        if (to.length === 0) continue;
        if (to.length > 1) throw new Error(`${members[i]?.processor.name} emitted ${to.length} records to ${c.topic} for one input; a processor chained after it takes one an input`);
        const e = to[0] as Emit;
        // As a consumer of the topic would decode it: the writer's schema is this build's, known already.
        const value = deps.serde.decodeKnown<unknown>(schema, d.encoded.get(e) as Buffer);
        if (value === WRITER_NOT_KNOWN) throw new Error(`the schema ${schema} was not known when its own output was decoded`);
        fed.push({ record: { ...input, key: e.key, value } });
      }
      if (fed.length === 0) continue;
      outs.push(await decideChain(c.member, raws, fed, ctx));
    }
    return outs.flat();
  };

  const handle = async (raws: RawRecord[], ctx: BatchContext): Promise<OutMessage[]> => {
    const first = raws[0];
    if (!first) return [];
    const name = only ? only.processor.input : first.topic;
    const readers = only ? [0] : byTopic.get(name);
    if (!readers) throw new Error(`the application was handed a batch of ${first.topic}, which none of its processors reads`);
    // The registry failing holds every processor of the topic: each counts and reports it.
    const episodes = readers.map((r) => (stages[r] as Stage).watch.begin());
    let decoded: Decoded<unknown>[];
    try {
      decoded = await decodeBatch(raws, topic(name as TopicName).schema, deps.serde, ctx, async (c, err, attempt) => {
        for (const r of readers) ((stages[r] as Stage).running.stats as RunnerStats).retries++;
        for (const e of episodes.slice(1)) e.failed(err, attempt);
        await backoff(c, err, attempt, episodes[0] as Episode, log);
      });
    } finally {
      for (const e of episodes) recovered(e, log);
    }
    if (readers.length === 1) return decideChain(readers[0] as number, raws, decoded, ctx);
    const outs = await Promise.all(readers.map((r) => decideChain(r, raws, decoded, ctx)));
    return outs.flat();
  };

  await deps.transport.start(handle);
  log.info("processors started", { processors: members.map((m) => m.processor.name), inputs: wiring.topics });
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
    topics: wiring.topics,
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
  const app = await startApplication([{ processor: p, env }], { ...deps, anyTopic: true });
  return app.processors[0] as RunningProcessor;
}
