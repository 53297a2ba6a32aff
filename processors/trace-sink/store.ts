/**
 * Where the trace sink keeps each job's trace: objects in a MinIO bucket of its own, one per
 * job per batch (`jobs/<job>/<topic>/<partition>/<first>-<last>.json`, names in
 * `trace-parts.ts`). The bucket has no object lock: a replay writes a part again under the same
 * name, and a lifecycle rule removes parts after the trace topics' retention.
 */
import type { Client } from "minio";
import type { JobTrace } from "../../client/trace-format.ts";
import { minioFailure } from "../../store/minio-errors.ts";
import { TransientError } from "../runner/errors.ts";
import { jobPrefix, mergeParts, parsePart, partName, type BatchRange, type TracePart } from "./trace-parts.ts";

/** Parts are kept as long as the trace topics keep their records. */
export const TRACE_RETENTION_DAYS = 30;
/** Parts written at once per batch. */
const PUT_CONCURRENCY = 8;

export interface TraceStoreOptions {
  readonly client: Client;
  /** @default "oz0-traces" */
  readonly bucket?: string;
  /** Days a part is kept; 0 keeps parts until removed by hand. @default TRACE_RETENTION_DAYS */
  readonly retentionDays?: number;
}

async function transient<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    // What MinIO answered is classified (a refusal is the input's dead letter); no answer at all is tried again.
    const failure = minioFailure(err, what);
    if (failure !== err) throw failure;
    throw new TransientError(`the trace store could not ${what}: ${(err as Error).message ?? String(err)}`, { cause: err, dependency: "minio" });
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks).toString("utf8");
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

  /** Creates the bucket when missing and sets its expiry rule (idempotent). */
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
        Rule: [{ ID: "oz0-trace-retention", Status: "Enabled", Filter: { Prefix: "" }, Expiration: { Days: this.retentionDays } }],
      });
    }
  }

  /** Writes one batch's parts; writing the same batch again leaves the same objects. */
  async write(range: BatchRange, parts: ReadonlyMap<string, TracePart>): Promise<void> {
    const queue = [...parts.values()];
    const worker = async (): Promise<void> => {
      for (let part = queue.shift(); part; part = queue.shift()) {
        const body = Buffer.from(JSON.stringify(part), "utf8");
        const name = partName(part.job_id, range);
        await transient(`write ${name}`, () => this.client.putObject(this.bucket, name, body, body.length, { "Content-Type": "application/json" }));
      }
    };
    await Promise.all(Array.from({ length: Math.min(PUT_CONCURRENCY, queue.length) }, worker));
  }

  /** A job's trace: every part under its name, each record once, in time order. */
  async read(jobId: string): Promise<JobTrace> {
    const prefix = jobPrefix(jobId);
    const names: string[] = [];
    await transient(`list ${prefix}`, async () => {
      for await (const item of this.client.listObjectsV2(this.bucket, prefix, true)) {
        const name = (item as { name?: string }).name;
        if (name) names.push(name);
      }
    });
    const parts = await Promise.all(
      names.sort().map(async (name) => parsePart(await transient(`read ${name}`, async () => readAll(await this.client.getObject(this.bucket, name))), name)),
    );
    return mergeParts(jobId, parts);
  }
}
