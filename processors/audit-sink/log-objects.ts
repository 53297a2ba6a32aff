/**
 * The audit log's objects: one per batch that recorded something, named by the batch's topic,
 * partition and offset range (`log/<topic>/<partition>/<first>-<last>.jsonl`, offsets padded so
 * names sort in offset order), holding one AuditEvent per line as JSON.
 */
import type { AuditEvent } from "../../schemas/types.ts";

export const LOG_ROOT = "log";

export interface ObjectRange {
  readonly topic: string;
  readonly partition: number;
  readonly first: bigint;
  readonly last: bigint;
}

function pad(offset: bigint): string {
  if (offset < 0n || offset >= 10n ** 20n) throw new Error(`offset ${offset} is not a Kafka offset`);
  return offset.toString().padStart(20, "0");
}

export function partitionPrefix(topic: string, partition: number): string {
  if (!/^[A-Za-z0-9._-]+$/.test(topic)) throw new Error(`topic ${JSON.stringify(topic)} is not a Kafka topic name`);
  return `${LOG_ROOT}/${topic}/${partition}/`;
}

export function objectName(r: ObjectRange): string {
  return `${partitionPrefix(r.topic, r.partition)}${pad(r.first)}-${pad(r.last)}.jsonl`;
}

/** Where objects that start at `first` are: a listing under this finds them whatever their last offset. */
export function startingAt(topic: string, partition: number, first: bigint): string {
  return `${partitionPrefix(topic, partition)}${pad(first)}-`;
}

/** The range in an object's name, or null when the name is not one of the log's. */
export function parseObjectName(name: string): ObjectRange | null {
  const m = /^log\/([A-Za-z0-9._-]+)\/(\d+)\/(\d{20})-(\d{20})\.jsonl$/.exec(name);
  if (!m) return null;
  return { topic: m[1] as string, partition: Number(m[2]), first: BigInt(m[3] as string), last: BigInt(m[4] as string) };
}

export function encodeLines(entries: readonly AuditEvent[]): Buffer {
  return Buffer.from(entries.map((e) => `${JSON.stringify(e)}\n`).join(""), "utf8");
}

export function decodeLines(text: string, name: string): AuditEvent[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line, i) => {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (err) {
        throw new Error(`audit object ${name}, line ${i + 1}: not JSON: ${(err as Error).message}`, { cause: err });
      }
      const e = value as Partial<AuditEvent> | null;
      if (!e || typeof e.id !== "string" || typeof e.kind !== "string" || typeof e.ts !== "number") {
        throw new Error(`audit object ${name}, line ${i + 1}: not an audit entry (id, kind and ts are required)`);
      }
      return { tenant: null, tree_id: null, job_id: null, actor: null, reason: null, facts: {}, numbers: {}, ...e } as AuditEvent;
    });
}

/** What is left to write of a batch once the objects already stored cover it up to `coveredThrough`. */
export function remaining<T extends { readonly offset: string }>(records: readonly T[], coveredThrough: bigint | null): T[] {
  return coveredThrough === null ? [...records] : records.filter((r) => BigInt(r.offset) > coveredThrough);
}
