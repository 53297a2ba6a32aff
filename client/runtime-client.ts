/**
 * The client an agent runtime embeds: publish what its agents do (tool calls and results,
 * model-call asks and usage, child asks and the job and wait lifecycle, oz.read_result calls),
 * and await the pipeline's answer to each event, correlated by the event's ID (the answer's
 * `input_id`), with a timeout that says what was awaited and what to check when none comes.
 *
 * | published to | awaited on | answer |
 * | --- | --- | --- |
 * | oz0.tool-calls.requested (ToolCall) | oz0.call-decisions | Decision: allow, wait, stop, refuse, report |
 * | oz0.tool-results (ToolResult) | oz0.results-delivered | ResultDelivered: what the model reads |
 * | oz0.model-calls (ModelCall ask) | oz0.admissions | Decision: allow, refuse, stop, wait |
 * | oz0.jobs (JobEvent child_ask) | oz0.admissions | Decision |
 * | oz0.tool-calls.requested (oz.read_result) | oz0.results-delivered | ResultDelivered |
 * | oz0.tool-calls.requested (ToolCall) | oz0.tool-calls | ToolCall: the call as decided (a filled-in budget, resolved files) |
 *
 * Usage reports, re-warms and the job and wait lifecycle are published without an answer to
 * await: their decisions (a crossed spend share, a wait too long) come on oz0.admissions
 * addressed to the job, for a runtime that listens (`onAdmission`).
 *
 * An input the pipeline dead-letters (oz0.dead-letter) is answered at once in its stead: a
 * refusal (reason code DeadLettered) with the dead letter's reason, a failed result for a result
 * or an oz.read_result call (client/dead-letters.ts). Nobody waits for its own timeout.
 */
import { randomUUID } from "node:crypto";
import kafkajs, { type Batch, type Consumer, type Kafka, type Producer } from "kafkajs";
import { EXACTLY_ONCE_PRODUCER, kafkaConfig, type Endpoints } from "../processors/runner/endpoints.ts";
import { Oz0Error } from "../lib/errors.ts";
import { createLogger, type Logger } from "../processors/runner/log.ts";
import type { SchemaName } from "../schemas/catalog.ts";
import { Serde } from "../schemas/serde.ts";
import type { CallOrigin, DeadLetter, Decision, JobEvent, ModelCall, ResultDelivered, ToolCall, ToolResult } from "../schemas/types.ts";
import type { TopicName } from "../topology/topics.ts";
import { Correlator } from "./correlator.ts";
import { answersOf, deadLetterDecision, deadLetterDelivered, DeadLettered, originalEvent, originalSchema } from "./dead-letters.ts";
import { READ_RESULT } from "./read-result.ts";

/** The answers a client can await, each on its topic, correlated by `input_id`. */
export const ANSWERS = {
  admission: { topic: "oz0.admissions", schema: "Decision", processors: "limits-model-calls and limits-jobs" },
  callDecision: { topic: "oz0.call-decisions", schema: "Decision", processors: "loop-calls (after budget-fill-in)" },
  delivered: { topic: "oz0.results-delivered", schema: "ResultDelivered", processors: "fit-results (tool results) and read-result (oz.read_result calls)" },
  /** The call as the pipeline decides it (FIT-15's budget, FILE-1's paths), by the call's own event ID. Not listened for unless asked. */
  decidedCall: { topic: "oz0.tool-calls", schema: "ToolCall", processors: "budget-fill-in" },
} as const satisfies Record<string, { topic: TopicName; schema: SchemaName; processors: string }>;

export type AnswerKind = keyof typeof ANSWERS;

interface AnswerOf {
  admission: Decision;
  callDecision: Decision;
  delivered: ResultDelivered;
  decidedCall: ToolCall;
}

/** The answers listened for unless a client says otherwise: each costs reading every record of its topic. */
export const DEFAULT_ANSWERS: readonly AnswerKind[] = ["admission", "callDecision", "delivered"];

/** No answer came in time, or the client closed first. Retriable: the pipeline may be behind. */
export class NoAnswer extends Oz0Error {
  declare readonly retriable: true;
  readonly awaited: AnswerKind;
  readonly topic: string;
  readonly inputId: string;
  readonly timeoutMs: number;

  /** `topic` is where the answer was awaited: the answer's own topic unless a stand-in for the pipeline names its. */
  constructor(awaited: AnswerKind, inputId: string, timeoutMs: number, message = noAnswerMessage(awaited, inputId, timeoutMs), topic: string = ANSWERS[awaited].topic) {
    super(message, { retriable: true });
    this.name = "NoAnswer";
    this.awaited = awaited;
    this.topic = topic;
    this.inputId = inputId;
    this.timeoutMs = timeoutMs;
  }
}

const WHAT: Record<AnswerKind, string> = {
  admission: "an admission or refusal",
  callDecision: "a call decision",
  delivered: "a delivered result",
  decidedCall: "the call as decided",
};

export function noAnswerMessage(awaited: AnswerKind, inputId: string, timeoutMs: number): string {
  const a = ANSWERS[awaited];
  return (
    `no answer: ${WHAT[awaited]} for event ${inputId} did not come on ${a.topic} within ${timeoutMs} ms. ` +
    `Check that the pipeline runs (npm start; GET /health/ready), that the event was published to the topic its kind goes to, ` +
    `and the consumer lag of ${a.processors} (GET /metrics, oz0_processor_consumer_lag); a dead letter on oz0.dead-letter names an event the pipeline could not use`
  );
}

export interface RuntimeClientOptions {
  log?: Logger;
  /** The answers to listen for; each costs reading every record of its topic. @default DEFAULT_ANSWERS (all but decidedCall) */
  listen?: readonly AnswerKind[];
  /** How long an await lasts unless told. @default 30000 */
  timeoutMs?: number;
  /** How long an answer that came before its await is kept. @default 120000 */
  keepMs?: number;
  /**
   * Take an answer as soon as the pipeline has written it, before its transaction commits
   * (the answers' topics are read uncommitted). A transaction that aborts is handled again,
   * and a replay answers the same input with the same answer under the same ID, so the first
   * copy of an answer is the one that counts and later copies are dropped by ID. This saves a
   * commit's round trips on every answer. `false` reads committed answers only.
   * @default true
   */
  answersBeforeCommit?: boolean;
  /**
   * Read oz0.dead-letter too, so an input the pipeline dead-letters is answered at once with a
   * refusal that gives the dead letter's reason, instead of waiting for the timeout. Only with
   * some answer listened for.
   * @default true
   */
  deadLetters?: boolean;
  /**
   * When the client starts reading its answers' topics: `connect` (before `connect` returns),
   * or `first-publish` (the first time it publishes, which then waits for its reply consumer to
   * join). Reading an answer topic means fetching and decoding every record of it, whoever it
   * answers: a client that may never be used (a gateway no agent calls yet) reads nothing until
   * it is, at the price of its first publish waiting for the join (the broker's
   * `group.initial.rebalance.delay.ms` and a round trip or two). Either way no answer to what it
   * publishes is missed: the topics' ends are read before the first publish.
   * @default "connect"
   */
  listenFrom?: "connect" | "first-publish";
}

/** Where the pipeline puts the inputs it could not use (processors/runner/runner.ts). */
export const DEAD_LETTER_TOPIC = "oz0.dead-letter";

/**
 * The IDs of the answers taken lately, so a second copy of one (an aborted transaction's,
 * then its replay's) is dropped. At most `max` are remembered; the oldest goes first.
 */
export class SeenIds {
  private readonly ids = new Set<string>();
  private readonly max: number;

  constructor(max = 100_000) {
    this.max = max;
  }

  /** True the first time `id` is offered (within the last `max`), false after. */
  first(id: string): boolean {
    if (this.ids.has(id)) return false;
    if (this.ids.size >= this.max) {
      const oldest = this.ids.values().next();
      if (!oldest.done) this.ids.delete(oldest.value);
    }
    this.ids.add(id);
    return true;
  }
}

/** Where and who of a call, the same on every call of a run. */
export interface CallContext {
  readonly tenant: string;
  readonly tree_id: string;
  readonly job_id: string;
  readonly run_id: string;
  readonly agent: string;
  readonly origin?: CallOrigin;
  readonly context_used?: number | null;
  readonly spend_share?: number | null;
}

/** The arguments of oz.read_result (OFF-6). */
export interface ReadResultArgs {
  readonly ref: string;
  readonly view?: "stub" | "summary" | "section" | "full";
  readonly section?: string;
  readonly range?: string;
  readonly query?: string;
  readonly budget?: number;
}

/** A call of oz.read_result as a ToolCall, with a fresh event ID and call ID unless given. */
export function readResultCall(ctx: CallContext, args: ReadResultArgs, ids: { id?: string; call_id?: string } = {}): ToolCall {
  return {
    id: ids.id ?? randomUUID(),
    tenant: ctx.tenant,
    tree_id: ctx.tree_id,
    job_id: ctx.job_id,
    run_id: ctx.run_id,
    call_id: ids.call_id ?? randomUUID(),
    agent: ctx.agent,
    ...READ_RESULT,
    arguments: JSON.stringify(args),
    origin: ctx.origin ?? "model",
    context_used: ctx.context_used ?? null,
    spend_share: ctx.spend_share ?? null,
    ts: Date.now(),
  };
}

/**
 * Deletes a consumer group of one reader (a client's replies, a trace scan) once it has left,
 * so short-lived readers leave no groups behind on the broker. A failure is only logged: the
 * broker drops an empty group's offsets after `offsets.retention.minutes` anyway.
 */
export async function deleteGroup(kafka: Kafka, group: string, log: Pick<Logger, "warn">): Promise<void> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    await admin.deleteGroups([group]);
  } catch (err) {
    log.warn("could not delete a reader's consumer group; the broker expires it later", { group, error: err instanceof Error ? err.message : String(err) });
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** The key each topic is partitioned by (topology/topics.ts), so a run's or a tree's events stay in order. */
const byRun = (e: { run_id: string }): string => e.run_id;
const byTree = (e: { tree_id: string }): string => e.tree_id;

export class RuntimeClient {
  private readonly kafka: Kafka;
  private readonly producer: Producer;
  private readonly replies: Consumer;
  private readonly serde: Serde;
  private readonly log: Logger;
  private readonly group = `oz0.runtime.${randomUUID()}`;
  private readonly listening: readonly AnswerKind[];
  private readonly deadLetters: boolean;
  private readonly timeoutMs: number;
  private readonly answers: { [K in AnswerKind]: Correlator<AnswerOf[K]> };
  private readonly admissionListeners = new Set<(d: Decision) => void>();
  private readonly callDecisionListeners = new Set<(d: Decision) => void>();
  private readonly seen = new SeenIds();
  /** Set once the client starts reading its answers: resolves once it reads them. */
  private listened: Promise<void> | null = null;

  private constructor(endpoints: Endpoints, opts: RuntimeClientOptions) {
    this.log = opts.log ?? createLogger({ component: "runtime-client" });
    this.kafka = new kafkajs.Kafka(kafkaConfig(`oz0-runtime-${randomUUID().slice(0, 8)}`, endpoints, process.env, this.log));
    this.producer = this.kafka.producer(EXACTLY_ONCE_PRODUCER);
    // A fetch with nothing to read waits up to a second, so close() (which waits for it) is quick.
    this.replies = this.kafka.consumer({ groupId: this.group, readUncommitted: opts.answersBeforeCommit ?? true, maxWaitTimeInMs: 1_000 });
    this.serde = new Serde({ registryUrl: endpoints.registryUrl });
    this.listening = [...new Set(opts.listen ?? DEFAULT_ANSWERS)];
    this.deadLetters = this.listening.length > 0 && (opts.deadLetters ?? true);
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    const keep = { keepMs: opts.keepMs };
    this.answers = { admission: new Correlator(keep), callDecision: new Correlator(keep), delivered: new Correlator(keep), decidedCall: new Correlator(keep) };
  }

  /** Connects, registers the schemas and listens for answers from now on. */
  static async connect(endpoints: Endpoints, opts: RuntimeClientOptions | Logger = {}): Promise<RuntimeClient> {
    const options: RuntimeClientOptions = "info" in opts ? { log: opts } : opts;
    const client = new RuntimeClient(endpoints, options);
    await client.serde.registerAll();
    await client.producer.connect();
    if ((options.listenFrom ?? "connect") === "connect") await client.startListening();
    return client;
  }

  /** Starts reading the answers once (a failed start is tried again by the next caller). */
  private startListening(): Promise<void> {
    if (this.listened === null) {
      this.listened = this.listen().catch(async (err: unknown) => {
        // Left as it was before the start, so the next publish tries again from the beginning.
        await this.replies.disconnect().catch(() => undefined);
        this.listened = null;
        throw new Error(`the runtime client could not start reading its answers: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      });
    }
    return this.listened;
  }

  /** Whether the client reads its answers yet (with `listenFrom: "first-publish"`, only once it has published). */
  get listeningNow(): boolean {
    return this.listened !== null;
  }

  private async listen(): Promise<void> {
    if (this.listening.length === 0) return;
    const topics: string[] = this.listening.map((k) => ANSWERS[k].topic);
    if (this.deadLetters) topics.push(DEAD_LETTER_TOPIC);
    const kindOf = new Map<string, AnswerKind>(this.listening.map((k) => [ANSWERS[k].topic, k]));
    // The client reads from each topic's end as it was before connect returned: only answers
    // to what it sends from then on, and none of those missed. The ends are read first and the
    // fresh group seeks to them at its first join, before its first fetch (the admin's
    // setOffsets would cost a consumer's join and a fetch's wait, seconds, per topic).
    const ends = new Map<string, Map<number, string>>();
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      for (const t of topics) ends.set(t, new Map((await admin.fetchTopicOffsets(t)).map((p) => [p.partition, p.high])));
    } finally {
      await admin.disconnect();
    }
    await this.replies.connect();
    await this.replies.subscribe({ topics, fromBeginning: false });
    let joined: () => void = () => {};
    const ready = new Promise<void>((resolve) => (joined = resolve));
    // The group commits no offsets: a commit after every batch is a round trip to the broker
    // before the next batch of the same fetch is read (an answer's second half waits for it) and
    // before the next fetch. The client keeps where it has read to (`ends`, from the ends read
    // above on), and seeks there at every join of the group: its first, and any later one (a
    // session lost) that would otherwise start again from the topics' ends and miss answers.
    this.replies.on(this.replies.events.GROUP_JOIN, ({ payload }) => {
      for (const [topic, partitions] of Object.entries(payload.memberAssignment)) {
        for (const partition of partitions) {
          const offset = ends.get(topic)?.get(partition);
          if (offset !== undefined) this.replies.seek({ topic, partition, offset });
        }
      }
      joined();
    });
    await this.replies.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        await this.takeBatch(batch, kindOf);
        ends.get(batch.topic)?.set(batch.partition, (BigInt(batch.lastOffset()) + 1n).toString());
      },
    });
    await ready;
  }

  private async takeBatch(batch: Batch, kindOf: ReadonlyMap<string, AnswerKind>): Promise<void> {
    if (batch.topic === DEAD_LETTER_TOPIC) {
      for (const m of batch.messages) await this.takeDeadLetter(m.value);
      return;
    }
    const kind = kindOf.get(batch.topic);
    if (!kind) return;
    for (const m of batch.messages) {
      const answer = await this.serde.decode<{ id: string; input_id?: string }>(ANSWERS[kind].schema, m.value).catch((err: unknown) => {
        this.log.debug("an answer did not decode; skipped", { topic: batch.topic, partition: batch.partition, offset: m.offset, error: err });
        return undefined;
      });
      if (!answer) continue;
      this.take(kind, answer);
    }
  }

  /**
   * A dead letter: its original decoded with the schema of the topic it came from, and the
   * event's awaits answered (a refusal, a failed result; the call as decided rejects with
   * DeadLettered). A dead letter whose original does not decode (the very reason it may be
   * one), or comes from a topic no runtime awaits an answer on, names no event: nothing to
   * answer, and it is only logged at debug level, since every client reads every dead letter.
   */
  private async takeDeadLetter(value: Buffer | null): Promise<void> {
    const dl = await this.serde.decode<DeadLetter>("DeadLetter", value).catch(() => undefined);
    if (!dl || !this.seen.first(`deadLetter:${dl.id}`)) return;
    const schema = originalSchema(dl.topic);
    if (schema === null || dl.value === null) return;
    const original = await this.serde.decode<unknown>(schema, dl.value).catch((err: unknown) => {
      this.log.debug("a dead letter's original does not decode; no await can be matched to it", { deadLetter: dl.id, topic: dl.topic, error: err instanceof Error ? err.message : String(err) });
      return undefined;
    });
    const e = originalEvent(original);
    if (e === null) return;
    for (const kind of answersOf(dl.topic, e)) {
      if (!this.listening.includes(kind)) continue;
      if (kind === "decidedCall") this.answers.decidedCall.cancel(e.id, new DeadLettered(dl, e));
      else if (kind === "delivered") this.answers.delivered.deliver(e.id, deadLetterDelivered(dl, e));
      else this.answers[kind].deliver(e.id, deadLetterDecision(dl, e));
    }
  }

  private take(kind: AnswerKind, answer: { id: string; input_id?: string }): void {
    // The call as decided keeps the event ID of the call it answers: correlated by it, and
    // its copies (an aborted transaction's, then its replay's) dropped by it too.
    if (kind === "decidedCall") {
      if (this.seen.first(`${kind}:${answer.id}`)) this.answers.decidedCall.deliver(answer.id, answer as ToolCall);
      return;
    }
    const inputId = answer.input_id ?? "";
    // A copy of an answer taken already (read before its commit, then its replay's): dropped.
    if (!this.seen.first(`${kind}:${answer.id}`)) return;
    if (kind === "admission") {
      const d = answer as Decision;
      for (const f of this.admissionListeners) f(d);
      this.answers.admission.deliver(inputId, d);
    } else if (kind === "callDecision") {
      const d = answer as Decision;
      for (const f of this.callDecisionListeners) f(d);
      this.answers.callDecision.deliver(inputId, d);
    }
    else this.answers.delivered.deliver(inputId, answer as ResultDelivered);
  }

  private async publish<T>(topic: TopicName, schema: SchemaName, key: (e: T) => string, events: readonly T[]): Promise<void> {
    if (events.length === 0) return;
    // Its answers are read from the topics' ends as they were before this publish.
    await this.startListening();
    await this.producer.send({ topic, messages: events.map((e) => ({ key: key(e), value: this.serde.encode(schema, e) })) });
  }

  private await<K extends AnswerKind>(kind: K, inputId: string, timeoutMs = this.timeoutMs): Promise<AnswerOf[K]> {
    if (!this.listening.includes(kind)) {
      return Promise.reject(new Error(`this client does not listen for ${ANSWERS[kind].topic}: connect with listen including "${kind}"`));
    }
    const c = this.answers[kind] as Correlator<AnswerOf[K]>;
    return c.wait(inputId, timeoutMs, () => new NoAnswer(kind, inputId, timeoutMs));
  }

  // Publishing, each to its topic under its key.

  /** Tool calls before they are made; the fill-in, the loop detector and oz.read_result read them. */
  publishToolCalls(calls: readonly ToolCall[]): Promise<void> {
    return this.publish("oz0.tool-calls.requested", "ToolCall", byRun, calls);
  }

  publishToolResults(results: readonly ToolResult[]): Promise<void> {
    return this.publish("oz0.tool-results", "ToolResult", byRun, results);
  }

  /** Asks before model calls, usage after them, prompt-cache re-warms. */
  publishModelCalls(calls: readonly ModelCall[]): Promise<void> {
    return this.publish("oz0.model-calls", "ModelCall", byTree, calls);
  }

  /** Child asks and the job and wait lifecycle (started, ended, wait_started, wait_ended). */
  publishJobEvents(events: readonly JobEvent[]): Promise<void> {
    return this.publish("oz0.jobs", "JobEvent", byTree, events);
  }

  // Awaiting the answer to one event, by its ID.

  /** The admission or refusal of a model-call ask or a child ask, on oz0.admissions. */
  awaitAdmission(eventId: string, timeoutMs?: number): Promise<Decision> {
    return this.await("admission", eventId, timeoutMs);
  }

  /** Whether a tool call goes ahead, on oz0.call-decisions. */
  awaitCallDecision(eventId: string, timeoutMs?: number): Promise<Decision> {
    return this.await("callDecision", eventId, timeoutMs);
  }

  /** What the model reads for a tool result or an oz.read_result call, on oz0.results-delivered. */
  awaitDelivered(eventId: string, timeoutMs?: number): Promise<ResultDelivered> {
    return this.await("delivered", eventId, timeoutMs);
  }

  // Publish and await in one step; the await is set before the publish, so no answer is missed.

  /** A model-call ask: may the call start? */
  async askModelCall(ask: ModelCall, timeoutMs?: number): Promise<Decision> {
    if (ask.kind !== "ask") throw new Error(`askModelCall takes a model call of kind ask; ${ask.id} is a ${ask.kind}: publish it with publishModelCalls`);
    return this.exchange("admission", ask.id, timeoutMs, () => this.publishModelCalls([ask]));
  }

  /** A child ask: may the child start? */
  async askChild(ask: JobEvent, timeoutMs?: number): Promise<Decision> {
    if (ask.kind !== "child_ask") throw new Error(`askChild takes a job event of kind child_ask; ${ask.id} is a ${ask.kind}: publish it with publishJobEvents`);
    return this.exchange("admission", ask.id, timeoutMs, () => this.publishJobEvents([ask]));
  }

  /** A tool call: may it go ahead? */
  async requestToolCall(call: ToolCall, timeoutMs?: number): Promise<Decision> {
    return this.exchange("callDecision", call.id, timeoutMs, () => this.publishToolCalls([call]));
  }

  /**
   * The call as the pipeline decided it, with the arguments the tool is to be called with (a
   * budget filled in, file arguments resolved), on oz0.tool-calls by the call's event ID. Needs
   * a client that listens for `decidedCall`; await it beside `requestToolCall`, whose decision
   * comes in the same transaction.
   */
  awaitDecidedCall(eventId: string, timeoutMs?: number): Promise<ToolCall> {
    return this.await("decidedCall", eventId, timeoutMs);
  }

  /** A tool result: what does the model read? */
  async deliverToolResult(result: ToolResult, timeoutMs?: number): Promise<ResultDelivered> {
    return this.exchange("delivered", result.id, timeoutMs, () => this.publishToolResults([result]));
  }

  /** An oz.read_result call (`readResultCall` builds one): what does the model read back? */
  async readResult(call: ToolCall, timeoutMs?: number): Promise<ResultDelivered> {
    if (call.plugin !== READ_RESULT.plugin || call.tool !== READ_RESULT.tool || call.function !== READ_RESULT.function) {
      throw new Error(`readResult takes a call of oz.read_result; ${call.id} calls ${call.plugin}/${call.tool}.${call.function}: use requestToolCall`);
    }
    return this.exchange("delivered", call.id, timeoutMs, () => this.publishToolCalls([call]));
  }

  /** Every decision on oz0.admissions as it comes, such as reports addressed to a runtime's jobs. Returns a function that stops it. */
  onAdmission(listener: (d: Decision) => void): () => void {
    this.admissionListeners.add(listener);
    return () => this.admissionListeners.delete(listener);
  }

  /**
   * Every decision on oz0.call-decisions as it comes, such as the one that settles a call that
   * waited for a person: that one answers the person's answer (its `input_id`), and names the
   * call by its `subject` (the call ID). Returns a function that stops it.
   */
  onCallDecision(listener: (d: Decision) => void): () => void {
    this.callDecisionListeners.add(listener);
    return () => this.callDecisionListeners.delete(listener);
  }

  private async exchange<K extends AnswerKind>(kind: K, eventId: string, timeoutMs: number | undefined, publish: () => Promise<void>): Promise<AnswerOf[K]> {
    // A client that starts reading at its first publish joins first: the join is not the answer's time.
    await this.startListening();
    const answer = this.await(kind, eventId, timeoutMs);
    // The await may time out while the publish is still under way: handled here so that is no
    // unhandled rejection; the caller still gets the rejection from the promise returned.
    answer.catch(() => undefined);
    try {
      await publish();
    } catch (err) {
      // Nothing was published: the await goes too, so the same event can be tried again.
      this.answers[kind].cancel(eventId, err instanceof Error ? err : new Error(String(err)));
      throw err;
    }
    return answer;
  }

  /** The consumer group this client reads its answers in; deleted when the client closes. */
  get replyGroup(): string {
    return this.group;
  }

  /** Rejects what is still awaited with NoAnswer, disconnects, and deletes the client's reply group. */
  async close(): Promise<void> {
    for (const kind of Object.keys(ANSWERS) as AnswerKind[]) {
      this.answers[kind].rejectAll((id) => new NoAnswer(kind, id, 0, `the client closed before ${WHAT[kind]} for event ${id} came on ${ANSWERS[kind].topic}`));
    }
    await this.replies.disconnect();
    await this.producer.disconnect();
    if (this.listening.length > 0 && this.listened !== null) await deleteGroup(this.kafka, this.group, this.log);
  }
}
