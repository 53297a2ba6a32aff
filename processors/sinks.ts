/**
 * The trace and audit sinks (SYS-5, docs/sinks.md): their stores, built once per set of
 * endpoints from the environment, the buckets they need, and the processors `npm start` runs.
 *
 * | variable | meaning | default |
 * | --- | --- | --- |
 * | `OZ0_TRACE_BUCKET` | the bucket of the jobs' traces | `oz0-traces` |
 * | `OZ0_AUDIT_BUCKET` | the audit log's bucket, created with object locking | `oz0-audit` |
 * | `OZ0_AUDIT_LOCK_MODE` | `COMPLIANCE` or `GOVERNANCE` | `COMPLIANCE` |
 * | `OZ0_AUDIT_RETENTION_DAYS` | days each audit object is locked | 365 |
 * | `OZ0_TRACE_RETENTION_DAYS` | days a trace part is kept after it was written (0: kept) | 30 |
 */
import { minioClient } from "../store/objects.ts";
import type { RedisClient } from "../store/redis/client.ts";
import { AuditLog, DEFAULT_AUDIT_RETENTION_DAYS, type LockMode } from "./audit-sink/store.ts";
import { auditSinkAdmissions, auditSinkAudit, auditSinkCallDecisions, auditSinkConfig, auditSinkLoopApprovals } from "./audit-sink/processor.ts";
import type { Endpoints } from "./runner/endpoints.ts";
import type { Processor } from "./runner/processor.ts";
import { TraceStore } from "../store/trace-store.ts";
import { traceRetentionDaysFromEnv } from "./retention/schedule.ts";
import { traceSinkAdmissions, traceSinkCallDecisions, traceSinkEntries, traceSinkJobs } from "./trace-sink/processor.ts";

type Env = Record<string, string | undefined>;

export interface SinkStores {
  readonly traces: TraceStore;
  readonly audit: AuditLog;
}

export function lockModeFromEnv(env: Env = process.env): LockMode {
  const mode = (env.OZ0_AUDIT_LOCK_MODE ?? "COMPLIANCE").toUpperCase();
  if (mode !== "COMPLIANCE" && mode !== "GOVERNANCE") throw new Error(`OZ0_AUDIT_LOCK_MODE=${env.OZ0_AUDIT_LOCK_MODE} is neither COMPLIANCE nor GOVERNANCE`);
  return mode;
}

export function retentionDaysFromEnv(env: Env = process.env): number {
  const raw = env.OZ0_AUDIT_RETENTION_DAYS;
  if (raw === undefined || raw === "") return DEFAULT_AUDIT_RETENTION_DAYS;
  const days = Number(raw);
  if (!Number.isInteger(days) || days < 1 || days > 36_500) throw new Error(`OZ0_AUDIT_RETENTION_DAYS=${raw} is not a whole number of days from 1 to 36500`);
  return days;
}

const stores = new WeakMap<Endpoints, SinkStores>();

/** The sinks' stores for these endpoints, one set per endpoints object. */
export function sinkStores(endpoints: Endpoints, env: Env = process.env): SinkStores {
  let s = stores.get(endpoints);
  if (!s) {
    const client = minioClient(endpoints);
    s = {
      traces: new TraceStore({ client, bucket: env.OZ0_TRACE_BUCKET || "oz0-traces", retentionDays: traceRetentionDaysFromEnv(env) }),
      audit: new AuditLog({ client, bucket: env.OZ0_AUDIT_BUCKET || "oz0-audit", mode: lockModeFromEnv(env), retentionDays: retentionDaysFromEnv(env) }),
    };
    stores.set(endpoints, s);
  }
  return s;
}

/** Creates the sinks' buckets (the audit log's with object locking) and sets their rules. */
export async function ensureSinkBuckets(endpoints: Endpoints): Promise<void> {
  const { traces, audit } = sinkStores(endpoints);
  await traces.ensureBucket();
  await audit.ensureBucket();
}

export interface SinkEntry<In, Env> {
  readonly processor: Processor<In, Env>;
  readonly env: (deps: { readonly endpoints: Endpoints; readonly redis: RedisClient }) => Env;
}

function sink<In, Env>(processor: Processor<In, Env>, env: (s: SinkStores, redis: RedisClient) => Env): SinkEntry<In, Env> {
  return { processor, env: ({ endpoints, redis }) => env(sinkStores(endpoints), redis) };
}

const indexed = new WeakMap<TraceStore, WeakMap<RedisClient, TraceStore>>();

/** The trace store with its index on the pipeline's Redis connection (the trace sink puts an object, then indexes it by job): one per store and connection. */
function indexedTraces(s: SinkStores, redis: RedisClient): TraceStore {
  let byRedis = indexed.get(s.traces);
  if (!byRedis) indexed.set(s.traces, (byRedis = new WeakMap()));
  let store = byRedis.get(redis);
  if (!store) byRedis.set(redis, (store = s.traces.indexed(redis)));
  return store;
}

/** The sinks' processors, each under its own consumer group like any processor. */
export const SINKS = [
  sink(traceSinkEntries, indexedTraces),
  sink(traceSinkCallDecisions, indexedTraces),
  sink(traceSinkAdmissions, indexedTraces),
  sink(traceSinkJobs, indexedTraces),
  sink(auditSinkAudit, (s) => s.audit),
  sink(auditSinkCallDecisions, (s) => s.audit),
  sink(auditSinkLoopApprovals, (s) => s.audit),
  sink(auditSinkAdmissions, (s) => s.audit),
  sink(auditSinkConfig, (s) => s.audit),
] as const;
