/**
 * Legal holds of job trees (OFF-10, FILE-6), as Redis keeps them: one record per tenant and
 * tree (`Keys.treeHold`, in the tree's slot: reason, who, when, and what the MinIO holds
 * covered) and one index of every held tree (`Keys.treeHolds`, the `{holds}` slot, members
 * `<tenant>\n<tree>`, so a tenant's holds are a range by lex).
 *
 * The record is what makes a tree held: every remover (`oz0 job erase`, `oz0 tenant erase`, the
 * retention sweep through `heldTrees`) checks it, so objects the tree stores after the hold was
 * set are kept too; the MinIO legal holds `oz0 hold set` puts on the objects present then are
 * the second lock, one MinIO itself enforces. The index serves `oz0 hold list` and the sweep:
 * it is written before the record when a hold is set and after the record is removed when it is
 * cleared, so it never misses a held tree; an entry whose record is gone is ignored (and tidied).
 */
import type { RedisClient } from "./redis/client.ts";
import { Oz0Error } from "../lib/errors.ts";
import { redisFailure } from "./redis/errors.ts";
import { Keys } from "./redis/keys.ts";
import { defineScript } from "./redis/script.ts";

export interface TreeHold {
  readonly tenant: string;
  readonly tree: string;
  readonly reason: string;
  readonly by: string;
  /** When the hold was set (ms). */
  readonly at: number;
  /** What the MinIO holds covered when last put (`oz0 hold set`, again or first), or null before they were. */
  readonly covered: { readonly at: number; readonly by: string; readonly files: number; readonly traceParts: number; readonly jobs: number } | null;
}

/** How long a tree's erasure mark lasts when its erasure never ends it (a crash): an hour. */
export const TREE_ERASING_TTL_MS = 3_600_000;

/** Thrown by a hold set while the tree is being erased: the erasure began first and goes on. */
export class TreeBeingErased extends Oz0Error {
  constructor(tenant: string, tree: string, marker: string) {
    const [by = "", at = ""] = marker.split("\n");
    const since = Number.isFinite(Number(at)) && at !== "" ? new Date(Number(at)).toISOString() : "a moment ago";
    super(`tree ${tree} of tenant ${tenant} is being erased (by ${by || "someone"}, since ${since}): a hold can no longer keep it`);
  }
}

export interface HoldCovered {
  readonly files: number;
  readonly traceParts: number;
  readonly jobs: number;
}

const SEP = "\n";

function checkIds(tenant: string, tree: string): void {
  if (tenant === "" || tenant.includes(SEP)) throw new Error(`a tenant ID is not empty and holds no line break; got ${JSON.stringify(tenant)}`);
  if (tree === "") throw new Error("a tree ID is empty: a hold is kept per tenant and tree");
}

export function holdFromHash(tenant: string, tree: string, h: Record<string, string>): TreeHold | null {
  if (h.at === undefined) return null;
  const covered = h.covered_at === undefined ? null : { at: Number(h.covered_at), by: h.covered_by ?? "", files: Number(h.files ?? 0), traceParts: Number(h.trace_parts ?? 0), jobs: Number(h.jobs ?? 0) };
  return { tenant, tree, reason: h.reason ?? "", by: h.by ?? "", at: Number(h.at), covered };
}

function pairs(flat: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Array.isArray(flat)) return out;
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = String(flat[i + 1]);
  return out;
}

type TreeRef = { readonly tenant: string; readonly tree: string };
const treeHoldKeys = (k: Keys, i: TreeRef): string[] => [k.treeHold(i.tenant, i.tree), k.treeErasing(i.tenant, i.tree)];

/** Records a tree's hold, the first one standing: the hold that stands, or the erasure's marker when the tree is being erased. */
export const treeHoldSet = defineScript({
  name: "treeHold",
  keys: (k, i: TreeRef & { readonly reason: string; readonly by: string; readonly at: number }) => treeHoldKeys(k, i),
  args: (i) => ["set", i.reason, i.by, i.at, "", ""],
  reply: (raw, fail): { readonly erasing: string } | { readonly made: boolean; readonly reason: string; readonly by: string; readonly at: number } => {
    if (!Array.isArray(raw) || typeof raw[0] !== "number" || typeof raw[1] !== "string") fail("{made, reason, by, at} or {-1, marker}");
    const [made, reason, by, at] = raw as [number, string, unknown, unknown];
    if (made === -1) return { erasing: reason };
    if (made !== 0 && made !== 1) fail("{made, reason, by, at} or {-1, marker}");
    return { made: made === 1, reason, by: typeof by === "string" ? by : "", at: Number(at) };
  },
  what: () => "to record a tree's legal hold",
});

/** Records what the MinIO holds of a tree covered: false when no hold is recorded (cleared meanwhile). */
export const treeHoldCovered = defineScript({
  name: "treeHold",
  keys: (k, i: TreeRef & { readonly covered: HoldCovered; readonly by: string; readonly at: number }) => treeHoldKeys(k, i),
  args: (i) => ["covered", i.covered.files, i.by, i.at, i.covered.traceParts, i.covered.jobs],
  reply: (raw, fail) => {
    if (raw !== "" && !Array.isArray(raw)) fail('the hold or ""');
    return raw !== "";
  },
  what: () => "to record what a tree's legal hold covers",
});

/** Marks a tree as being erased unless it is held: false when held (nothing marked). */
export const treeEraseBegin = defineScript({
  name: "treeEraseBegin",
  keys: (k, i: TreeRef & { readonly by: string; readonly at: number }) => treeHoldKeys(k, i),
  args: (i) => [`${i.by}\n${i.at}`, TREE_ERASING_TTL_MS],
  reply: (raw, fail) => {
    if (raw !== 1 && raw !== -1) fail("1 or -1");
    return raw === 1;
  },
  what: () => "to mark a tree as being erased",
  key: (k, i) => k.treeErasing(i.tenant, i.tree),
});

/** Removes a tree's hold record: its fields and values, or null when the tree was not held. */
export const treeRelease = defineScript({
  name: "treeRelease",
  keys: (k, i: TreeRef) => [k.treeHold(i.tenant, i.tree)],
  args: () => [],
  reply: (raw, fail) => {
    if (raw === "") return null;
    if (!Array.isArray(raw) || raw.length % 2 !== 0) fail('the hold\'s fields and values, or ""');
    return pairs(raw);
  },
  what: () => "to clear a tree's legal hold",
});

export class TreeHolds {
  readonly #redis: RedisClient;
  readonly #keys: Keys;

  constructor(redis: RedisClient, keys: Keys = new Keys()) {
    this.#redis = redis;
    this.#keys = keys;
  }

  /** The tree's hold, or null when it is not held. */
  async get(tenant: string, tree: string): Promise<TreeHold | null> {
    checkIds(tenant, tree);
    const key = this.#keys.treeHold(tenant, tree);
    try {
      return holdFromHash(tenant, tree, await this.#redis.hgetall(key));
    } catch (err) {
      throw redisFailure(err, "to read a tree's legal hold", key);
    }
  }

  /**
   * Records the hold (the first one stands; `made` says whether this call made it). Index
   * first, then the record, so a crash in between leaves an index entry without a record
   * (ignored), never a held tree the index misses.
   */
  async set(tenant: string, tree: string, hold: { readonly reason: string; readonly by: string; readonly at: number }): Promise<{ readonly made: boolean; readonly hold: TreeHold }> {
    checkIds(tenant, tree);
    const key = this.#keys.treeHold(tenant, tree);
    try {
      await this.#redis.zadd(this.#keys.treeHolds(), 0, `${tenant}${SEP}${tree}`);
    } catch (err) {
      throw redisFailure(err, "to record a tree's legal hold", key);
    }
    const r = await treeHoldSet.run(this.#redis, this.#keys, { tenant, tree, ...hold });
    if ("erasing" in r) throw new TreeBeingErased(tenant, tree, r.erasing);
    return { made: r.made, hold: { tenant, tree, reason: r.reason, by: r.by, at: r.at, covered: null } };
  }

  /**
   * Marks the tree as being erased, unless it is held (false): from then on a hold set is
   * refused (TreeBeingErased) until `endErase`, or the mark's TTL after a crash.
   */
  async beginErase(tenant: string, tree: string, by: string, at: number): Promise<boolean> {
    checkIds(tenant, tree);
    return treeEraseBegin.run(this.#redis, this.#keys, { tenant, tree, by, at });
  }

  /** The erasure ended (done or failed): a hold may be set again. */
  async endErase(tenant: string, tree: string): Promise<void> {
    checkIds(tenant, tree);
    const key = this.#keys.treeErasing(tenant, tree);
    try {
      await this.#redis.del(key);
    } catch (err) {
      throw redisFailure(err, "to end a tree's erasure mark", key);
    }
  }

  /** Records what the MinIO holds covered; false when the hold was cleared meanwhile. */
  async covered(tenant: string, tree: string, by: string, at: number, c: HoldCovered): Promise<boolean> {
    checkIds(tenant, tree);
    return treeHoldCovered.run(this.#redis, this.#keys, { tenant, tree, covered: c, by, at });
  }

  /** Lifts the hold: the record goes (and is returned), then the index entry. Null when the tree was not held. */
  async clear(tenant: string, tree: string): Promise<TreeHold | null> {
    checkIds(tenant, tree);
    const key = this.#keys.treeHold(tenant, tree);
    const fields = await treeRelease.run(this.#redis, this.#keys, { tenant, tree });
    try {
      await this.#redis.zrem(this.#keys.treeHolds(), `${tenant}${SEP}${tree}`);
      return fields === null ? null : holdFromHash(tenant, tree, fields);
    } catch (err) {
      throw redisFailure(err, "to clear a tree's legal hold", key);
    }
  }

  /** The held trees of a tenant (every tenant's when left out), with their records, by tenant and tree. */
  async list(tenant?: string): Promise<TreeHold[]> {
    const index = this.#keys.treeHolds();
    let members: string[];
    try {
      members = tenant === undefined ? await this.#redis.zrange(index, 0, -1) : await this.#redis.zrangebylex(index, `[${tenant}${SEP}`, `(${tenant}\u000b`);
    } catch (err) {
      throw redisFailure(err, "to list the held trees", index);
    }
    const out: TreeHold[] = [];
    for (const m of members) {
      const cut = m.indexOf(SEP);
      if (cut < 0) continue;
      const [t, tree] = [m.slice(0, cut), m.slice(cut + 1)];
      if (tenant !== undefined && t !== tenant) continue;
      const hold = await this.get(t, tree);
      if (hold !== null) out.push(hold);
    }
    return out;
  }

  /**
   * The held trees of a tenant as a set of tree IDs: what a remover checks before it removes anything of a tree, so objects a
   * tree stored after its hold was set are kept too (`FileStore.sweep`'s `heldTree`).
   */
  async heldTrees(tenant: string): Promise<Set<string>> {
    return new Set((await this.list(tenant)).map((h) => h.tree));
  }
}
