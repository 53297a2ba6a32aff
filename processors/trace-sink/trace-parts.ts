/**
 * How the trace sink files what it reads: each batch of one input partition becomes one part
 * per job it touches, named by the job and the batch's topic, partition and offset range, so a
 * replay of the same batch writes the same part again. A job's trace is the union of its parts,
 * each record once (every record carries an ID derived from its input).
 */
import type { JobTrace } from "../../client/trace-format.ts";
import type { Decision, JobEvent, TraceEntry } from "../../schemas/types.ts";

/** One job's records from one batch: what one stored object holds. */
export interface TracePart {
  readonly v: 1;
  readonly job_id: string;
  readonly entries: TraceEntry[];
  readonly decisions: Decision[];
  readonly jobs: JobEvent[];
}

/** Where a batch came from: one partition of one topic, from `first` to `last` offset. */
export interface BatchRange {
  readonly topic: string;
  readonly partition: number;
  readonly first: string;
  readonly last: string;
}

/** A record the trace keeps, by what it is. */
export type TraceItem = { readonly entry: TraceEntry } | { readonly decision: Decision } | { readonly job: JobEvent };

/** Job lifecycle events a trace shows: when the job started and how it ended. */
export const TRACED_JOB_KINDS: ReadonlySet<JobEvent["kind"]> = new Set(["started", "ended"]);

export const TRACE_ROOT = "jobs";

/** Offsets padded so that names sort in offset order (a Kafka offset has at most 19 digits). */
export function padOffset(offset: string): string {
  if (!/^\d{1,20}$/.test(offset)) throw new Error(`offset ${JSON.stringify(offset)} is not a Kafka offset`);
  return offset.padStart(20, "0");
}

/** The job ID as one safe name part, whatever characters it holds. */
export function jobPart(jobId: string): string {
  if (jobId === "") throw new Error("a job ID is empty: a trace is kept per job");
  return Buffer.from(jobId, "utf8").toString("base64url");
}

export function jobPrefix(jobId: string): string {
  return `${TRACE_ROOT}/${jobPart(jobId)}/`;
}

export function partName(jobId: string, range: BatchRange): string {
  return `${jobPrefix(jobId)}${range.topic}/${range.partition}/${padOffset(range.first)}-${padOffset(range.last)}.json`;
}

function jobOf(item: TraceItem): string {
  if ("entry" in item) return item.entry.job_id;
  if ("decision" in item) return item.decision.job_id;
  return item.job.job_id;
}

/** A batch's items grouped into one part per job, in input order. */
export function partsByJob(items: readonly TraceItem[]): Map<string, TracePart> {
  const parts = new Map<string, TracePart>();
  for (const item of items) {
    const job = jobOf(item);
    let part = parts.get(job);
    if (!part) parts.set(job, (part = { v: 1, job_id: job, entries: [], decisions: [], jobs: [] }));
    if ("entry" in item) part.entries.push(item.entry);
    else if ("decision" in item) part.decisions.push(item.decision);
    else part.jobs.push(item.job);
  }
  return parts;
}

function unique<T extends { readonly id: string; readonly ts: number }>(lists: ReadonlyArray<readonly T[]>): T[] {
  const byId = new Map<string, T>();
  for (const list of lists) for (const x of list) if (!byId.has(x.id)) byId.set(x.id, x);
  return [...byId.values()].sort((a, b) => a.ts - b.ts || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * A job's trace from its parts: each record once, by ID, in time order. A replay whose batch
 * ended at another offset writes a second part holding some of the same records; they show once.
 */
export function mergeParts(jobId: string, parts: readonly TracePart[]): JobTrace {
  const mine = parts.filter((p) => p.job_id === jobId);
  return {
    jobId,
    entries: unique(mine.map((p) => p.entries)),
    decisions: unique(mine.map((p) => p.decisions)),
    jobs: unique(mine.map((p) => p.jobs)),
  };
}

/** Reads a stored part back, refusing anything that is not one. */
export function parsePart(text: string, name: string): TracePart {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`trace part ${name} is not JSON: ${(err as Error).message}`, { cause: err });
  }
  const p = value as Partial<TracePart> | null;
  if (!p || p.v !== 1 || typeof p.job_id !== "string" || !Array.isArray(p.entries) || !Array.isArray(p.decisions) || !Array.isArray(p.jobs)) {
    throw new Error(`trace part ${name} is not a trace part of format 1`);
  }
  return p as TracePart;
}
