/**
 * Everything one job tree of a tenant stored, found, held and erased (OFF-10, FILE-6): what
 * `oz0 hold` and `oz0 job erase` act on (docs/files.md, "Holds and erasure of one tree").
 *
 * A tree's data:
 *
 * | where | what | found by |
 * | --- | --- | --- |
 * | file bucket `files/<tenant>/...` | its files and offloaded results (one store, `FileStore`) | its markers `trees/<tree>/<hex>` |
 * | trace bucket `tenants/<tenant>/jobs/<job>/...` | the trace parts of each of its jobs | its jobs, below |
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
 * copy under a legal hold: the sweep holds a held tree's parts back (processors/retention), and
 * the copies outlive anything that reaches the trace bucket behind it (a person with MinIO's
 * own tools, a tenant's erasure) until the hold is cleared, which lifts and removes them. Names under `holds/` are outside `files/`, so the
 * file store's sweep and erasure never reach them.
 */
import type { Client } from "minio";
import type { TraceStore } from "./trace-store.ts";
import { jobPrefix, parsePart, tenantPrefix as tenantPrefixOf, TRACE_ROOT } from "./trace-parts.ts";
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
  /** Names of its trace parts in the trace bucket. */
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
  const traceParts: string[] = [];
  for (const job of jobs) traceParts.push(...(await bucketNames(d.traces.client, d.traces.bucket, jobPrefix(tenant, job))));
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
  return { tenant, tree, files, jobs, runs, traceParts, redisKeys, loopKeys, running: filesRecord.status === "running" };
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
  for (const name of await bucketNames(d.traces.client, d.traces.bucket, jobPrefix(tenant, job))) {
    let text: string;
    try {
      const chunks: Buffer[] = [];
      for await (const c of await d.traces.client.getObject(d.traces.bucket, name)) chunks.push(c as Buffer);
      text = Buffer.concat(chunks).toString("utf8");
    } catch (err) {
      throw minioFailure(err, `read ${name}`, `bucket ${d.traces.bucket}`);
    }
    const part = parsePart(text, name);
    const record = [...part.jobs, ...part.entries, ...part.decisions].find((r) => r.job_id === job && r.tree_id);
    if (record) return record.tree_id;
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
  let traceCopies = 0;
  for (const part of inv.traceParts) {
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
    let put: { versionId: string | null };
    try {
      put = await d.files.client.putObject(d.files.bucket, name, body, body.length, { "Content-Type": "application/json" });
    } catch (err) {
      throw minioFailure(err, `copy ${part} under the hold`, `bucket ${d.files.bucket}`);
    }
    await legalHold(d.files.client, d.files.bucket, name, put.versionId, true);
    copied.add(name);
    traceCopies++;
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
  await removeParts(d.traces, inv.traceParts, `tree ${tree}`);
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

/**
 * Before a tenant-wide erasure: every held tree of the tenant gets a MinIO legal hold on each
 * file it holds now (what it stored since its hold was set included), so the file store's
 * erasure keeps them; returns the held trees and the trace prefixes of their jobs, to be kept.
 */
export async function protectHeldTrees(d: TreeDataDeps, tenant: string): Promise<{ readonly trees: readonly string[]; readonly keepTracePrefixes: readonly string[] }> {
  const trees = [...(await d.holds.heldTrees(tenant))].sort();
  const keep: string[] = [];
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
  }
  return { trees, keepTracePrefixes: keep };
}

/** A tenant's trace parts erased but those under `keep` (the jobs of its held trees): the erased and the kept counted. */
export async function eraseTenantTraces(traces: TraceStore, tenant: string, keep: readonly string[]): Promise<{ readonly erased: number; readonly kept: number; readonly legacy: number }> {
  const all = await bucketNames(traces.client, traces.bucket, tenantPrefixOf(tenant));
  const gone = all.filter((n) => !keep.some((k) => n.startsWith(k)));
  await removeParts(traces, gone, `tenant ${tenant}`);
  // Parts written before traces were kept by tenant name no tenant: left to their expiry, counted as TraceStore.eraseTenant counts them.
  const legacy = (await bucketNames(traces.client, traces.bucket, `${TRACE_ROOT}/`)).length;
  return { erased: gone.length, kept: all.length - gone.length, legacy };
}
