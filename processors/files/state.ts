/**
 * The state the file rules keep in Redis (FILE-3, FILE-5, OFF-13): each tree's start (its
 * root job, whether it runs, its conversation), each conversation's turns, and each job's
 * offload threshold. Every change is a Lua script, idempotent by input offset or by setting
 * only what is absent; reads are plain reads.
 *
 * Every record is kept per tenant and tree (FILE-5): tree IDs may be chosen, so two tenants
 * may use the same one, and neither ever sees or changes the other's record.
 */
import type { RedisClient } from "../../store/redis/client.ts";
import type { OffloadThreshold } from "../../config/resolve.ts";
import type { FileReader } from "../../store/files.ts";
import { Keys } from "../../store/redis/keys.ts";
import { redisFailure } from "../../store/redis/errors.ts";
import { defineScript, flag, text } from "../../store/redis/script.ts";
import { earlierTurns } from "./lineage.ts";

/** Trees and conversations are kept past the 90 days their files may live. */
export const LINEAGE_TTL_S = 100 * 24 * 60 * 60;
/** A job's threshold outlives any job. */
export const THRESHOLD_TTL_S = 30 * 24 * 60 * 60;

export interface TreeRecord {
  readonly rootJob: string;
  readonly startEvent: string;
  readonly status: "running" | "ended";
  /** The conversation the tree is a turn of, or null. */
  readonly conversation: string | null;
}

/** Where the input was read, for idempotence by offset. */
export interface InputPosition {
  readonly source: string;
  readonly offset: string;
}

export interface FilesState {
  tree(tenant: string, treeId: string): Promise<TreeRecord | null>;
  start(tenant: string, treeId: string, start: { readonly event: string; readonly job: string; readonly conversation: string | null }, at: InputPosition): Promise<void>;
  end(tenant: string, treeId: string, job: string, at: InputPosition): Promise<void>;
  /** Records a turn of a conversation; the first record of a turn stands. */
  turn(tenant: string, conversation: string, tree: string, previous: string | null): Promise<void>;
  /** The tree as a reader of files: with its earlier turns when it is a conversation's turn. */
  reader(tenant: string, tree: string): Promise<FileReader>;
  /** The job's threshold: the one kept, else `resolved`, which is kept from now on. */
  threshold(tenant: string, treeId: string, jobId: string, resolved: OffloadThreshold): Promise<OffloadThreshold>;
}

function thresholdText(t: OffloadThreshold): string {
  return t === "off" ? "off" : String(t);
}

export function parseThreshold(text: string): OffloadThreshold {
  if (text === "off") return "off";
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`a kept offload threshold is a positive whole number of tokens or "off"; Redis holds ${JSON.stringify(text)}`);
  return n;
}

/**
 * Redis unreachable or failing for now is a TransientError: the runner tries the batch again
 * rather than dead-lettering it. A refusal that trying again cannot change (the key holds
 * another kind of value, a script's own error) is a StoreRefused naming the key
 * (`store/redis/errors.ts`): the input is dead-lettered.
 */
async function redisStep<T>(what: string, key: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    throw redisFailure(err, `to ${what}`, key);
  }
}

type TreeRef = { readonly tenant: string; readonly tree: string };

/** A tree's start or its root job's end, once per input offset: true when recorded, false on a replay. */
export const filesTreeScript = defineScript({
  name: "filesTree",
  keys: (k, i: TreeRef & { readonly op: "start" | "end"; readonly event: string; readonly job: string; readonly conversation: string | null; readonly at: InputPosition }) => [k.filesTree(i.tenant, i.tree)],
  args: (i) => [i.op, i.event, i.job, i.conversation ?? "", i.at.source, i.at.offset, LINEAGE_TTL_S],
  reply: flag,
  what: (i) => (i.op === "start" ? "to record a tree's start" : "to record a tree's end"),
});

/** A tree as a turn of its conversation after `previous`; a turn recorded before stands. */
export const conversationTurnScript = defineScript({
  name: "conversationTurn",
  keys: (k, i: { readonly tenant: string; readonly conversation: string; readonly tree: string; readonly previous: string | null }) => [k.conversation(i.tenant, i.conversation)],
  args: (i) => [i.tree, i.previous ?? "", LINEAGE_TTL_S],
  reply: (raw, fail) => {
    if (!Array.isArray(raw) || raw.length !== 2 || (raw[0] !== 0 && raw[0] !== 1)) fail("{ applied, previous }");
    const [applied, previous] = raw as [number, unknown];
    return { applied: applied === 1, previous: typeof previous === "string" ? previous : null };
  },
  what: () => "to record a conversation's turn",
});

/** The job's offload threshold: the one kept before, else the one given (kept from now on). */
export const offloadThresholdScript = defineScript({
  name: "offloadThreshold",
  keys: (k, i: TreeRef & { readonly job: string; readonly resolved: OffloadThreshold }) => [k.jobOffload(i.tenant, i.tree, i.job)],
  args: (i) => [thresholdText(i.resolved), THRESHOLD_TTL_S],
  reply: (raw, fail) => parseThreshold(text(raw, fail)),
  what: () => "to keep a job's offload threshold",
});

export class RedisFilesState implements FilesState {
  readonly #redis: RedisClient;
  readonly #keys: Keys;

  constructor(redis: RedisClient, keys: Keys = new Keys()) {
    this.#redis = redis;
    this.#keys = keys;
  }

  async tree(tenant: string, treeId: string): Promise<TreeRecord | null> {
    const h = await redisStep("read a tree's start", this.#keys.filesTree(tenant, treeId), () => this.#redis.hgetall(this.#keys.filesTree(tenant, treeId)));
    if (!h.root_job) return null;
    return { rootJob: h.root_job, startEvent: h.start_event ?? "", status: h.status === "ended" ? "ended" : "running", conversation: h.conversation ?? null };
  }

  async start(tenant: string, treeId: string, s: { event: string; job: string; conversation: string | null }, at: InputPosition): Promise<void> {
    await filesTreeScript.run(this.#redis, this.#keys, { tenant, tree: treeId, op: "start", event: s.event, job: s.job, conversation: s.conversation, at });
  }

  async end(tenant: string, treeId: string, job: string, at: InputPosition): Promise<void> {
    await filesTreeScript.run(this.#redis, this.#keys, { tenant, tree: treeId, op: "end", event: "", job, conversation: null, at });
  }

  async turn(tenant: string, conversation: string, tree: string, previous: string | null): Promise<void> {
    await conversationTurnScript.run(this.#redis, this.#keys, { tenant, conversation, tree, previous });
  }

  async reader(tenant: string, tree: string): Promise<FileReader> {
    const conversation = await redisStep("read a tree's conversation", this.#keys.filesTree(tenant, tree), () => this.#redis.hget(this.#keys.filesTree(tenant, tree), "conversation"));
    if (!conversation) return { tenant, tree };
    const turns = await redisStep("read a conversation's turns", this.#keys.conversation(tenant, conversation), () => this.#redis.hgetall(this.#keys.conversation(tenant, conversation)));
    return { tenant, tree, earlierTurns: earlierTurns(turns, tree) };
  }

  async threshold(tenant: string, treeId: string, jobId: string, resolved: OffloadThreshold): Promise<OffloadThreshold> {
    return offloadThresholdScript.run(this.#redis, this.#keys, { tenant, tree: treeId, job: jobId, resolved });
  }
}

/** The same state in memory, for tests of the cores; kept per tenant and tree as in Redis. */
export class MemoryFilesState implements FilesState {
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
