/**
 * How the trace sink files what it reads: each batch of one input partition becomes one object
 * per tenant it touches (format 3), named by the tenant and the batch's topic, partition and
 * offset range (`tenants/<tenant>/batches/<topic>/<partition>/<first>-<last>.json`, the tenant
 * base64url), holding each job's records apart (`{v: 3, tenant, jobs: [{job_id, entries,
 * decisions, jobs}]}`), so a replay of the same batch writes the same object again, two
 * tenants never share one, and a tenant's traces are one prefix to erase. Which objects hold a
 * job's records is kept in Redis (`TraceStore`, the trace index).
 *
 * Objects written before are read too: format 2, one part per tenant and job per batch
 * (`tenants/<tenant>/jobs/<job>/<topic>/<partition>/<first>-<last>.json`), found by listing
 * the job's prefix; and format 1 (`jobs/<job>/...`, no tenant), until they expire. A job's
 * trace is the union of its parts, each record once (every record carries an ID derived from
 * its input).
 */
import type { JobTrace } from "../schemas/trace.ts";
import type { Decision, JobEvent, TraceEntry } from "../schemas/types.ts";

/** One job's records from one batch: what an object of format 1 or 2 holds, and one job's share of an object of format 3. */
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

/** One job's records in an object of format 3. */
export interface BatchJob {
  readonly job_id: string;
  readonly entries: TraceEntry[];
  readonly decisions: Decision[];
  readonly jobs: JobEvent[];
}

/** What an object of format 3 holds: one tenant's records of one batch, job by job. */
export interface TraceBatch {
  readonly v: 3;
  readonly tenant: string;
  readonly jobs: BatchJob[];
}

/** Where a batch came from: one partition of one topic, from `first` to `last` offset. */
export interface BatchRange {
  readonly topic: string;
  readonly partition: number;
  readonly first: string;
  readonly last: string;
}

/** A record a trace keeps, whatever its kind. */
export type TraceRecord = TraceEntry | Decision | JobEvent;

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

function rangePath(range: BatchRange): string {
  return `${range.topic}/${range.partition}/${padOffset(range.first)}-${padOffset(range.last)}.json`;
}

/** The name of a part of format 2: one tenant's job's records of one batch (written before format 3; still read). */
export function partName(tenant: string, jobId: string, range: BatchRange): string {
  return `${jobPrefix(tenant, jobId)}${rangePath(range)}`;
}

/** Where a tenant's objects of format 3 are. */
export function batchPrefix(tenant: string): string {
  return `${tenantPrefix(tenant)}batches/`;
}

/** The name of an object of format 3: one tenant's records of one batch. */
export function batchName(tenant: string, range: BatchRange): string {
  return `${batchPrefix(tenant)}${rangePath(range)}`;
}

/** Whether a name under `tenants/` is an object of format 3. */
export function isBatchName(name: string): boolean {
  return /^tenants\/[^/]+\/batches\//.test(name);
}

/** One tenant's parts of a batch as one object of format 3, the jobs in the order given. */
export function batchOf(tenant: string, parts: Iterable<TracePart>): TraceBatch {
  const jobs: BatchJob[] = [];
  for (const p of parts) {
    if (p.tenant !== tenant) throw new Error(`a part of tenant ${p.tenant} cannot go into an object of tenant ${tenant}`);
    jobs.push({ job_id: p.job_id, entries: p.entries, decisions: p.decisions, jobs: p.jobs });
  }
  return { v: 3, tenant, jobs };
}

/** A batch's parts (one per tenant and job) as one object of format 3 per tenant, by tenant. */
export function batchesByTenant(parts: Iterable<TracePart>): Map<string, TraceBatch> {
  const byTenant = new Map<string, TracePart[]>();
  for (const p of parts) {
    const list = byTenant.get(p.tenant);
    if (list) list.push(p);
    else byTenant.set(p.tenant, [p]);
  }
  return new Map([...byTenant].map(([tenant, list]) => [tenant, batchOf(tenant, list)]));
}

/** The parts an object of format 3 holds, one per job (each as a part of format 2). */
export function partsOfBatch(batch: TraceBatch): TracePart[] {
  return batch.jobs.map((j) => ({ v: 2, tenant: batch.tenant, job_id: j.job_id, entries: j.entries, decisions: j.decisions, jobs: j.jobs }));
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

function parseJson(text: string, name: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`trace part ${name} is not JSON: ${(err as Error).message}`, { cause: err });
  }
}

function isRecords(p: Partial<BatchJob>): boolean {
  return typeof p.job_id === "string" && Array.isArray(p.entries) && Array.isArray(p.decisions) && Array.isArray(p.jobs);
}

/** Reads a stored part of format 1 or 2 back, refusing anything that is not one. */
export function parsePart(text: string, name: string): TracePart {
  return partFrom(parseJson(text, name), name);
}

function partFrom(value: unknown, name: string): TracePart {
  const p = value as Partial<TracePart> | null;
  if (!p || (p.v !== 1 && p.v !== 2) || (p.v === 2 && typeof p.tenant !== "string") || !isRecords(p)) {
    throw new Error(`trace part ${name} is not a trace part of format 1 or 2`);
  }
  return { ...p, tenant: p.v === 1 ? "" : p.tenant } as TracePart;
}

/** Reads a stored object of format 3 back, refusing anything that is not one. */
export function parseBatch(text: string, name: string): TraceBatch {
  return batchFrom(parseJson(text, name), name);
}

function batchFrom(value: unknown, name: string): TraceBatch {
  const b = value as Partial<TraceBatch> | null;
  if (!b || b.v !== 3 || typeof b.tenant !== "string" || !Array.isArray(b.jobs) || !b.jobs.every((j) => j !== null && typeof j === "object" && isRecords(j))) {
    throw new Error(`trace object ${name} is not a trace object of format 3`);
  }
  return { v: 3, tenant: b.tenant, jobs: b.jobs };
}

/** The parts a stored object holds, whatever its format: one of format 1 or 2, or every job's of format 3. */
export function parseStored(text: string, name: string): TracePart[] {
  const value = parseJson(text, name) as { v?: unknown } | null;
  return value && value.v === 3 ? partsOfBatch(batchFrom(value, name)) : [partFrom(value, name)];
}
