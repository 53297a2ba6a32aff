/**
 * A job's trace read straight from the topics (`npm run trace -- <job-id> --scan`): every record
 * of oz0.trace, oz0.call-decisions, oz0.admissions and oz0.jobs from the start up to where each
 * partition ended when the scan started, committed records only. Slow on long topics and
 * limited by their retention; the trace sink's copy (`TraceStore.read`) is what the command
 * reads by default.
 */
import { randomUUID } from "node:crypto";
import type { Kafka } from "kafkajs";
import type { SchemaName } from "../schemas/catalog.ts";
import type { Serde } from "../schemas/serde.ts";
import type { Decision, JobEvent, TraceEntry } from "../schemas/types.ts";
import { deleteGroup } from "./runtime-client.ts";
import type { JobTrace } from "./trace-format.ts";

const TOPICS: Record<string, SchemaName> = { "oz0.trace": "TraceEntry", "oz0.call-decisions": "Decision", "oz0.admissions": "Decision", "oz0.jobs": "JobEvent" };
/** With no record for this long after the last one, the topics are read: transaction markers end a partition without a record. */
const IDLE_MS = 2_000;
const MAX_MS = 60_000;

export async function scanTrace(kafka: Kafka, serde: Serde, jobId: string): Promise<JobTrace> {
  const admin = kafka.admin();
  await admin.connect();
  const pending = new Map<string, bigint>();
  try {
    for (const topic of Object.keys(TOPICS)) {
      for (const p of await admin.fetchTopicOffsets(topic)) {
        if (BigInt(p.high) > BigInt(p.low)) pending.set(`${topic}/${p.partition}`, BigInt(p.high) - 1n);
      }
    }
  } finally {
    await admin.disconnect();
  }

  const entries: TraceEntry[] = [];
  const decisions: Decision[] = [];
  const jobs: JobEvent[] = [];
  const group = `oz0.trace-reader.${randomUUID()}`;
  const consumer = kafka.consumer({ groupId: group, readUncommitted: false });
  await consumer.connect();
  try {
    for (const topic of Object.keys(TOPICS)) await consumer.subscribe({ topic, fromBeginning: true });
    const started = Date.now();
    let lastRecord = Date.now();
    let joined = false;
    consumer.on(consumer.events.GROUP_JOIN, () => {
      joined = true;
      lastRecord = Date.now();
    });
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        const idle = joined && Date.now() - lastRecord > IDLE_MS;
        if (pending.size === 0 || idle || Date.now() - started > MAX_MS) {
          clearInterval(check);
          resolve();
        }
      }, 200);
      void consumer.run({
        eachMessage: async ({ topic, partition, message }) => {
          lastRecord = Date.now();
          const until = pending.get(`${topic}/${partition}`);
          if (until !== undefined && BigInt(message.offset) >= until) pending.delete(`${topic}/${partition}`);
          const schema = TOPICS[topic];
          if (!schema) return;
          const value = await serde.decode<TraceEntry | Decision | JobEvent>(schema, message.value).catch(() => undefined);
          if (!value || value.job_id !== jobId) return;
          if (schema === "TraceEntry") entries.push(value as TraceEntry);
          else if (schema === "Decision") decisions.push(value as Decision);
          else if ((value as JobEvent).kind === "started" || (value as JobEvent).kind === "ended") jobs.push(value as JobEvent);
        },
      });
    });
  } finally {
    await consumer.disconnect();
    await deleteGroup(kafka, group, { warn: (msg, fields) => process.stderr.write(`${msg} ${JSON.stringify(fields)}\n`) });
  }
  return { jobId, entries, decisions, jobs };
}
