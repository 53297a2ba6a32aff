/**
 * The file rules' state in Redis (`store.ts`): every change a Lua script, idempotent by input
 * offset or by setting only what is absent; reads are plain reads.
 */
import type { RedisClient } from "../../store/redis/client.ts";
import type { OffloadThreshold } from "../../config/resolve.ts";
import type { FileReader } from "../../store/files.ts";
import { Keys } from "../../store/redis/keys.ts";
import { redisCall } from "../../store/redis/errors.ts";
import { defineScript, flag, text } from "../../store/redis/script.ts";
import { earlierTurns } from "./lineage.ts";
import { LINEAGE_TTL_S, parseThreshold, THRESHOLD_TTL_S, type FilesStore, type InputPosition, type TreeRecord } from "./store.ts";

function thresholdText(t: OffloadThreshold): string {
  return t === "off" ? "off" : String(t);
}

/**
 * Redis unreachable or failing for now is a TransientError: the runner tries the batch again
 * rather than dead-lettering it. A refusal that trying again cannot change (the key holds
 * another kind of value, a script's own error) is a StoreRefused naming the key
 * (`store/redis/errors.ts`): the input is dead-lettered.
 */
function redisStep<T>(what: string, key: string, step: () => Promise<T>): Promise<T> {
  return redisCall(`to ${what}`, key, step);
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

/** The job's offload threshold: the one kept before, else the one given (kept from now on); and the ms it is kept for yet (-1: no expiry). */
export const offloadThresholdScript = defineScript({
  name: "offloadThreshold",
  keys: (k, i: TreeRef & { readonly job: string; readonly resolved: OffloadThreshold }) => [k.jobOffload(i.tenant, i.tree, i.job)],
  args: (i) => [thresholdText(i.resolved), THRESHOLD_TTL_S],
  reply: (raw, fail) => {
    if (!Array.isArray(raw) || raw.length !== 2 || typeof raw[1] !== "number") fail("{ threshold, ms kept yet }");
    const [kept, ttlMs] = raw as [unknown, number];
    return { threshold: parseThreshold(text(kept, fail)), ttlMs };
  },
  what: () => "to keep a job's offload threshold",
});

/**
 * How long a process holds a job's kept threshold without asking Redis: nothing changes it
 * before it expires (30 days from the job's first result or start), but a tree's erasure or an
 * operator deletes it, and Redis stays the one truth a few minutes later.
 */
export const THRESHOLD_HELD_MS = 5 * 60_000;
/** The most jobs' thresholds a process holds: the oldest held goes first. */
export const THRESHOLDS_HELD = 20_000;

export class RedisFilesStore implements FilesStore {
  readonly #redis: RedisClient;
  readonly #keys: Keys;

  /** Jobs' kept thresholds by key, oldest held first, each until it is asked of Redis again. */
  readonly #thresholds = new Map<string, { readonly threshold: OffloadThreshold; readonly until: number }>();
  readonly #now: () => number;

  constructor(redis: RedisClient, keys: Keys = new Keys(), now: () => number = Date.now) {
    this.#redis = redis;
    this.#keys = keys;
    this.#now = now;
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

  /**
   * A job's threshold, once kept, is held here until it would expire or for THRESHOLD_HELD_MS,
   * whichever is sooner: every later result of the job is fitted without a round trip to Redis.
   */
  async threshold(tenant: string, treeId: string, jobId: string, resolved: OffloadThreshold): Promise<OffloadThreshold> {
    const key = this.#keys.jobOffload(tenant, treeId, jobId);
    const now = this.#now();
    const held = this.#thresholds.get(key);
    if (held !== undefined && held.until > now) return held.threshold;
    const { threshold, ttlMs } = await offloadThresholdScript.run(this.#redis, this.#keys, { tenant, tree: treeId, job: jobId, resolved });
    this.#thresholds.delete(key);
    if (ttlMs !== 0 && ttlMs >= -1) {
      this.#thresholds.set(key, { threshold, until: now + (ttlMs === -1 ? THRESHOLD_HELD_MS : Math.min(ttlMs, THRESHOLD_HELD_MS)) });
      if (this.#thresholds.size > THRESHOLDS_HELD) this.#thresholds.delete(this.#thresholds.keys().next().value as string);
    }
    return threshold;
  }
}
