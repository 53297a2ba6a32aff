/**
 * `npm run trace -- <job-id> [--json]`: a job's trace, read from the trace and decision topics
 * (oz0.trace, oz0.call-decisions, oz0.admissions), committed records only. It reads each topic
 * from the start up to where it ended when the command started, and stops by itself.
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { Kafka } from "kafkajs";
import { formatTrace } from "../client/trace-format.ts";
import { kafkaConfig } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import { Serde } from "../schemas/serde.ts";
import type { Decision, TraceEntry } from "../schemas/types.ts";
import type { SchemaName } from "../schemas/catalog.ts";
import { servicesForCommand } from "./services.ts";

const { positionals, values } = parseArgs({ allowPositionals: true, options: { json: { type: "boolean", default: false } } });
const jobId = positionals[0];
if (!jobId) {
  process.stderr.write("usage: npm run trace -- <job-id> [--json]\n");
  process.exit(2);
}

const TOPICS: Record<string, SchemaName> = { "oz0.trace": "TraceEntry", "oz0.call-decisions": "Decision", "oz0.admissions": "Decision" };
/** With no record for this long after the last one, the topics are read: transaction markers end a partition without a record. */
const IDLE_MS = 2_000;

const endpoints = await servicesForCommand();
const log = createLogger({ component: "trace" });
const kafka = new Kafka(kafkaConfig("oz0-trace", endpoints, process.env, log));
const serde = new Serde({ registryUrl: endpoints.registryUrl });
const admin = kafka.admin();
await admin.connect();
const pending = new Map<string, bigint>();
for (const topic of Object.keys(TOPICS)) {
  for (const p of await admin.fetchTopicOffsets(topic)) {
    if (BigInt(p.high) > BigInt(p.low)) pending.set(`${topic}/${p.partition}`, BigInt(p.high) - 1n);
  }
}
await admin.disconnect();

const entries: TraceEntry[] = [];
const decisions: Decision[] = [];
const consumer = kafka.consumer({ groupId: `oz0.trace-reader.${randomUUID()}`, readUncommitted: false });
await consumer.connect();
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
    if (pending.size === 0 || idle || Date.now() - started > 60_000) {
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
      const value = await serde.decode<TraceEntry | Decision>(schema, message.value).catch(() => undefined);
      if (!value || value.job_id !== jobId) return;
      if (schema === "TraceEntry") entries.push(value as TraceEntry);
      else decisions.push(value as Decision);
    },
  });
});
await consumer.disconnect();

const trace = { jobId, entries, decisions };
process.stdout.write(values.json ? `${JSON.stringify(trace, null, 2)}\n` : formatTrace(trace));
process.exit(0);
