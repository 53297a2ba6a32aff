/**
 * Where the trace sink keeps each job's trace: objects in a MinIO bucket of its own, one per
 * tenant and job per batch (`tenants/<tenant>/jobs/<job>/<topic>/<partition>/<first>-<last>.json`,
 * names in `trace-parts.ts`). The bucket has no object lock: a replay writes a part again under
 * the same name, the pipeline's retention sweep removes a tenant's parts after their retention
 * (processors/retention/, which keeps what is held), and a tenant's traces are erased as one
 * prefix. Parts of format 1 (`jobs/...`, no tenant) expire by a lifecycle rule.
 */
import type { Client } from "minio";
import type { JobTrace } from "../schemas/trace.ts";
import { minioCall } from "./minio-errors.ts";
import { readBytes } from "./objects.ts";
import { TransientError } from "../lib/errors.ts";
import { jobPart, jobPrefix, legacyJobPrefix, mergeParts, parsePart, partName, TENANT_ROOT, tenantPrefix, TRACE_ROOT, type BatchRange, type TracePart } from "./trace-parts.ts";

/** Parts are kept as long as the trace topics keep their records. */
export const TRACE_RETENTION_DAYS = 30;
/** Parts written at once per batch. */
const PUT_CONCURRENCY = 8;
/** Prefixes listed at once when a job's tenant is not given. */
const LIST_CONCURRENCY = 16;

export interface TraceStoreOptions {
  readonly client: Client;
  /** @default "oz0-traces" */
  readonly bucket?: string;
  /** Days a part is kept; 0 keeps parts until removed by hand. @default TRACE_RETENTION_DAYS */
  readonly retentionDays?: number;
}

function transient<T>(what: string, run: () => Promise<T>): Promise<T> {
  return minioCall("the trace store", what, run);
}

export class TraceStore {
  readonly client: Client;
  readonly bucket: string;
  readonly retentionDays: number;

  constructor(opts: TraceStoreOptions) {
    this.client = opts.client;
    this.bucket = opts.bucket ?? "oz0-traces";
    this.retentionDays = opts.retentionDays ?? TRACE_RETENTION_DAYS;
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

  /** Writes one batch's parts; writing the same batch again leaves the same objects. */
  async write(range: BatchRange, parts: ReadonlyMap<string, TracePart>): Promise<void> {
    const queue = [...parts.values()];
    const worker = async (): Promise<void> => {
      for (let part = queue.shift(); part; part = queue.shift()) {
        const body = Buffer.from(JSON.stringify(part), "utf8");
        const name = partName(part.tenant, part.job_id, range);
        await transient(`write ${name}`, () => this.client.putObject(this.bucket, name, body, body.length, { "Content-Type": "application/json" }));
      }
    };
    await Promise.all(Array.from({ length: Math.min(PUT_CONCURRENCY, queue.length) }, worker));
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
   * A job's trace: every part under its name, each record once, in time order. With `tenant`,
   * that tenant's job only; without, the job of that ID in every tenant (as `oz0 job trace`
   * reads it when not told the tenant). Parts written before traces were kept by tenant are read too.
   */
  async read(jobId: string, tenant?: string): Promise<JobTrace> {
    // Without a tenant, one listing per tenant: with many tenants, give the tenant.
    const prefixes = tenant === undefined ? (await this.list(`${TENANT_ROOT}/`, false)).map((t) => `${t}jobs/${jobPart(jobId)}/`) : [jobPrefix(tenant, jobId)];
    const queue = [...prefixes, legacyJobPrefix(jobId)];
    const names: string[] = [];
    const lister = async (): Promise<void> => {
      for (let p = queue.shift(); p !== undefined; p = queue.shift()) names.push(...(await this.list(p)));
    };
    await Promise.all(Array.from({ length: Math.min(LIST_CONCURRENCY, queue.length) }, lister));
    const parts = await Promise.all(
      names.sort().map(async (name) => parsePart(await transient(`read ${name}`, async () => (await readBytes(await this.client.getObject(this.bucket, name))).toString("utf8")), name)),
    );
    return mergeParts(jobId, tenant === undefined ? parts : parts.filter((p) => p.v === 1 || p.tenant === tenant));
  }

  /**
   * Erasure: every part of the tenant's traces, removed. Parts written before traces were kept
   * by tenant name no tenant and are left to their expiry; how many there are is said.
   */
  async eraseTenant(tenant: string): Promise<{ erased: number; legacy: number }> {
    const names = await this.list(tenantPrefix(tenant));
    for (let i = 0; i < names.length; i += 1000) {
      const chunk = names.slice(i, i + 1000);
      const answers = await transient(`erase ${chunk.length} parts of tenant ${tenant}`, () => this.client.removeObjects(this.bucket, chunk));
      // A bulk delete answers per object: one it could not remove fails the erasure, which may be run again.
      const failed = answers.filter((a) => a?.Error?.Code && a.Error.Code !== "NoSuchKey");
      if (failed.length > 0) throw new TransientError(`the trace store could not erase ${failed.length} parts of tenant ${tenant}, such as ${failed[0]?.Error?.Key ?? "?"}: ${failed[0]?.Error?.Code ?? ""} ${failed[0]?.Error?.Message ?? ""}`, { dependency: "minio" });
    }
    const legacy = (await this.list(`${TRACE_ROOT}/`)).length;
    return { erased: names.length, legacy };
  }
}
