/**
 * Where the trace sink keeps each job's trace: objects in a MinIO bucket of its own, one per
 * tenant per batch (`tenants/<tenant>/batches/<topic>/<partition>/<first>-<last>.json`, format
 * 3, names in `trace-parts.ts`), each holding its jobs' records apart, and in Redis the trace
 * index: for each tenant's job, the set of the objects that hold its records (`Keys.traceJob`),
 * expiring a day past the trace retention. An object is put first and indexed second, so a
 * crash between leaves an object that the replay of its batch puts and indexes again.
 *
 * The bucket has no object lock: a replay writes an object again under the same name, the
 * pipeline's retention sweep removes a tenant's objects after their retention
 * (processors/retention/, which keeps what is held), and a tenant's traces are erased as one
 * prefix with its index. Parts of format 2 (one per tenant and job per batch, under the job's
 * prefix) are still read and erased; parts of format 1 (`jobs/...`, no tenant) are read and
 * expire by a lifecycle rule.
 */
import type { Client } from "minio";
import type { JobTrace } from "../schemas/trace.ts";
import { codeOf, minioCall } from "./minio-errors.ts";
import { readBytes } from "./objects.ts";
import { TransientError } from "../lib/errors.ts";
import type { RedisClient } from "./redis/client.ts";
import { redisCall, replyValues } from "./redis/errors.ts";
import { Keys } from "./redis/keys.ts";
import { deleteKeys, execBySlot, scanKeys, type SlotCommand } from "./redis/slots.ts";
import { batchesByTenant, batchName, batchOf, jobPrefix, legacyJobPrefix, mergeParts, parseStored, TENANT_ROOT, tenantPrefix, TRACE_ROOT, type BatchRange, type TracePart, type TraceRecord } from "./trace-parts.ts";

/** Parts are kept as long as the trace topics keep their records. */
export const TRACE_RETENTION_DAYS = 30;
/** Parts written at once per batch. */
const PUT_CONCURRENCY = 8;
/** Prefixes listed (and objects read) at once. */
const LIST_CONCURRENCY = 16;
/** How long a job's trace index outlives the trace retention: its last object is written before the key's expiry is last renewed. */
const INDEX_GRACE_SECONDS = 86_400;

/** The trace index's connection: which objects of format 3 hold a tenant's job's records. */
export interface TraceIndex {
  readonly redis: RedisClient;
  readonly keys: Keys;
}

export interface TraceStoreOptions {
  readonly client: Client;
  /** @default "oz0-traces" */
  readonly bucket?: string;
  /** Days a part is kept; 0 keeps parts until removed by hand. @default TRACE_RETENTION_DAYS */
  readonly retentionDays?: number;
  /** The trace index in Redis: needed to write, read and erase traces. */
  readonly index?: TraceIndex;
}

/** MinIO said the object is not there: as it answered, or as the cause of the error `minioCall` made of that answer. */
function gone(err: unknown): boolean {
  return codeOf(err) === "NoSuchKey" || codeOf((err as { cause?: unknown }).cause) === "NoSuchKey";
}

function transient<T>(what: string, run: () => Promise<T>): Promise<T> {
  return minioCall("the trace store", what, run);
}

export class TraceStore {
  readonly client: Client;
  readonly bucket: string;
  readonly retentionDays: number;
  readonly index: TraceIndex | undefined;

  constructor(opts: TraceStoreOptions) {
    this.client = opts.client;
    this.bucket = opts.bucket ?? "oz0-traces";
    this.retentionDays = opts.retentionDays ?? TRACE_RETENTION_DAYS;
    this.index = opts.index;
  }

  /** The same store with its trace index on this Redis connection. */
  indexed(redis: RedisClient, keys: Keys = new Keys()): TraceStore {
    return new TraceStore({ client: this.client, bucket: this.bucket, retentionDays: this.retentionDays, index: { redis, keys } });
  }

  private need(what: string): TraceIndex {
    if (!this.index) throw new Error(`the trace store needs its index in Redis to ${what} (TraceStore.indexed)`);
    return this.index;
  }

  /** Seconds a job's index key is kept after it was last written; null when traces are kept until erased. */
  indexTtlSeconds(): number | null {
    return this.retentionDays > 0 ? this.retentionDays * 86_400 + INDEX_GRACE_SECONDS : null;
  }

  /**
   * Adds object names to jobs' index keys (each `[tenant, job, name]`) and renews their expiry,
   * in one round of commands (one pipeline; on a cluster, one per slot at once).
   */
  async addToIndex(entries: ReadonlyArray<readonly [tenant: string, job: string, name: string]>): Promise<void> {
    if (entries.length === 0) return;
    const index = this.need("index trace objects");
    const byKey = new Map<string, string[]>();
    for (const [tenant, job, name] of entries) {
      const key = index.keys.traceJob(tenant, job);
      const names = byKey.get(key);
      if (names) names.push(name);
      else byKey.set(key, [name]);
    }
    const ttl = this.indexTtlSeconds();
    const commands: SlotCommand[] = [];
    for (const [key, names] of byKey) {
      commands.push({ key, name: "sadd", args: [key, ...names] });
      commands.push(ttl === null ? { key, name: "persist", args: [key] } : { key, name: "expire", args: [key, ttl] });
    }
    const what = `to index ${entries.length} trace objects`;
    await redisCall(what, commands[0]?.key, async () => replyValues(await execBySlot(index.redis, [commands]), what, commands.map((c) => c.key)));
  }

  /** The names of the objects of format 3 that the index says hold a tenant's job's records. */
  async indexedObjects(tenant: string, jobId: string): Promise<string[]> {
    const index = this.need("read a job's trace");
    const key = index.keys.traceJob(tenant, jobId);
    return (await redisCall("to read a job's trace index", key, () => index.redis.smembers(key))).sort();
  }

  /**
   * Rewrites an object of format 3 with only the records `keep` keeps (a tree's erasure, a
   * tenant's, the retention of what is held), or removes it when none is left; `renew` writes
   * it even when nothing changed (a new last-modified time). Gives the jobs left in it and the
   * jobs whose records all went; null when the object is gone.
   */
  async keepOnly(name: string, keep: (record: TraceRecord) => boolean, renew = false): Promise<{ readonly left: string[]; readonly dropped: string[] } | null> {
    const parts = await this.readObject(name);
    if (parts === null) return null;
    const kept: TracePart[] = [];
    const dropped: string[] = [];
    let changed = false;
    for (const p of parts) {
      const part = { ...p, entries: p.entries.filter(keep), decisions: p.decisions.filter(keep), jobs: p.jobs.filter(keep) };
      const n = part.entries.length + part.decisions.length + part.jobs.length;
      if (n !== p.entries.length + p.decisions.length + p.jobs.length) changed = true;
      if (n > 0) kept.push(part);
      else dropped.push(p.job_id);
    }
    const tenant = parts[0]?.tenant ?? "";
    if (kept.length === 0) {
      await transient(`remove ${name}`, () => this.client.removeObject(this.bucket, name)).catch((err: unknown) => {
        if (!gone(err)) throw err;
      });
    } else if (changed || renew) {
      await this.putJson(name, batchOf(tenant, kept));
    }
    return { left: kept.map((p) => p.job_id), dropped };
  }

  /** Removes jobs' index keys (a tree's erasure), one DEL a slot. */
  async dropFromIndex(tenant: string, jobs: readonly string[]): Promise<void> {
    if (jobs.length === 0) return;
    const index = this.need("erase a trace index");
    const keys = jobs.map((j) => index.keys.traceJob(tenant, j));
    await redisCall("to erase a trace index", keys[0], () => deleteKeys(index.redis, keys));
  }

  /** Removes every index key of a tenant (a tenant's erasure) but those of the jobs in `except`, on every node; gives how many it removed. */
  async dropTenantIndex(tenant: string, except: ReadonlySet<string> = new Set()): Promise<number> {
    const index = this.need("erase a tenant's trace index");
    const pattern = index.keys.traceJobsPattern(tenant);
    const spared = new Set([...except].map((j) => index.keys.traceJob(tenant, j)));
    return redisCall("to erase a tenant's trace index", pattern, async () => {
      let n = 0;
      for await (const keys of scanKeys(index.redis, pattern)) n += await deleteKeys(index.redis, keys.filter((k) => !spared.has(k)));
      return n;
    });
  }

  /** Puts one object (JSON), the same name again leaving the same object. */
  async putJson(name: string, value: unknown): Promise<void> {
    const body = Buffer.from(JSON.stringify(value), "utf8");
    await transient(`write ${name}`, () => this.client.putObject(this.bucket, name, body, body.length, { "Content-Type": "application/json" }));
  }

  /** The parts a stored object holds (one of format 1 or 2, every job's of format 3); null when it is gone. */
  async readObject(name: string): Promise<TracePart[] | null> {
    let text: string;
    try {
      text = await transient(`read ${name}`, async () => (await readBytes(await this.client.getObject(this.bucket, name))).toString("utf8"));
    } catch (err) {
      if (gone(err)) return null;
      throw err;
    }
    return parseStored(text, name);
  }

  /**
   * Creates the bucket when missing and sets its expiry rule (idempotent): only for parts of
   * format 1 (`jobs/`), which name no tenant. A tenant's parts are removed by the retention
   * sweep, which holds back what a legal hold keeps; a rule of an earlier version that expired
   * the whole bucket is replaced.
   */
  async ensureBucket(): Promise<void> {
    if (!(await this.client.bucketExists(this.bucket))) {
      try {
        await this.client.makeBucket(this.bucket, "");
      } catch (err) {
        if (!(await this.client.bucketExists(this.bucket))) throw err;
      }
    }
    if (this.retentionDays > 0) {
      await this.client.setBucketLifecycle(this.bucket, {
        Rule: [{ ID: "oz0-trace-legacy-retention", Status: "Enabled", Filter: { Prefix: `${TRACE_ROOT}/` }, Expiration: { Days: this.retentionDays } }],
      });
    } else {
      // Traces kept until erased: no rule at all (none set is no error).
      await this.client.removeBucketLifecycle(this.bucket).catch((err: unknown) => {
        if ((err as { code?: string }).code !== "NoSuchLifecycleConfiguration") throw err;
      });
    }
  }

  /**
   * Writes one batch's parts (one per tenant and job) as one object of format 3 per tenant, then
   * indexes each object under each of its jobs; writing the same batch again leaves the same
   * objects and the same index.
   */
  async write(range: BatchRange, parts: ReadonlyMap<string, TracePart>): Promise<void> {
    this.need("write traces");
    const queue = [...batchesByTenant(parts.values())].map(([tenant, batch]) => ({ name: batchName(tenant, range), batch }));
    const written = [...queue];
    const worker = async (): Promise<void> => {
      for (let o = queue.shift(); o; o = queue.shift()) await this.putJson(o.name, o.batch);
    };
    await Promise.all(Array.from({ length: Math.min(PUT_CONCURRENCY, queue.length) }, worker));
    await this.addToIndex(written.flatMap((o) => o.batch.jobs.map((j) => [o.batch.tenant, j.job_id, o.name] as const)));
  }

  private async list(prefix: string, recursive = true): Promise<string[]> {
    const names: string[] = [];
    await transient(`list ${prefix}`, async () => {
      for await (const item of this.client.listObjectsV2(this.bucket, prefix, recursive)) {
        const o = item as { name?: string; prefix?: string };
        const name = o.name ?? o.prefix;
        if (name) names.push(name);
      }
    });
    return names;
  }

  /**
   * A job's trace: the objects its index names (its records only) and the parts of formats 1
   * and 2 under its name, each record once, in time order. With `tenant`, that tenant's job
   * only; without, the job of that ID in every tenant (as `oz0 job trace` reads it when not
   * told the tenant). An indexed object that is gone (erased, past retention) is skipped.
   */
  async read(jobId: string, tenant?: string): Promise<JobTrace> {
    this.need("read a job's trace");
    // Without a tenant, one listing (and one index key) per tenant: with many tenants, give the tenant.
    const tenants = tenant === undefined ? (await this.list(`${TENANT_ROOT}/`, false)).map((t) => Buffer.from(t.slice(`${TENANT_ROOT}/`.length, -1), "base64url").toString("utf8")) : [tenant];
    const names = new Set<string>();
    const queue: Array<() => Promise<string[]>> = [
      ...tenants.map((t) => () => this.list(jobPrefix(t, jobId))),
      ...tenants.map((t) => () => this.indexedObjects(t, jobId)),
      () => this.list(legacyJobPrefix(jobId)),
    ];
    const lister = async (): Promise<void> => {
      for (let step = queue.shift(); step !== undefined; step = queue.shift()) for (const n of await step()) names.add(n);
    };
    await Promise.all(Array.from({ length: Math.min(LIST_CONCURRENCY, queue.length) }, lister));
    const toRead = [...names].sort();
    const parts: TracePart[] = [];
    const reader = async (): Promise<void> => {
      for (let name = toRead.shift(); name !== undefined; name = toRead.shift()) parts.push(...((await this.readObject(name)) ?? []));
    };
    await Promise.all(Array.from({ length: Math.min(LIST_CONCURRENCY, toRead.length) }, reader));
    const wanted = new Set(tenants);
    return mergeParts(jobId, parts.filter((p) => p.v === 1 || wanted.has(p.tenant)));
  }

  /**
   * Erasure: every object of the tenant's traces removed, then its trace index. Parts written
   * before traces were kept by tenant name no tenant and are left to their expiry; how many
   * there are is said.
   */
  async eraseTenant(tenant: string): Promise<{ erased: number; legacy: number }> {
    this.need("erase a tenant's traces");
    const names = await this.list(tenantPrefix(tenant));
    for (let i = 0; i < names.length; i += 1000) {
      const chunk = names.slice(i, i + 1000);
      const answers = await transient(`erase ${chunk.length} parts of tenant ${tenant}`, () => this.client.removeObjects(this.bucket, chunk));
      // A bulk delete answers per object: one it could not remove fails the erasure, which may be run again.
      const failed = answers.filter((a) => a?.Error?.Code && a.Error.Code !== "NoSuchKey");
      if (failed.length > 0) throw new TransientError(`the trace store could not erase ${failed.length} parts of tenant ${tenant}, such as ${failed[0]?.Error?.Key ?? "?"}: ${failed[0]?.Error?.Code ?? ""} ${failed[0]?.Error?.Message ?? ""}`, { dependency: "minio" });
    }
    await this.dropTenantIndex(tenant);
    const legacy = (await this.list(`${TRACE_ROOT}/`)).length;
    return { erased: names.length, legacy };
  }
}
