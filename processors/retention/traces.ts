/**
 * Retention of trace parts (OFF-10): a part of a tenant's trace is kept `retentionMs` after it
 * was written (its object's last-modified time; a replay that writes it again renews it), then
 * the sweep removes it, unless it is held back:
 *
 * - a MinIO legal hold on some version of it (when the trace bucket has object locking);
 * - its job or a tree of its records is under a hold kept in Redis (`heldTree`, `oz0 hold`):
 *   the part is read to learn its trees only when the tenant has a held tree.
 *
 * An object of format 3 (`tenants/<tenant>/batches/...`, one tenant's records of one batch,
 * many jobs' and trees') past retention is removed whole unless it holds records of a held tree
 * (of one of its jobs, or naming it as their tree): then it is written again with only those
 * records, which renews it, and the jobs left in it are indexed again (their index keys
 * renewed), so nothing held is lost and nothing else is kept past its retention. One holding
 * only held records is kept as it is, as a part of format 2 is. The jobs of a removed object of
 * format 3 are named only when the tenant has a held tree (the object is read then); otherwise
 * it is removed unread.
 *
 * Tenants' parts are under `tenants/<tenant>/` (trace-parts.ts). Parts of format 1 (`jobs/...`,
 * no tenant) are left to the bucket's lifecycle rule (TraceStore.ensureBucket).
 */
import type { Client } from "minio";
import { codeOf, minioFailure } from "../../store/minio-errors.ts";
import { isBatchName, parseStored, TENANT_ROOT, tenantPrefix } from "../../store/trace-parts.ts";
import type { TraceStore } from "../../store/trace-store.ts";

export interface TraceSweepReport {
  /** Parts removed (in a dry run: that would be). */
  readonly removed: number;
  /** Expired parts kept, by name. */
  readonly held: readonly string[];
  /** The jobs of the parts removed (each once). */
  readonly jobs: readonly string[];
}

export interface TraceSweepOptions {
  readonly client: Client;
  readonly bucket: string;
  readonly tenant: string;
  readonly now: number;
  /** 0 keeps every part. */
  readonly retentionMs: number;
  readonly dryRun?: boolean;
  /** Trees (or jobs: a tree is named by its first job) of the tenant under a hold kept in Redis. */
  readonly heldTrees?: ReadonlySet<string>;
  /** The trace store with its index: writes an expired object of format 3 again with only its held records, and renews their jobs' index. Without it such an object is kept whole. */
  readonly store?: TraceStore;
}

interface Listed {
  readonly name: string;
  readonly lastModified: number;
}

/** The tenants with trace parts, from the names under `tenants/`. */
export async function traceTenants(client: Client, bucket: string): Promise<string[]> {
  if (!(await client.bucketExists(bucket))) return [];
  const out: string[] = [];
  try {
    for await (const item of client.listObjectsV2(bucket, `${TENANT_ROOT}/`, false)) {
      const p = (item as { prefix?: string }).prefix;
      const part = p?.slice(`${TENANT_ROOT}/`.length).replace(/\/$/, "");
      if (part) out.push(Buffer.from(part, "base64url").toString("utf8"));
    }
  } catch (err) {
    throw minioFailure(err, "list the tenants of the traces", `bucket ${bucket}`);
  }
  return out.sort();
}

async function listParts(client: Client, bucket: string, prefix: string): Promise<Listed[]> {
  const out: Listed[] = [];
  try {
    for await (const item of client.listObjectsV2(bucket, prefix, true)) {
      const o = item as { name?: string; lastModified?: Date };
      if (o.name && o.lastModified) out.push({ name: o.name, lastModified: o.lastModified.getTime() });
    }
  } catch (err) {
    throw minioFailure(err, `list ${prefix}`, `bucket ${bucket}`);
  }
  return out;
}

async function locked(client: Client, bucket: string): Promise<boolean> {
  try {
    // minio's typings give this overload void; it returns a promise.
    const cfg = await (client.getObjectLockConfig(bucket) as unknown as Promise<{ objectLockEnabled?: string } | undefined>);
    return cfg?.objectLockEnabled === "Enabled";
  } catch (err) {
    const code = codeOf(err);
    if (code === "ObjectLockConfigurationNotFoundError" || code === "InvalidRequest" || code === "NoSuchObjectLockConfiguration") return false;
    throw minioFailure(err, "read the trace bucket's object lock", `bucket ${bucket}`);
  }
}

async function versionsOf(client: Client, bucket: string, name: string): Promise<Array<string | null>> {
  const out: Array<string | null> = [];
  for await (const item of client.listObjects(bucket, name, false, { IncludeVersion: true })) {
    const o = item as { name?: string; versionId?: string };
    if (o.name === name) out.push(o.versionId && o.versionId !== "null" ? o.versionId : null);
  }
  return out;
}

async function legallyHeld(client: Client, bucket: string, name: string, versions: ReadonlyArray<string | null>): Promise<boolean> {
  for (const versionId of versions) {
    const answer: unknown = await client.getObjectLegalHold(bucket, name, versionId ? { versionId } : undefined).catch((err: unknown) => {
      if (codeOf(err) === "NoSuchObjectLockConfiguration") return "OFF";
      throw minioFailure(err, "read a legal hold", `bucket ${bucket}`);
    });
    const status = answer !== null && typeof answer === "object" && "Status" in answer ? answer.Status : answer;
    if (status === "ON") return true;
  }
  return false;
}

async function treesOf(client: Client, bucket: string, name: string): Promise<Set<string>> {
  const chunks: Buffer[] = [];
  try {
    for await (const c of await client.getObject(bucket, name)) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c as string));
  } catch (err) {
    throw minioFailure(err, `read ${name}`, `bucket ${bucket}`);
  }
  const parts = parseStored(Buffer.concat(chunks).toString("utf8"), name);
  return new Set(parts.flatMap((part) => [...part.entries, ...part.decisions, ...part.jobs]).map((r) => r.tree_id).filter((t): t is string => typeof t === "string"));
}

function jobOf(name: string, prefix: string): string {
  // <tenant prefix>jobs/<job base64url>/<topic>/<partition>/<range>.json
  const part = name.slice(prefix.length).split("/")[1] ?? "";
  return Buffer.from(part, "base64url").toString("utf8");
}

/** Removes (or, in a dry run, counts) the tenant's trace parts past retention; removing nothing more when run again. */
export async function sweepTenantTraces(o: TraceSweepOptions): Promise<TraceSweepReport> {
  if (o.retentionMs <= 0 || !(await o.client.bucketExists(o.bucket))) return { removed: 0, held: [], jobs: [] };
  const prefix = tenantPrefix(o.tenant);
  const expired = (await listParts(o.client, o.bucket, prefix)).filter((p) => p.lastModified + o.retentionMs <= o.now);
  if (expired.length === 0) return { removed: 0, held: [], jobs: [] };
  const versioned = await locked(o.client, o.bucket);
  const heldTrees = o.heldTrees ?? new Set<string>();
  const held: string[] = [];
  const gone: Array<{ name: string; versionId: string | null }> = [];
  const jobs = new Set<string>();
  for (const p of expired) {
    if (isBatchName(p.name)) {
      if (heldTrees.size > 0) {
        const keep = (r: { job_id: string; tree_id: string | null }): boolean => heldTrees.has(r.job_id) || (r.tree_id !== null && heldTrees.has(r.tree_id));
        if (!o.store) {
          // No store to write it again: kept whole when it holds anything held.
          if ([...(await treesOf(o.client, o.bucket, p.name))].some((t) => heldTrees.has(t))) {
            held.push(p.name);
            continue;
          }
        } else {
          const parts = await o.store.readObject(p.name);
          if (parts === null) continue;
          const records = parts.flatMap((part) => [...part.entries, ...part.decisions, ...part.jobs]);
          if (records.some(keep)) {
            held.push(p.name);
            if (o.dryRun || records.every(keep)) continue;
            const r = await o.store.keepOnly(p.name, keep);
            for (const job of r?.dropped ?? []) jobs.add(job);
            if (r) await o.store.addToIndex(r.left.map((job) => [o.tenant, job, p.name] as const));
            continue;
          }
          for (const part of parts) jobs.add(part.job_id);
        }
      }
      const versions = versioned ? await versionsOf(o.client, o.bucket, p.name) : [null];
      if (versioned && (await legallyHeld(o.client, o.bucket, p.name, versions))) {
        held.push(p.name);
        continue;
      }
      for (const versionId of versions) gone.push({ name: p.name, versionId });
      continue;
    }
    const job = jobOf(p.name, prefix);
    if (heldTrees.size > 0 && (heldTrees.has(job) || [...(await treesOf(o.client, o.bucket, p.name))].some((t) => heldTrees.has(t)))) {
      held.push(p.name);
      continue;
    }
    const versions = versioned ? await versionsOf(o.client, o.bucket, p.name) : [null];
    if (versioned && (await legallyHeld(o.client, o.bucket, p.name, versions))) {
      held.push(p.name);
      continue;
    }
    jobs.add(job);
    for (const versionId of versions) gone.push({ name: p.name, versionId });
  }
  if (!o.dryRun) {
    for (let i = 0; i < gone.length; i += 1000) {
      const chunk = gone.slice(i, i + 1000).map((g) => (g.versionId ? { name: g.name, versionId: g.versionId } : g.name));
      let answers: Array<{ Error?: { Code?: string; Key?: string; Message?: string } } | undefined>;
      try {
        answers = (await o.client.removeObjects(o.bucket, chunk as never)) as typeof answers;
      } catch (err) {
        throw minioFailure(err, `remove ${chunk.length} expired trace parts of tenant ${o.tenant}`, `bucket ${o.bucket}`);
      }
      const failed = answers.filter((a) => a?.Error?.Code && a.Error.Code !== "NoSuchKey" && a.Error.Code !== "NoSuchVersion");
      if (failed.length > 0) throw new Error(`could not remove ${failed.length} expired trace parts of tenant ${o.tenant}, such as ${failed[0]?.Error?.Key ?? "?"}: ${failed[0]?.Error?.Code ?? ""} ${failed[0]?.Error?.Message ?? ""}`);
    }
  }
  return { removed: new Set(gone.map((g) => g.name)).size, held: held.sort(), jobs: [...jobs].sort() };
}
