/**
 * A batch's records and its outputs as they cross between the Kafka thread and the thread of
 * the processors (`kafka-thread.ts`): every key and value in one ArrayBuffer, which is moved,
 * not copied, from one thread to the other, with their lengths beside it. A few thousand small
 * objects of Buffers would be cloned one by one instead.
 */
import type { OutMessage, RawRecord } from "./transport.ts";

/** Records of one topic partition, in order. */
export interface PackedRecords {
  readonly topic: string;
  readonly partition: number;
  readonly offsets: string[];
  readonly timestamps: string[];
  /** Two a record, its key's length and its value's; -1 for null. */
  readonly lengths: Int32Array;
  readonly bytes: ArrayBuffer;
}

/** Outputs in order: each one's topic as an index into `topicNames`. */
export interface PackedOutputs {
  readonly topicNames: string[];
  readonly topics: Uint16Array;
  readonly keys: Array<string | null>;
  /** One an output, its value's length; -1 for null. */
  readonly lengths: Int32Array;
  readonly bytes: ArrayBuffer;
}

/** Every buffer, in order, in one ArrayBuffer; each one's length (-1 for null) into `lengths`. */
function copyAll(buffers: ReadonlyArray<Uint8Array | null>, lengths: Int32Array): ArrayBuffer {
  let total = 0;
  buffers.forEach((b, i) => {
    lengths[i] = b === null ? -1 : b.length;
    total += b?.length ?? 0;
  });
  const bytes = new Uint8Array(total);
  let pos = 0;
  for (const b of buffers) {
    if (b === null) continue;
    bytes.set(b, pos);
    pos += b.length;
  }
  return bytes.buffer;
}

export function packRecords(records: readonly RawRecord[]): PackedRecords {
  const first = records[0];
  if (first === undefined) throw new Error("a batch to hand over holds no records");
  const parts: Array<Buffer | null> = [];
  for (const r of records) {
    if (r.topic !== first.topic || r.partition !== first.partition) {
      throw new Error(`a batch to hand over mixes ${first.topic}/${first.partition} with ${r.topic}/${r.partition}`);
    }
    parts.push(r.key, r.value);
  }
  const lengths = new Int32Array(parts.length);
  return {
    topic: first.topic,
    partition: first.partition,
    offsets: records.map((r) => r.offset),
    timestamps: records.map((r) => r.timestamp),
    lengths,
    bytes: copyAll(parts, lengths),
  };
}

/** The records again, their keys and values views into the one buffer. */
export function unpackRecords(p: PackedRecords): RawRecord[] {
  const records: RawRecord[] = new Array<RawRecord>(p.offsets.length);
  let pos = 0;
  const view = (len: number): Buffer | null => {
    if (len < 0) return null;
    const b = Buffer.from(p.bytes, pos, len);
    pos += len;
    return b;
  };
  for (let i = 0; i < records.length; i++) {
    const key = view(p.lengths[2 * i] as number);
    const value = view(p.lengths[2 * i + 1] as number);
    records[i] = { topic: p.topic, partition: p.partition, offset: p.offsets[i] as string, key, value, timestamp: p.timestamps[i] as string };
  }
  return records;
}

export function packOutputs(out: readonly OutMessage[]): PackedOutputs {
  const topicNames: string[] = [];
  const index = new Map<string, number>();
  const topics = new Uint16Array(out.length);
  out.forEach((m, i) => {
    let t = index.get(m.topic);
    if (t === undefined) {
      t = topicNames.length;
      topicNames.push(m.topic);
      index.set(m.topic, t);
    }
    topics[i] = t;
  });
  const lengths = new Int32Array(out.length);
  return { topicNames, topics, keys: out.map((m) => m.key), lengths, bytes: copyAll(out.map((m) => m.value), lengths) };
}

export function unpackOutputs(p: PackedOutputs): OutMessage[] {
  const out: OutMessage[] = new Array<OutMessage>(p.keys.length);
  let pos = 0;
  for (let i = 0; i < out.length; i++) {
    const len = p.lengths[i] as number;
    const value = len < 0 ? null : Buffer.from(p.bytes, pos, len);
    if (len > 0) pos += len;
    out[i] = { topic: p.topicNames[p.topics[i] as number] as string, key: p.keys[i] ?? null, value };
  }
  return out;
}
