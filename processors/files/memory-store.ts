import type { OffloadThreshold } from "../../config/resolve.ts";
import type { FileReader } from "../../store/files.ts";
import { earlierTurns } from "./lineage.ts";
import type { FilesStore, InputPosition, TreeRecord } from "./store.ts";

/** The same state in memory, for tests of the cores; kept per tenant and tree as in Redis. */
export class MemoryFilesStore implements FilesStore {
  /** By `treeKey(tenant, tree)`. */
  readonly trees = new Map<string, TreeRecord & { offsets: Map<string, bigint> }>();
  readonly conversations = new Map<string, Record<string, string>>();
  /** By `treeKey(tenant, tree)` and the job, `<tenant tree>/<job>`. */
  readonly thresholds = new Map<string, OffloadThreshold>();

  #applied(key: string, at: InputPosition): boolean {
    const seen = this.trees.get(key)?.offsets.get(at.source);
    return seen !== undefined && seen >= BigInt(at.offset);
  }

  tree(tenant: string, treeId: string): Promise<TreeRecord | null> {
    const t = this.trees.get(treeKey(tenant, treeId));
    return Promise.resolve(t ? { rootJob: t.rootJob, startEvent: t.startEvent, status: t.status, conversation: t.conversation } : null);
  }

  start(tenant: string, treeId: string, s: { event: string; job: string; conversation: string | null }, at: InputPosition): Promise<void> {
    const key = treeKey(tenant, treeId);
    if (this.#applied(key, at)) return Promise.resolve();
    const before = this.trees.get(key);
    const offsets = before?.offsets ?? new Map<string, bigint>();
    offsets.set(at.source, BigInt(at.offset));
    this.trees.set(key, { rootJob: s.job, startEvent: s.event, status: "running", conversation: before?.conversation ?? s.conversation, offsets });
    return Promise.resolve();
  }

  end(tenant: string, treeId: string, job: string, at: InputPosition): Promise<void> {
    const key = treeKey(tenant, treeId);
    const t = this.trees.get(key);
    if (!t || this.#applied(key, at)) return Promise.resolve();
    t.offsets.set(at.source, BigInt(at.offset));
    if (t.rootJob === job) this.trees.set(key, { ...t, status: "ended" });
    return Promise.resolve();
  }

  turn(tenant: string, conversation: string, tree: string, previous: string | null): Promise<void> {
    const key = `${encodeURIComponent(tenant)}/${conversation}`;
    const turns = this.conversations.get(key) ?? {};
    if (!Object.hasOwn(turns, tree)) turns[tree] = previous ?? "";
    this.conversations.set(key, turns);
    return Promise.resolve();
  }

  reader(tenant: string, tree: string): Promise<FileReader> {
    const conversation = this.trees.get(treeKey(tenant, tree))?.conversation;
    if (!conversation) return Promise.resolve({ tenant, tree });
    return Promise.resolve({ tenant, tree, earlierTurns: earlierTurns(this.conversations.get(`${encodeURIComponent(tenant)}/${conversation}`) ?? {}, tree) });
  }

  threshold(tenant: string, treeId: string, jobId: string, resolved: OffloadThreshold): Promise<OffloadThreshold> {
    const key = `${treeKey(tenant, treeId)}/${jobId}`;
    if (!this.thresholds.has(key)) this.thresholds.set(key, resolved);
    return Promise.resolve(this.thresholds.get(key) ?? resolved);
  }
}

/** The memory state's key of a tenant's tree: the tenant URI-encoded, as `Keys` names it. */
export function treeKey(tenant: string, treeId: string): string {
  return `${encodeURIComponent(tenant)}/${treeId}`;
}
