/**
 * Everything one job tree of a tenant stored, found, held and erased (OFF-10, FILE-6): what
 * `oz0 hold` and `oz0 job erase` act on (docs/files.md, "Holds and erasure of one tree").
 *
 * A tree's data:
 *
 * | where | what | found by |
 * | --- | --- | --- |
 * | file bucket `files/<tenant>/...` | its files and offloaded results (one store, `FileStore`) | its markers `trees/<tree>/<hex>` |
 * | trace bucket `tenants/<tenant>/batches/...` | the objects holding its jobs' records (format 3, shared with other jobs of the tenant) | its jobs' trace index in Redis |
 * | trace bucket `tenants/<tenant>/jobs/<job>/...` | the trace parts of each of its jobs (format 2, written before) | its jobs, below |
 * | Redis `{trace:<tenant>/<job>}:objects` | the trace index of each of its jobs | its jobs |
 * | Redis `{tree:<tenant>/<tree>}` | limits, file rules' record, job labels, offload thresholds | SCAN of the hash tag |
 * | Redis `{run:<tenant>/<run>}:loop:*` | the loop state of the runs its jobs ran in | `job:<id>:run` in its limits state |
 *
 * Its jobs: the tree itself (FILE-5: a tree is named by its first job), the root job of the file
 * rules' record and every `job:<id>:...` of its limits state.
 *
 * Holds: the file bucket has object locking, so a file's data takes a MinIO legal hold. The
 * trace bucket has none (replays overwrite parts, the retention sweep removes them, an erasure
 * removes a prefix) and a bucket cannot gain object locking once made, so a held tree's trace
 * parts are copied into the file bucket under `holds/<tenant>/<tree>/traces/<part name>`, each
 * copy under a legal hold (from an object of format 3, which other trees' jobs share, only the
 * tree's jobs' records are copied, one part of format 2 per job, under the name that part
 * would have had: `tenants/<tenant>/jobs/<job>/<topic>/<partition>/<range>.json`): the sweep holds a held tree's parts back (processors/retention), and
 * the copies outlive anything that reaches the trace bucket behind it (a person with MinIO's
 * own tools, a tenant's erasure) until the hold is cleared, which lifts and removes them. Names under `holds/` are outside `files/`, so the
 * file store's sweep and erasure never reach them.
 */
import type { Client } from "minio";
import type { TraceStore } from "./trace-store.ts";
import { isBatchName, jobPart, jobPrefix, tenantPrefix as tenantPrefixOf, TRACE_ROOT, type TracePart, type TraceRecord } from "./trace-parts.ts";
import { Oz0Error } from "../lib/errors.ts";
import { FileNotFound } from "./file-errors.ts";
import { fileNames, type FileStore } from "./files.ts";
import { codeOf, minioFailure } from "./minio-errors.ts";
import { REF_PREFIX, tenantPath } from "./objects.ts";
import type { RedisClient } from "./redis/client.ts";
import { redisFailure } from "./redis/errors.ts";
import type { Keys } from "./redis/keys.ts";
import { defineScript, integer } from "./redis/script.ts";
import type { TreeHold, TreeHolds } from "./tree-holds.ts";

export interface TreeDataDeps {
  readonly files: FileStore;
  readonly traces: TraceStore;
  readonly redis: RedisClient;
  readonly keys: Keys;
  readonly holds: TreeHolds;
}

/** What a tree stored, by name: never contents. */
export interface TreeInventory {
  readonly tenant: string;
  readonly tree: string;
  /** Refs of its files and offloaded results. */
  readonly files: readonly string[];
  readonly jobs: readonly string[];
  readonly runs: readonly string[];
  /** Names of its trace parts in the trace bucket: its jobs' parts of format 2 and the objects of format 3 its jobs' index names (which may hold other jobs' records too). */
  readonly traceParts: readonly string[];
  /** Its keys of its hash tag, the hold record left out. */
  readonly redisKeys: readonly string[];
  /** The loop state of its runs that exists. */
  readonly loopKeys: readonly string[];
  /** Whether the file rules' record says its root job runs. */
  readonly running: boolean;
}

export function isUnknown(inv: TreeInventory): boolean {
  return inv.files.length === 0 && inv.traceParts.length === 0 && inv.redisKeys.length === 0 && inv.loopKeys.length === 0;
}

/** Where a held tree's trace parts are copied in the file bucket. */
export function heldTracePrefix(tenant: string, tree: string): string {
  if (tree === "") throw new Error("a tree ID is empty: a hold is kept per tenant and tree");
  return `holds/${tenantPath(tenant)}/${Buffer.from(tree, "utf8").toString("base64url")}/traces/`;
}

async function bucketNames(client: Client, bucket: string, prefix: string): Promise<string[]> {
  const out: string[] = [];
  try {
    if (!(await client.bucketExists(bucket))) return out;
    for await (const item of client.listObjectsV2(bucket, prefix, true)) {
      const o = item as { name?: string };
      if (o.name) out.push(o.name);
    }
  } catch (err) {
    throw minioFailure(err, `list ${prefix}`, `bucket ${bucket}`);
  }
  return out.sort();
}

/** Every version of every name under a prefix (the file bucket is versioned). */
async function versionsUnder(client: Client, bucket: string, prefix: string): Promise<Array<{ name: string; versionId: string | null }>> {
  const out: Array<{ name: string; versionId: string | null }> = [];
  try {
    for (const name of await bucketNames(client, bucket, prefix)) {
      for await (const item of client.listObjects(bucket, name, false, { IncludeVersion: true })) {
        const o = item as { name?: string; versionId?: string };
        if (o.name === name) out.push({ name, versionId: o.versionId && o.versionId !== "null" ? o.versionId : null });
      }
    }
  } catch (err) {
    throw minioFailure(err, `list the versions under ${prefix}`, `bucket ${bucket}`);
  }
  return out;
}

/** The trace store with its index on the tree's Redis connection. */
function indexed(d: TreeDataDeps): TraceStore {
  return d.traces.index ? d.traces : d.traces.indexed(d.redis, d.keys);
}

/** The name a held copy of one job's records of an object of format 3 takes: the name of the part of format 2 of that job and batch. */
export function heldCopyName(batch: string, job: string): string {
  return batch.replace(/^(tenants\/[^/]+\/)batches\//, (_, tenant: string) => `${tenant}jobs/${jobPart(job)}/`);
}

/** Whether a record is of the tree: of one of its jobs, or naming it as its tree. */
function ofTree(tree: string, jobs: ReadonlySet<string>): (r: TraceRecord) => boolean {
  return (r) => jobs.has(r.job_id) || r.tree_id === tree;
}

/** Removes trace parts by name, in bulk deletes of 1,000; one the store could not remove fails the erasure, which may be run again. */
async function removeParts(traces: TraceStore, names: readonly string[], whose: string): Promise<void> {
  for (let i = 0; i < names.length; i += 1000) {
    const chunk = names.slice(i, i + 1000);
    let answers: Array<{ Error?: { Code?: string; Key?: string } } | undefined>;
    try {
      answers = (await traces.client.removeObjects(traces.bucket, chunk)) as typeof answers;
    } catch (err) {
      throw minioFailure(err, `erase ${chunk.length} trace parts of ${whose}`, `bucket ${traces.bucket}`);
    }
    const failed = answers.filter((a) => a?.Error?.Code && a.Error.Code !== "NoSuchKey");
    if (failed.length > 0) throw new Error(`the trace store could not erase ${failed.length} parts of ${whose}, such as ${failed[0]?.Error?.Key ?? "?"}: ${failed[0]?.Error?.Code ?? ""}; run the erasure again`);
  }
}

/** Every key matching a pattern, on every node (a cluster's masters each hold some slots). */
async function scanKeys(redis: RedisClient, pattern: string): Promise<string[]> {
  const nodes = "nodes" in redis && typeof redis.nodes === "function" ? redis.nodes("master") : [redis];
  const found = new Set<string>();
  try {
    for (const node of nodes) {
      let cursor = "0";
      do {
        const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1000);
        cursor = next;
        for (const k of keys) found.add(k);
      } while (cursor !== "0");
    }
  } catch (err) {
    throw redisFailure(err, "to find a tree's keys", pattern);
  }
  return [...found].sort();
}

/** The tree's jobs and runs as its limits state and the file rules' record name them. */
export function jobsAndRuns(tree: string, limits: Record<string, string>, filesRecord: Record<string, string>): { jobs: string[]; runs: string[] } {
  const jobs = new Set<string>([tree]);
  const runs = new Set<string>();
  if (filesRecord.root_job) jobs.add(filesRecord.root_job);
  for (const [field, value] of Object.entries(limits)) {
    const m = /^job:(.+):([a-z]+)$/.exec(field);
    if (!m?.[1]) continue;
    jobs.add(m[1]);
    if (m[2] === "run" && value !== "") runs.add(value);
  }
  return { jobs: [...jobs].sort(), runs: [...runs].sort() };
}

/** Everything the tree stored, by name. */
export async function inventory(d: TreeDataDeps, tenant: string, tree: string): Promise<TreeInventory> {
  const own = new Set([d.keys.treeHold(tenant, tree), d.keys.treeErasing(tenant, tree)]);
  const redisKeys = (await scanKeys(d.redis, d.keys.treeKeysPattern(tenant, tree))).filter((k) => !own.has(k));
  let limits: Record<string, string>;
  let filesRecord: Record<string, string>;
  try {
    limits = await d.redis.hgetall(d.keys.limits(tenant, tree));
    filesRecord = await d.redis.hgetall(d.keys.filesTree(tenant, tree));
  } catch (err) {
    throw redisFailure(err, "to read a tree's state", d.keys.limits(tenant, tree));
  }
  const { jobs, runs } = jobsAndRuns(tree, limits, filesRecord);
  const files: string[] = [];
  for (const name of await bucketNames(d.files.client, d.files.bucket, fileNames.tree(tenant, tree))) {
    const p = fileNames.parse(name);
    if (p?.kind === "marker") files.push(`${REF_PREFIX}${p.hex}`);
  }
  const traces = indexed(d);
  const traceParts = new Set<string>();
  for (const job of jobs) {
    for (const name of await bucketNames(d.traces.client, d.traces.bucket, jobPrefix(tenant, job))) traceParts.add(name);
    for (const name of await traces.indexedObjects(tenant, job)) traceParts.add(name);
  }
  const loopKeys: string[] = [];
  for (const run of runs) {
    for (const k of d.keys.loopKeys(tenant, run)) {
      try {
        if ((await d.redis.exists(k)) === 1) loopKeys.push(k);
      } catch (err) {
        throw redisFailure(err, "to find a run's loop state", k);
      }
    }
  }
  return { tenant, tree, files, jobs, runs, traceParts: [...traceParts].sort(), redisKeys, loopKeys, running: filesRecord.status === "running" };
}

/**
 * The tree a tenant's job belongs to: its own when it is a tree's first job (FILE-5: its limits
 * state or file rules' record names it), else the tree its trace's records name. Null when
 * neither knows the job (its trace expired or erased, or never written).
 */
export async function treeOfJob(d: TreeDataDeps, tenant: string, job: string): Promise<string | null> {
  try {
    if ((await d.redis.hexists(d.keys.limits(tenant, job), `job:${job}:agent`)) === 1) return job;
    if ((await d.redis.hget(d.keys.filesTree(tenant, job), "root_job")) === job) return job;
  } catch (err) {
    throw redisFailure(err, "to find a job's tree", d.keys.limits(tenant, job));
  }
  const traces = indexed(d);
  const names = [...(await traces.indexedObjects(tenant, job)), ...(await bucketNames(d.traces.client, d.traces.bucket, jobPrefix(tenant, job)))];
  for (const name of names) {
    // Gone since it was indexed (erased, past retention): nothing to learn from it.
    const parts = (await traces.readObject(name)) ?? [];
    for (const part of parts) {
      if (part.job_id !== job) continue;
      const record = [...part.jobs, ...part.entries, ...part.decisions].find((r) => r.job_id === job && r.tree_id);
      if (record) return record.tree_id;
    }
  }
  return null;
}

export interface HoldReport {
  /** Whether this call made the hold (false: it stood already, and its MinIO holds were put again). */
  readonly made: boolean;
  readonly hold: TreeHold;
  readonly inventory: TreeInventory;
  /** Refs whose data now carries a MinIO legal hold. */
  readonly filesHeld: readonly string[];
  /** Refs whose data was gone (a marker left by a crash): nothing to hold. */
  readonly filesMissing: readonly string[];
  /** Trace parts copied under the hold (this time; parts copied by an earlier set are kept). */
  readonly traceCopies: number;
  /** Trace copies held in all. */
  readonly traceParts: number;
}

/** Thrown when a tree names nothing the tenant stored. */
export class UnknownTree extends Oz0Error {
  constructor(tenant: string, tree: string) {
    super(`tenant ${tenant} has no tree ${tree}: no file, trace part or state of it is kept (never run, erased, or past retention)`);
  }
}

async function legalHold(client: Client, bucket: string, name: string, versionId: string | null, on: boolean): Promise<void> {
  const opts = { status: on ? ("ON" as const) : ("OFF" as const), ...(versionId ? { versionId } : {}) };
  try {
    // minio's typings declare this void; it returns a promise.
    await (client.setObjectLegalHold(bucket, name, opts) as unknown as Promise<void>);
  } catch (err) {
    throw minioFailure(err, `${on ? "put" : "lift"} the legal hold of ${name}`, `bucket ${bucket}`);
  }
}

/**
 * `oz0 hold set`: records the hold in Redis first (from then on every remover that checks it
 * keeps the tree), then puts MinIO legal holds on the data of every file of the tree and on a
 * copy of each of its trace parts, then records what they covered. Setting it again keeps the
 * first hold's reason and puts the MinIO holds on whatever the tree stored since.
 */
export async function holdTree(d: TreeDataDeps, tenant: string, tree: string, hold: { readonly reason: string; readonly by: string; readonly at: number }): Promise<HoldReport> {
  const inv = await inventory(d, tenant, tree);
  const standing = await d.holds.get(tenant, tree);
  if (standing === null && isUnknown(inv)) throw new UnknownTree(tenant, tree);
  const { made, hold: h } = await d.holds.set(tenant, tree, hold);
  const filesHeld: string[] = [];
  const filesMissing: string[] = [];
  for (const ref of inv.files) {
    try {
      await d.files.setLegalHold(tenant, ref, true);
      filesHeld.push(ref);
    } catch (err) {
      if (!(err instanceof FileNotFound)) throw minioFailure(err, "put a file's legal hold", `bucket ${d.files.bucket}`);
      filesMissing.push(ref);
    }
  }
  const prefix = heldTracePrefix(tenant, tree);
  const copied = new Set(await bucketNames(d.files.client, d.files.bucket, prefix));
  const traces = indexed(d);
  const treeJobs = new Set(inv.jobs);
  const mine = ofTree(tree, treeJobs);
  let traceCopies = 0;
  const copy = async (name: string, body: Buffer, from: string): Promise<void> => {
    let put: { versionId: string | null };
    try {
      put = await d.files.client.putObject(d.files.bucket, name, body, body.length, { "Content-Type": "application/json" });
    } catch (err) {
      throw minioFailure(err, `copy ${from} under the hold`, `bucket ${d.files.bucket}`);
    }
    await legalHold(d.files.client, d.files.bucket, name, put.versionId, true);
    copied.add(name);
    traceCopies++;
  };
  for (const part of inv.traceParts) {
    if (isBatchName(part)) {
      // Shared with other jobs: only the tree's jobs' records are copied, one part per job.
      if (inv.jobs.every((job) => copied.has(`${prefix}${heldCopyName(part, job)}`))) continue;
      const parts = await traces.readObject(part);
      // Expired or erased since the index named it: nothing left to hold.
      if (parts === null) continue;
      for (const p of parts) {
        const name = `${prefix}${heldCopyName(part, p.job_id)}`;
        if (copied.has(name)) continue;
        const own: TracePart = { v: 2, tenant, job_id: p.job_id, entries: p.entries.filter(mine), decisions: p.decisions.filter(mine), jobs: p.jobs.filter(mine) };
        if (own.entries.length + own.decisions.length + own.jobs.length === 0) continue;
        await copy(name, Buffer.from(JSON.stringify(own), "utf8"), part);
      }
      continue;
    }
    const name = `${prefix}${part}`;
    if (copied.has(name)) continue;
    let body: Buffer;
    try {
      const chunks: Buffer[] = [];
      for await (const c of await d.traces.client.getObject(d.traces.bucket, part)) chunks.push(c as Buffer);
      body = Buffer.concat(chunks);
    } catch (err) {
      // Expired between the listing and now: nothing left to hold.
      if (codeOf(err) === "NoSuchKey") continue;
      throw minioFailure(err, `read ${part}`, `bucket ${d.traces.bucket}`);
    }
    await copy(name, body, part);
  }
  const covered = { files: filesHeld.length, traceParts: copied.size, jobs: inv.jobs.length };
  await d.holds.covered(tenant, tree, hold.by, hold.at, covered);
  return { made, hold: h, inventory: inv, filesHeld, filesMissing, traceCopies, traceParts: copied.size };
}

export interface ReleaseReport {
  readonly hold: TreeHold;
  /** Refs whose MinIO legal hold was lifted. */
  readonly filesReleased: readonly string[];
  /** Refs left held because another held tree of the tenant holds the same file, with that tree. */
  readonly filesStillHeld: ReadonlyArray<{ readonly ref: string; readonly tree: string }>;
  /** Trace copies lifted and removed. */
  readonly traceCopiesRemoved: number;
}

/**
 * `oz0 hold clear`: lifts the MinIO legal holds (but on a file another held tree of the tenant
 * holds as well: the same bytes are one object), removes the trace copies, and only then the
 * Redis record, so a failure part way leaves the tree held and the command can be run again.
 * Null when the tree is not held.
 */
export async function releaseTree(d: TreeDataDeps, tenant: string, tree: string): Promise<ReleaseReport | null> {
  const hold = await d.holds.get(tenant, tree);
  if (hold === null) return null;
  const others = [...(await d.holds.heldTrees(tenant))].filter((t) => t !== tree);
  const filesReleased: string[] = [];
  const filesStillHeld: Array<{ ref: string; tree: string }> = [];
  for (const name of await bucketNames(d.files.client, d.files.bucket, fileNames.tree(tenant, tree))) {
    const p = fileNames.parse(name);
    if (p?.kind !== "marker") continue;
    const ref = `${REF_PREFIX}${p.hex}`;
    let also: string | undefined;
    for (const other of others) {
      if ((await bucketNames(d.files.client, d.files.bucket, fileNames.marker(tenant, other, p.hex))).length > 0) {
        also = other;
        break;
      }
    }
    if (also !== undefined) {
      filesStillHeld.push({ ref, tree: also });
      continue;
    }
    try {
      await d.files.setLegalHold(tenant, ref, false);
      filesReleased.push(ref);
    } catch (err) {
      if (!(err instanceof FileNotFound)) throw minioFailure(err, "lift a file's legal hold", `bucket ${d.files.bucket}`);
    }
  }
  const copies = await versionsUnder(d.files.client, d.files.bucket, heldTracePrefix(tenant, tree));
  for (const v of copies) {
    await legalHold(d.files.client, d.files.bucket, v.name, v.versionId, false);
    try {
      await d.files.client.removeObject(d.files.bucket, v.name, v.versionId ? { versionId: v.versionId } : {});
    } catch (err) {
      if (codeOf(err) !== "NoSuchKey" && codeOf(err) !== "NoSuchVersion") throw minioFailure(err, `remove ${v.name}`, `bucket ${d.files.bucket}`);
    }
  }
  const cleared = (await d.holds.clear(tenant, tree)) ?? hold;
  return { hold: cleared, filesReleased, filesStillHeld, traceCopiesRemoved: new Set(copies.map((c) => c.name)).size };
}

export type EraseReport =
  /** The tree is held: nothing was erased. */
  | { readonly outcome: "held"; readonly hold: TreeHold; readonly inventory: TreeInventory }
  /** Its root job runs: nothing was erased. */
  | { readonly outcome: "running"; readonly inventory: TreeInventory }
  | {
      readonly outcome: "erased";
      readonly inventory: TreeInventory;
      /** Refs whose grant (and bytes, when no other tree holds them) were removed. */
      readonly filesErased: readonly string[];
      /** Refs kept because their data is under a MinIO legal hold (another held tree holds the same file). */
      readonly filesHeld: readonly string[];
      readonly traceParts: number;
      /** Redis keys removed, the loop state of its runs included. */
      readonly redisKeys: readonly string[];
    };

/**
 * `oz0 job erase`: one tree's files and offloaded results, trace parts and Redis state. A held
 * tree is refused whole, before anything is removed. The tree is marked as being erased in the
 * step that checks its hold (a hold set meanwhile is refused, TreeBeingErased), and the Redis
 * state goes last, in a script that checks the hold again. UnknownTree when the tenant has
 * nothing of the tree.
 */
export async function eraseTree(d: TreeDataDeps, tenant: string, tree: string, by = "oz0"): Promise<EraseReport> {
  const inv = await inventory(d, tenant, tree);
  const hold = await d.holds.get(tenant, tree);
  if (hold !== null) return { outcome: "held", hold, inventory: inv };
  if (isUnknown(inv)) throw new UnknownTree(tenant, tree);
  if (inv.running) return { outcome: "running", inventory: inv };
  // From here on a hold set is refused until the erasure ends, so none is set around it.
  if (!(await d.holds.beginErase(tenant, tree, by, Date.now()))) {
    const late = await d.holds.get(tenant, tree);
    // Held since the check above; or held and cleared again meanwhile: look anew.
    return late !== null ? { outcome: "held", hold: late, inventory: inv } : eraseTree(d, tenant, tree, by);
  }
  try {
    return await eraseMarked(d, tenant, tree, inv);
  } finally {
    await d.holds.endErase(tenant, tree);
  }
}

/** Removes a tree's keys (one slot) unless it is held: how many it removed, or -1 when held (nothing removed). */
export const treeErase = defineScript({
  name: "treeErase",
  // `tag`: the tree's hash tag as a key prefix; the script touches only names that start with it.
  keys: (k, i: { readonly tenant: string; readonly tree: string; readonly tag: string; readonly names: readonly string[] }) => [k.treeHold(i.tenant, i.tree)],
  args: (i) => [i.tag, ...i.names],
  reply: integer,
  what: () => "to erase a tree's state",
});

async function eraseMarked(d: TreeDataDeps, tenant: string, tree: string, inv: TreeInventory): Promise<EraseReport> {
  const files = (await d.files.client.bucketExists(d.files.bucket)) ? await d.files.eraseTree(tenant, tree) : { erased: [], held: [] };
  await removeParts(
    d.traces,
    inv.traceParts.filter((n) => !isBatchName(n)),
    `tree ${tree}`,
  );
  // Objects of format 3 are shared with other jobs: each is written again without the tree's records (removed when none are left).
  const traces = indexed(d);
  const mine = ofTree(tree, new Set(inv.jobs));
  for (const name of inv.traceParts.filter(isBatchName)) await traces.keepOnly(name, (r) => !mine(r));
  await traces.dropFromIndex(tenant, inv.jobs);
  const tag = d.keys.treeHold(tenant, tree).slice(0, -"hold".length);
  const removed: string[] = [];
  for (let i = 0; i < inv.redisKeys.length || i === 0; i += 500) {
    const chunk = inv.redisKeys.slice(i, i + 500);
    const n = await treeErase.run(d.redis, d.keys, { tenant, tree, tag, names: chunk });
    if (n === -1) {
      const late = await d.holds.get(tenant, tree);
      if (late !== null) return { outcome: "held", hold: late, inventory: inv };
    }
    removed.push(...chunk);
  }
  for (const run of inv.runs) {
    const keys = d.keys.loopKeys(tenant, run).filter((k) => inv.loopKeys.includes(k));
    if (keys.length === 0) continue;
    try {
      // One run's lanes and flags share its slot: one command removes them together.
      await d.redis.del(...keys);
    } catch (err) {
      throw redisFailure(err, "to erase a run's loop state", keys[0] ?? "");
    }
    removed.push(...keys);
  }
  return { outcome: "erased", inventory: inv, filesErased: files.erased, filesHeld: files.held, traceParts: inv.traceParts.length, redisKeys: removed };
}

/** What a tenant's erasure keeps of its traces: the held trees, their jobs, and their jobs' prefixes of format 2. */
export interface KeptTraces {
  readonly trees: readonly string[];
  readonly keepTracePrefixes: readonly string[];
  readonly keepJobs: readonly string[];
}

/**
 * Before a tenant-wide erasure: every held tree of the tenant gets a MinIO legal hold on each
 * file it holds now (what it stored since its hold was set included), so the file store's
 * erasure keeps them; returns the held trees, their jobs and the trace prefixes of their jobs, to be kept.
 */
export async function protectHeldTrees(d: TreeDataDeps, tenant: string): Promise<KeptTraces> {
  const trees = [...(await d.holds.heldTrees(tenant))].sort();
  const keep: string[] = [];
  const keepJobs = new Set<string>();
  for (const tree of trees) {
    const inv = await inventory(d, tenant, tree);
    for (const ref of inv.files) {
      try {
        await d.files.setLegalHold(tenant, ref, true);
      } catch (err) {
        if (!(err instanceof FileNotFound)) throw minioFailure(err, "put a file's legal hold", `bucket ${d.files.bucket}`);
      }
    }
    keep.push(...inv.jobs.map((job) => jobPrefix(tenant, job)));
    for (const job of inv.jobs) keepJobs.add(job);
  }
  return { trees, keepTracePrefixes: keep, keepJobs: [...keepJobs].sort() };
}

/**
 * A tenant's trace parts erased but those under `keep.keepTracePrefixes` (the jobs of its held
 * trees); an object of format 3 holding records of a held tree (of its jobs, or naming it) is
 * written again with those records only, the others removed; then the tenant's trace index but
 * the kept jobs'. The erased and the kept counted.
 */
export async function eraseTenantTraces(traces: TraceStore, tenant: string, keep: Pick<KeptTraces, "trees" | "keepTracePrefixes" | "keepJobs">): Promise<{ readonly erased: number; readonly kept: number; readonly legacy: number }> {
  const all = await bucketNames(traces.client, traces.bucket, tenantPrefixOf(tenant));
  const gone = all.filter((n) => !isBatchName(n) && !keep.keepTracePrefixes.some((k) => n.startsWith(k)));
  let kept = all.filter((n) => !isBatchName(n)).length - gone.length;
  let erased = gone.length;
  const heldTrees = new Set(keep.trees);
  const heldJobs = new Set(keep.keepJobs);
  const left = new Set<string>(heldJobs);
  for (const name of all.filter(isBatchName)) {
    if (heldTrees.size === 0 && heldJobs.size === 0) {
      gone.push(name);
      erased++;
      continue;
    }
    const r = await traces.keepOnly(name, (rec) => heldJobs.has(rec.job_id) || heldTrees.has(rec.tree_id));
    if (r === null) continue;
    if (r.left.length === 0) {
      erased++;
      continue;
    }
    kept++;
    for (const job of r.left) left.add(job);
  }
  await removeParts(traces, gone, `tenant ${tenant}`);
  await traces.dropTenantIndex(tenant, left);
  // Parts written before traces were kept by tenant name no tenant: left to their expiry, counted as TraceStore.eraseTenant counts them.
  const legacy = (await bucketNames(traces.client, traces.bucket, `${TRACE_ROOT}/`)).length;
  return { erased, kept, legacy };
}
