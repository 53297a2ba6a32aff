/**
 * Content-addressed objects in MinIO: a file is named by the SHA-256 of its exact bytes
 * (`oz0-file:sha256:<hex>`), per tenant, so writing the same bytes again is idempotent.
 * Large bytes go here, never through Kafka.
 */
import { createHash } from "node:crypto";
import { Client } from "minio";
import type { Endpoints } from "../lib/endpoints.ts";

export const REF_PREFIX = "oz0-file:sha256:";
/** The most one stored file may hold (OFF-2, FILE-6). */
export const MAX_FILE_BYTES = 32 * 1024 * 1024;

export function refOf(bytes: Uint8Array): string {
  return `${REF_PREFIX}${createHash("sha256").update(bytes).digest("hex")}`;
}

export function parseRef(ref: string): string {
  const hex = ref.startsWith(REF_PREFIX) ? ref.slice(REF_PREFIX.length) : "";
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`${JSON.stringify(ref.slice(0, 100))} is not a file ref: expected ${REF_PREFIX}<64 hex digits>`);
  return hex;
}

/** The tenant ID as the first part of an object name; refuses one that could escape it. */
export function tenantPath(tenant: string): string {
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(tenant) || /^\.{1,2}$/.test(tenant)) throw new Error(`tenant ID ${JSON.stringify(tenant.slice(0, 100))} may hold only letters, digits, '_', '.' and '-'`);
  return tenant;
}

/** Everything an object's stream (`getObject`) gives, as one buffer. */
export async function readBytes(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}

let puts = 0;

/**
 * Objects this process has put to MinIO through the clients `minioClient` made (trace parts,
 * audit objects, offloaded results and files, their grants and markers): each `putObject` that
 * MinIO accepted, once. The pipeline's metrics serve it as `oz0_object_puts_total`.
 */
export function objectPuts(): number {
  return puts;
}

/** Counts each `putObject` of `client` that succeeds in `objectPuts`; returns the same client. */
export function countingPuts<C extends Pick<Client, "putObject">>(client: C): C {
  const put = client.putObject.bind(client);
  client.putObject = async (...args: Parameters<Client["putObject"]>) => {
    const info = await put(...args);
    puts++;
    return info;
  };
  return client;
}

/**
 * Keeps each bucket's region once `client` has learned it. The minio client asks a bucket's
 * region (`GET ?location`) before its first request there and forgets it after any answer that
 * is not a success, such as a 404 for an object that is absent or a 412 for a put only where
 * absent: both are everyday answers here (a file's data looked for, a grant renewed), and each
 * cost one more request before the next (186 of about 2,530 requests to MinIO over two
 * closed-loop runs of the load). A bucket's region does not change while the bucket exists.
 */
export function keepingRegions<C extends Pick<Client, "getBucketRegionAsync">>(client: C): C {
  const ask = client.getBucketRegionAsync.bind(client);
  const known = new Map<string, Promise<string>>();
  client.getBucketRegionAsync = (bucket: string) => {
    let region = known.get(bucket);
    if (region === undefined) {
      region = ask(bucket);
      known.set(bucket, region);
      // A failed ask is not kept: the next request asks again.
      region.catch(() => known.delete(bucket));
    }
    return region;
  };
  return client;
}

export function minioClient(endpoints: Endpoints): Client {
  const url = new URL(endpoints.minioUrl);
  return countingPuts(
    keepingRegions(
      new Client({
        endPoint: url.hostname,
        port: url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80,
        useSSL: url.protocol === "https:",
        accessKey: endpoints.minioAccessKey,
        secretKey: endpoints.minioSecretKey,
      }),
    ),
  );
}

export class ObjectStore {
  readonly client: Client;
  readonly bucket: string;

  constructor(client: Client, bucket: string) {
    this.client = client;
    this.bucket = bucket;
  }

  /** Creates the bucket with object locking (needed for legal holds) when it is missing. */
  async ensureBucket(): Promise<void> {
    if (await this.client.bucketExists(this.bucket)) return;
    try {
      await this.client.makeBucket(this.bucket, "", { ObjectLocking: true });
    } catch (err) {
      // Another instance may have created it in between.
      if (!(await this.client.bucketExists(this.bucket))) throw err;
    }
  }

  objectName(tenant: string, ref: string): string {
    return `${tenantPath(tenant)}/sha256/${parseRef(ref)}`;
  }

  /** Stores bytes for a tenant and returns their ref; the same bytes give the same ref. */
  async put(tenant: string, bytes: Buffer): Promise<string> {
    if (bytes.length > MAX_FILE_BYTES) throw new Error(`a file holds at most ${MAX_FILE_BYTES} bytes; this one has ${bytes.length}`);
    const ref = refOf(bytes);
    await this.client.putObject(this.bucket, this.objectName(tenant, ref), bytes, bytes.length);
    return ref;
  }

  /** The bytes of a tenant's file, or null when that tenant has no such file. */
  async get(tenant: string, ref: string): Promise<Buffer | null> {
    try {
      const stream = await this.client.getObject(this.bucket, this.objectName(tenant, ref));
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    } catch (err) {
      if (err && typeof err === "object" && "code" in err && (err.code === "NoSuchKey" || err.code === "NotFound")) return null;
      throw err;
    }
  }
}
