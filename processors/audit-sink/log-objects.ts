/**
 * The audit log's objects: one per batch that recorded something, named by the batch's topic,
 * partition and offset range (`log/<topic>/<partition>/<first>-<last>.jsonl`, offsets padded so
 * names sort in offset order), holding one AuditEvent per line as JSON.
 */
import type { AuditEvent } from "../../schemas/types.ts";
import { utcDay } from "../loops/store.ts";

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

/**
 * The day index: one empty object per log object and UTC day of its entries
 * (`days/<YYYY-MM-DD>/<topic>/<partition>/<first>-<last>`), so a reader of the log since a day
 * reads only the objects that hold entries of that day or later.
 */
export const DAY_ROOT = "days";

/** The index markers of a log object, one per day of its entries. */
export function dayMarkers(r: ObjectRange, entries: readonly Pick<AuditEvent, "ts">[]): string[] {
  const days = [...new Set(entries.map((e) => utcDay(e.ts)))].sort();
  const tail = objectName(r).slice(LOG_ROOT.length + 1, -".jsonl".length);
  return days.map((day) => `${DAY_ROOT}/${day}/${tail}`);
}

/** The day and the log object a marker names, or null when the name is not a marker. */
export function parseDayMarker(name: string): { day: string; object: string } | null {
  const m = /^days\/(\d{4}-\d{2}-\d{2})\/([A-Za-z0-9._-]+\/\d+\/\d{20}-\d{20})$/.exec(name);
  return m ? { day: m[1] as string, object: `${LOG_ROOT}/${m[2] as string}.jsonl` } : null;
}

/** A listing that starts after this key yields the partition's objects that start at `first` or later, in offset order. */
export function listAfter(topic: string, partition: number, first: bigint): string {
  return `${partitionPrefix(topic, partition)}${pad(first)}`;
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

/**
 * A batch's records (in offset order) that no stored object covers, as runs of neighbours in
 * the batch: each run becomes one object. A replay from where an earlier attempt started finds
 * that attempt's objects and writes only past them; one from an earlier offset writes only what
 * comes before and after them.
 */
export function uncoveredRuns<T extends { readonly offset: string }>(records: readonly T[], stored: readonly ObjectRange[]): T[][] {
  const runs: T[][] = [];
  let run: T[] = [];
  for (const r of records) {
    const o = BigInt(r.offset);
    if (stored.some((s) => s.first <= o && o <= s.last)) {
      if (run.length > 0) runs.push(run);
      run = [];
    } else run.push(r);
  }
  if (run.length > 0) runs.push(run);
  return runs;
}
