/**
 * How the trace sink files what it reads: each batch of one input partition becomes one part
 * per tenant and job it touches, named by the tenant, the job and the batch's topic, partition
 * and offset range (`tenants/<tenant>/jobs/<job>/<topic>/<partition>/<first>-<last>.json`, the
 * IDs base64url), so a replay of the same batch writes the same part again, two tenants' jobs
 * of one ID never share a part, and a tenant's traces are one prefix to erase. Parts written
 * before traces were kept by tenant (`jobs/<job>/...`, format 1) are read too, until they expire. A job's trace is the union of its parts,
 * each record once (every record carries an ID derived from its input).
 */
import type { JobTrace } from "../schemas/trace.ts";
import type { Decision, JobEvent, TraceEntry } from "../schemas/types.ts";

/** One job's records from one batch: what one stored object holds. */
export interface TracePart {
  /** 2: kept by tenant; 1: written before, under `jobs/` with no tenant. */
  readonly v: 1 | 2;
  /** The tenant the records are of; "" in a part of format 1. */
  readonly tenant: string;
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

/** Where parts of format 1 were written, before traces were kept by tenant. */
export const TRACE_ROOT = "jobs";
export const TENANT_ROOT = "tenants";

/** Offsets padded so that names sort in offset order (a Kafka offset has at most 19 digits). */
export function padOffset(offset: string): string {
  if (!/^\d{1,20}$/.test(offset)) throw new Error(`offset ${JSON.stringify(offset)} is not a Kafka offset`);
  return offset.padStart(20, "0");
}

/** An ID as one safe name part, whatever characters it holds. */
function idPart(id: string, what: string): string {
  if (id === "") throw new Error(`a ${what} ID is empty: a trace is kept per tenant and job`);
  return Buffer.from(id, "utf8").toString("base64url");
}

export function jobPart(jobId: string): string {
  return idPart(jobId, "job");
}

/** Where a job's parts of format 1 are (written before traces were kept by tenant). */
export function legacyJobPrefix(jobId: string): string {
  return `${TRACE_ROOT}/${jobPart(jobId)}/`;
}

/** Everything of one tenant's traces. */
export function tenantPrefix(tenant: string): string {
  return `${TENANT_ROOT}/${idPart(tenant, "tenant")}/`;
}

export function jobPrefix(tenant: string, jobId: string): string {
  return `${tenantPrefix(tenant)}jobs/${jobPart(jobId)}/`;
}

export function partName(tenant: string, jobId: string, range: BatchRange): string {
  return `${jobPrefix(tenant, jobId)}${range.topic}/${range.partition}/${padOffset(range.first)}-${padOffset(range.last)}.json`;
}

function whose(item: TraceItem): { tenant: string; job: string } {
  if ("entry" in item) return { tenant: item.entry.tenant, job: item.entry.job_id };
  if ("decision" in item) return { tenant: item.decision.tenant, job: item.decision.job_id };
  return { tenant: item.job.tenant, job: item.job.job_id };
}

/** A batch's items grouped into one part per tenant and job, in input order; keyed by `partKey`. */
export function partsByJob(items: readonly TraceItem[]): Map<string, TracePart> {
  const parts = new Map<string, TracePart>();
  for (const item of items) {
    const { tenant, job } = whose(item);
    const key = partKey(tenant, job);
    let part = parts.get(key);
    if (!part) parts.set(key, (part = { v: 2, tenant, job_id: job, entries: [], decisions: [], jobs: [] }));
    if ("entry" in item) part.entries.push(item.entry);
    else if ("decision" in item) part.decisions.push(item.decision);
    else part.jobs.push(item.job);
  }
  return parts;
}

/** The key of a tenant's job among a batch's parts. */
export function partKey(tenant: string, jobId: string): string {
  return `${tenant}\u0000${jobId}`;
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
  if (!p || (p.v !== 1 && p.v !== 2) || (p.v === 2 && typeof p.tenant !== "string") || typeof p.job_id !== "string" || !Array.isArray(p.entries) || !Array.isArray(p.decisions) || !Array.isArray(p.jobs)) {
    throw new Error(`trace part ${name} is not a trace part of format 1 or 2`);
  }
  return { ...p, tenant: p.v === 1 ? "" : p.tenant } as TracePart;
}
