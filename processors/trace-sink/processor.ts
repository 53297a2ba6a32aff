/**
 * The trace sink (SYS-5): one processor per topic a trace is made of, each writing its batch's
 * records into the jobs' traces (`TraceSinkEnv.write`: one object per tenant per batch, each
 * job's records apart, indexed by job in Redis) and emitting nothing. The runner commits the
 * batch's offsets after the write, so a crash in between writes the same objects again.
 *
 * | processor | reads | keeps |
 * | --- | --- | --- |
 * | `trace-sink-trace` | `oz0.trace` | every entry: fitted steps, offloads, loop findings |
 * | `trace-sink-call-decisions` | `oz0.call-decisions` | every decision about a tool call |
 * | `trace-sink-admissions` | `oz0.admissions` | admissions and refusals of model calls and children |
 * | `trace-sink-jobs` | `oz0.jobs` | the job's start and how it ended |
 */
import type { Decision, JobEvent, TraceEntry } from "../../schemas/types.ts";
import type { TopicName } from "../../topology/topics.ts";
import { defineProcessor, type InputRecord, type Outcome, type Processor } from "../runner/processor.ts";
import { partsByJob, TRACED_JOB_KINDS, type BatchRange, type TraceItem, type TracePart } from "../../store/trace-parts.ts";

export interface TraceSinkEnv {
  /** Stores one batch's parts (one per tenant and job) as one object per tenant, and indexes them; the same batch again leaves the same objects. */
  write(range: BatchRange, parts: ReadonlyMap<string, TracePart>): Promise<void>;
}

/** The offsets a batch spans: every record of a batch comes from one partition. */
export function rangeOf(records: ReadonlyArray<InputRecord<unknown>>): BatchRange {
  const first = records[0];
  const last = records[records.length - 1];
  if (!first || !last) throw new Error("a batch has no records");
  return { topic: first.topic, partition: first.partition, first: first.offset, last: last.offset };
}

function traceSink<T extends { readonly job_id: string; readonly tenant: string }>(name: string, input: TopicName, item: (value: T) => TraceItem | null): Processor<T, TraceSinkEnv> {
  return defineProcessor<T, TraceSinkEnv>({
    name,
    input,
    outputs: [],
    validate(value) {
      if (item(value) === null) return [];
      const reasons: string[] = [];
      if (!value.job_id) reasons.push("job_id is empty: a trace is kept per job, so every record of one names its job");
      if (!value.tenant) reasons.push("tenant is empty: a trace is kept per tenant, so every record of one names its tenant");
      return reasons;
    },
    async process(records, env): Promise<Outcome[]> {
      const items = records.map((r) => item(r.value)).filter((i): i is TraceItem => i !== null);
      if (items.length > 0) await env.write(rangeOf(records), partsByJob(items));
      return records.map(() => ({ emits: [] }));
    },
  });
}

export const traceSinkEntries = traceSink<TraceEntry>("trace-sink-trace", "oz0.trace", (entry) => ({ entry }));
export const traceSinkCallDecisions = traceSink<Decision>("trace-sink-call-decisions", "oz0.call-decisions", (decision) => ({ decision }));
export const traceSinkAdmissions = traceSink<Decision>("trace-sink-admissions", "oz0.admissions", (decision) => ({ decision }));
export const traceSinkJobs = traceSink<JobEvent>("trace-sink-jobs", "oz0.jobs", (job) => (TRACED_JOB_KINDS.has(job.kind) ? { job } : null));
