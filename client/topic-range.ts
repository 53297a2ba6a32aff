/**
 * Reads committed records of topics from given offsets up to where each partition ended when
 * the read started, then stops: what a command needs to look back over a topic (a job's trace
 * with `--scan`, the dead letters of the last hour for `oz0 doctor`). A consumer group of its
 * own, deleted after. Transaction markers end a partition without a record, so a partition
 * also counts as read once nothing came for `idleMs` after the group joined.
 */
import { randomUUID } from "node:crypto";
import type { Kafka, KafkaMessage } from "kafkajs";
import { deleteGroup } from "./runtime-client.ts";

export interface RangeOptions {
  /** Each topic read from the start (`beginning`), or from the offset the broker gives for a time (epoch ms). */
  readonly topics: ReadonlyArray<{ readonly topic: string; readonly from: "beginning" | number }>;
  /** The group's name before a random suffix. */
  readonly groupPrefix: string;
  /** @default 2000 */
  readonly idleMs?: number;
  /** @default 60000 */
  readonly maxMs?: number;
}

export async function readRange(kafka: Kafka, opts: RangeOptions, onMessage: (topic: string, partition: number, message: KafkaMessage) => Promise<void> | void): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  // Per partition: where to start and the last offset to read.
  const starts: Array<{ topic: string; partition: number; offset: string }> = [];
  const pending = new Map<string, bigint>();
  try {
    for (const t of opts.topics) {
      const ends = await admin.fetchTopicOffsets(t.topic);
      const from = t.from === "beginning" ? null : new Map((await admin.fetchTopicOffsetsByTimestamp(t.topic, t.from)).map((p) => [p.partition, p.offset]));
      for (const p of ends) {
        const start = from ? (from.get(p.partition) ?? p.high) : p.low;
        // The broker answers -1 for a time past the partition's last record.
        const first = BigInt(start) < 0n ? BigInt(p.high) : BigInt(start);
        if (BigInt(p.high) > first) pending.set(`${t.topic}/${p.partition}`, BigInt(p.high) - 1n);
        starts.push({ topic: t.topic, partition: p.partition, offset: String(first) });
      }
    }
  } finally {
    await admin.disconnect();
  }
  if (pending.size === 0) return;

  const idleMs = opts.idleMs ?? 2_000;
  const maxMs = opts.maxMs ?? 60_000;
  const group = `${opts.groupPrefix}.${randomUUID()}`;
  const consumer = kafka.consumer({ groupId: group, readUncommitted: false });
  await consumer.connect();
  try {
    for (const t of opts.topics) await consumer.subscribe({ topic: t.topic, fromBeginning: true });
    const started = Date.now();
    let lastRecord = Date.now();
    let joined = false;
    consumer.on(consumer.events.GROUP_JOIN, () => {
      joined = true;
      lastRecord = Date.now();
    });
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        const idle = joined && Date.now() - lastRecord > idleMs;
        if (pending.size === 0 || idle || Date.now() - started > maxMs) {
          clearInterval(check);
          resolve();
        }
      }, 200);
      void consumer.run({
        eachMessage: async ({ topic, partition, message }) => {
          lastRecord = Date.now();
          const until = pending.get(`${topic}/${partition}`);
          if (until === undefined) return;
          if (BigInt(message.offset) >= until) pending.delete(`${topic}/${partition}`);
          await onMessage(topic, partition, message);
        },
      });
      // Where each partition starts; kafkajs takes a seek once run() was called.
      for (const s of starts) if (pending.has(`${s.topic}/${s.partition}`)) consumer.seek(s);
    });
  } finally {
    await consumer.disconnect();
    await deleteGroup(kafka, group, { warn: (msg, fields) => process.stderr.write(`${msg} ${JSON.stringify(fields)}\n`) });
  }
}
