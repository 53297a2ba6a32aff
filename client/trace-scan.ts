/**
 * A job's trace read straight from the topics (`npm run trace -- <job-id> --scan`): every record
 * of oz0.trace, oz0.call-decisions, oz0.admissions and oz0.jobs from the start up to where each
 * partition ended when the scan started, committed records only. Slow on long topics and
 * limited by their retention; the trace sink's copy (`TraceStore.read`) is what the command
 * reads by default.
 */
import type { Kafka } from "kafkajs";
import type { SchemaName } from "../schemas/catalog.ts";
import type { Serde } from "../schemas/serde.ts";
import type { Decision, JobEvent, TraceEntry } from "../schemas/types.ts";
import { readRange } from "./topic-range.ts";
import type { JobTrace } from "./trace-format.ts";

const TOPICS: Record<string, SchemaName> = { "oz0.trace": "TraceEntry", "oz0.call-decisions": "Decision", "oz0.admissions": "Decision", "oz0.jobs": "JobEvent" };

export async function scanTrace(kafka: Kafka, serde: Serde, jobId: string): Promise<JobTrace> {
  const entries: TraceEntry[] = [];
  const decisions: Decision[] = [];
  const jobs: JobEvent[] = [];
  await readRange(kafka, { topics: Object.keys(TOPICS).map((topic) => ({ topic, from: "beginning" as const })), groupPrefix: "oz0.trace-reader" }, async (topic, _partition, message) => {
    const schema = TOPICS[topic];
    if (!schema) return;
    const value = await serde.decode<TraceEntry | Decision | JobEvent>(schema, message.value).catch(() => undefined);
    if (!value || value.job_id !== jobId) return;
    if (schema === "TraceEntry") entries.push(value as TraceEntry);
    else if (schema === "Decision") decisions.push(value as Decision);
    else if ((value as JobEvent).kind === "started" || (value as JobEvent).kind === "ended") jobs.push(value as JobEvent);
  });
  return { jobId, entries, decisions, jobs };
}
