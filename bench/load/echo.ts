/**
 * The baseline's side of the load: a LoadTarget that publishes each event, Avro-encoded as the
 * runtime client does (same producer settings, same keys), to the input topic of a bare kafkajs
 * passthrough (bench/pipeline/subjects.ts), and takes the event's copy on the passthrough's
 * output topic as its answer. So the same runtimes play the same plan against the same broker,
 * and every exchange's latency has a floor to be compared with.
 *
 * The answer is always `allow` and every result reads as sent: the passthrough decides
 * nothing, so the runtimes play every step of every tree.
 */
import { randomUUID } from "node:crypto";
import type { Consumer, Kafka, Producer } from "kafkajs";
import { Correlator } from "../../client/correlator.ts";
import { NoAnswer, type AnswerKind } from "../../client/runtime-client.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import type { SchemaName } from "../../schemas/catalog.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { Decision, JobEvent, ModelCall, ResultDelivered, ToolCall, ToolResult } from "../../schemas/types.ts";
import type { LoadTarget } from "./play.ts";

/**
 * The event ID of an Avro event in the Confluent wire format whose first field is its `id`
 * string (every event a runtime publishes): magic byte, 4-byte schema ID, then the string as a
 * zig-zag varint length and UTF-8 bytes. Undefined when the bytes are not that.
 */
export function leadingId(value: Buffer | null): string | undefined {
  if (!value || value.length < 6 || value[0] !== 0) return undefined;
  let shift = 0;
  let zigzag = 0;
  let i = 5;
  for (;;) {
    const b = value[i++];
    if (b === undefined || shift > 28) return undefined;
    zigzag |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) break;
    shift += 7;
  }
  const length = (zigzag >>> 1) ^ -(zigzag & 1);
  if (length < 0 || i + length > value.length) return undefined;
  return value.toString("utf8", i, i + length);
}

interface Echo {
  readonly id: string;
}

export class EchoTarget implements LoadTarget {
  private readonly producer: Producer;
  private readonly consumer: Consumer;
  private readonly serde: Serde;
  private readonly input: string;
  private readonly output: string;
  private readonly echoes = new Correlator<Echo>();

  constructor(kafka: Kafka, serde: Serde, topics: { input: string; output: string }) {
    this.producer = kafka.producer(EXACTLY_ONCE_PRODUCER);
    this.consumer = kafka.consumer({ groupId: `load.echo.${randomUUID()}`, readUncommitted: false, allowAutoTopicCreation: false });
    this.serde = serde;
    this.input = topics.input;
    this.output = topics.output;
  }

  /** Connects and reads the output topic from its start (a fresh topic of this run). */
  async start(): Promise<void> {
    await this.producer.connect();
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.output, fromBeginning: true });
    await this.consumer.run({
      eachBatch: ({ batch }) => {
        for (const m of batch.messages) {
          const id = leadingId(m.value);
          if (id !== undefined) this.echoes.deliver(id, { id });
        }
        return Promise.resolve();
      },
    });
  }

  /** No copy of `id` came on the output topic in time: the NoAnswer the runtime client gives for the answer it stands for. */
  private noCopy(awaited: AnswerKind, id: string, timeoutMs: number, message = `no copy of ${id} came on ${this.output} within ${timeoutMs} ms`): NoAnswer {
    return new NoAnswer(awaited, id, timeoutMs, message, this.output);
  }

  private async send(schema: SchemaName, key: string, event: { id: string }, awaited: AnswerKind, timeoutMs = 30_000): Promise<Echo> {
    const echo = this.echoes.wait(event.id, timeoutMs, () => this.noCopy(awaited, event.id, timeoutMs));
    // It may time out before the send returns: the rejection is taken from `echo` below.
    echo.catch(() => undefined);
    try {
      await this.producer.send({ topic: this.input, messages: [{ key, value: this.serde.encode(schema, event) }] });
    } catch (err) {
      this.echoes.cancel(event.id, err instanceof Error ? err : new Error(String(err)));
      throw err;
    }
    return echo;
  }

  private allow(e: { id: string; tenant: string; tree_id: string; job_id: string; run_id: string | null }, processor: string): Decision {
    return { id: `echo-${e.id}`, input_id: e.id, processor, tenant: e.tenant, tree_id: e.tree_id, job_id: e.job_id, run_id: e.run_id, subject: e.id, verdict: "allow", reason_code: null, limit: null, numbers: {}, message: "", evidence: null, ts: Date.now() };
  }

  private delivered(e: ToolCall | ToolResult, content: string): ResultDelivered {
    return { id: `echo-${e.id}`, input_id: e.id, processor: "passthrough", tenant: e.tenant, tree_id: e.tree_id, job_id: e.job_id, run_id: e.run_id, call_id: e.call_id, plugin: e.plugin, tool: e.tool, function: e.function, is_error: false, content, truncated: false, fit: null, ts: Date.now() };
  }

  async askModelCall(ask: ModelCall, timeoutMs?: number): Promise<Decision> {
    await this.send("ModelCall", ask.tree_id, ask, "admission", timeoutMs);
    return this.allow(ask, "passthrough");
  }

  async askChild(ask: JobEvent, timeoutMs?: number): Promise<Decision> {
    await this.send("JobEvent", ask.tree_id, ask, "admission", timeoutMs);
    return this.allow(ask, "passthrough");
  }

  async requestToolCall(call: ToolCall, timeoutMs?: number): Promise<Decision> {
    await this.send("ToolCall", call.run_id, call, "callDecision", timeoutMs);
    return this.allow(call, "passthrough");
  }

  async deliverToolResult(result: ToolResult, timeoutMs?: number): Promise<ResultDelivered> {
    await this.send("ToolResult", result.run_id, result, "delivered", timeoutMs);
    return this.delivered(result, result.content ?? "");
  }

  async readResult(call: ToolCall, timeoutMs?: number): Promise<ResultDelivered> {
    await this.send("ToolCall", call.run_id, call, "delivered", timeoutMs);
    return this.delivered(call, "");
  }

  /** Awaits the copy of a job event published before (or after) the call. */
  async awaitAdmission(eventId: string, timeoutMs = 30_000): Promise<Decision> {
    await this.echoes.wait(eventId, timeoutMs, () => this.noCopy("admission", eventId, timeoutMs));
    return { ...this.allow({ id: eventId, tenant: "", tree_id: "", job_id: "", run_id: null }, "passthrough") };
  }

  async publishModelCalls(calls: readonly ModelCall[]): Promise<void> {
    if (calls.length === 0) return;
    await this.producer.send({ topic: this.input, messages: calls.map((c) => ({ key: c.tree_id, value: this.serde.encode("ModelCall", c) })) });
  }

  async publishJobEvents(events: readonly JobEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.producer.send({ topic: this.input, messages: events.map((e) => ({ key: e.tree_id, value: this.serde.encode("JobEvent", e) })) });
  }

  async close(): Promise<void> {
    this.echoes.rejectAll((id) => this.noCopy("admission", id, 0, `closed before the copy of ${id} came`));
    await this.consumer.disconnect();
    await this.producer.disconnect();
  }
}
