/**
 * Bounds on what one hostile input can make the runner write. A record above its topic's
 * `max.message.bytes` is refused by the broker (MESSAGE_TOO_LARGE), the batch's transaction
 * fails, and the same batch fails again after every restart: so an output that would be too
 * large dead-letters the input it answers instead, and a dead letter carries at most the first
 * MiB of its input, naming where the whole input stays.
 */
import { createHash } from "node:crypto";
import { topic, type TopicName } from "../../topology/topics.ts";
import type { Emit } from "./processor.ts";
import type { RawRecord } from "./transport.ts";

/** The broker's default `message.max.bytes`, which topics without `maxMessageBytes` keep. */
export const BROKER_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

/** Room left in a record batch for its header, the record's framing and headers. */
const FRAMING_BYTES = 1024;

/** The most of an input's value a dead letter carries. */
export const DEAD_LETTER_MAX_VALUE_BYTES = 1024 * 1024;

/** The most of an input's key a dead letter carries (keys are IDs: short). */
export const DEAD_LETTER_MAX_KEY_BYTES = 64 * 1024;

/** The longest reason a dead letter or a log line carries, in characters. */
export const MAX_REASON_CHARS = 16 * 1024;

/** The most key and value bytes one record of the topic may hold. */
export function recordLimit(name: TopicName): number {
  return (topic(name).maxMessageBytes ?? BROKER_DEFAULT_MAX_MESSAGE_BYTES) - FRAMING_BYTES;
}

/** Why an encoded output cannot go to its topic, or undefined when it fits. */
export function outputTooLarge(e: Pick<Emit, "to" | "key">, encoded: Buffer): string | undefined {
  const bytes = encoded.length + Buffer.byteLength(e.key);
  const limit = recordLimit(e.to);
  if (bytes <= limit) return undefined;
  return `its ${topic(e.to).schema} for ${e.to} would be ${bytes} bytes, above the ${limit} bytes the topic takes: a field of the input is far too large (IDs and names are short, arguments at most 512 KiB; large data travels as a file, by ref)`;
}

export function capReason(reason: string): string {
  if (reason.length <= MAX_REASON_CHARS) return reason;
  return `${reason.slice(0, MAX_REASON_CHARS)}... (${reason.length - MAX_REASON_CHARS} more characters cut)`;
}

function sha256(b: Buffer): string {
  return createHash("sha256").update(b).digest("hex");
}

/**
 * The key, value and reason a dead letter of `raw` carries: the original bytes when they are
 * small enough, else their first bytes, with the reason saying how large the whole was, its
 * SHA-256 and where it stays (the input topic, until its retention ends).
 */
export function deadLetterBytes(raw: RawRecord, reason: string): { key: Buffer | null; value: Buffer | null; reason: string } {
  const notes: string[] = [];
  const where = `${raw.topic} partition ${raw.partition} offset ${raw.offset}`;
  let value = raw.value;
  if (value !== null && value.length > DEAD_LETTER_MAX_VALUE_BYTES) {
    notes.push(`The input's value was ${value.length} bytes (SHA-256 ${sha256(value)}): this dead letter keeps its first ${DEAD_LETTER_MAX_VALUE_BYTES}; the whole input stays at ${where} until the topic's retention ends.`);
    value = value.subarray(0, DEAD_LETTER_MAX_VALUE_BYTES);
  }
  let key = raw.key;
  if (key !== null && key.length > DEAD_LETTER_MAX_KEY_BYTES) {
    notes.push(`The input's key was ${key.length} bytes (SHA-256 ${sha256(key)}): this dead letter keeps its first ${DEAD_LETTER_MAX_KEY_BYTES}; the whole key stays at ${where}.`);
    key = key.subarray(0, DEAD_LETTER_MAX_KEY_BYTES);
  }
  return { key, value, reason: notes.length === 0 ? capReason(reason) : `${capReason(reason)} ${notes.join(" ")}` };
}
