/**
 * The loop state in Redis: one pipeline to read a batch's runs, one to write them, each
 * write through the idempotent `loopCommit` script. A Redis failure is classified by what the
 * server said (`store/redis/errors.ts`): a TransientError, so the runner tries the batch again
 * and nothing is committed meanwhile, or a StoreRefused naming the key (a run's lane holding
 * another kind of value), so the inputs of that run are dead-lettered and the others go on.
 */
import type { RedisClient } from "../../store/redis/client.ts";
import type { Keys } from "../../store/redis/keys.ts";
import { defineScript, integers } from "../../store/redis/script.ts";
import { execBySlot, type SlotCommand } from "../../store/redis/slots.ts";
import { redisCall, replyValues } from "../../store/redis/errors.ts";
import { flagsFromHash, timerEntries, timerMember, type Lane, type LaneRead, type LaneSnapshot, type LaneWrite, type LoopCount, type LoopStore, type RunFlags, type TimerEntry } from "./store.ts";

export interface RedisLoopStoreOptions {
  /** Seconds a run's loop state outlives its newest input, or the deadline of a loop waiting for a person. @default 86400 (a day) */
  readonly runTtlSeconds?: number;
  /** Seconds a day's loop counts are kept (LOOP-9 reads a week). @default 3456000 (40 days) */
  readonly statsTtlSeconds?: number;
}

/** Loops counted per script call. */
const COUNTS_PER_SCRIPT = 500;


/** Stores one run's loop lane after a batch, once per input offset: whether applied, and the offset stored. */
export const loopCommit = defineScript({
  name: "loopCommit",
  keys: (k, i: { readonly lane: Lane; readonly write: LaneWrite; readonly ttl: number }) => [k.loopLane(i.write.tenant, i.write.run, i.lane), k.loopFlags(i.write.tenant, i.write.run)],
  args: ({ write: w, ttl }) => [w.source, w.at, w.state, ttl, w.from, w.memos.length, ...w.memos.flat(), ...w.flags.flat()],
  reply: (raw, fail) => {
    const [applied, at]: unknown[] = Array.isArray(raw) ? (raw as unknown[]) : [];
    if ((applied !== 0 && applied !== 1) || (typeof at !== "number" && typeof at !== "string")) return fail("{ applied, at }");
    return { applied: applied === 1, at: String(at) };
  },
  what: (i) => `writing the ${i.lane} loop state of run ${i.write.run}`,
});

/** Counts a day's loops acted on, each once: { counted, count } per loop. */
export const countLoops = defineScript({
  name: "countLoops",
  keys: (k, i: { readonly day: string; readonly counts: readonly LoopCount[]; readonly ttl: number }) => [k.loopStats(i.day, "counts"), k.loopStats(i.day, "counted")],
  args: (i) => [i.ttl, i.counts.length, ...i.counts.flatMap((c) => [c.id, c.tenant, c.plugin, c.tool])],
  reply: (raw, fail, i) => {
    const r = integers(raw, fail);
    if (r.length !== 2 * i.counts.length) fail(`2 numbers for each of ${i.counts.length} loops`);
    return i.counts.map((_, j) => ({ counted: r[2 * j] === 1, count: r[2 * j + 1] ?? 0 }));
  },
  what: (i) => `counting the loops of ${i.day}`,
});

export class RedisLoopStore implements LoopStore {
  private readonly redis: RedisClient;
  private readonly keys: Keys;
  private readonly runTtl: number;
  private readonly statsTtl: number;

  constructor(redis: RedisClient, keys: Keys, options: RedisLoopStoreOptions = {}) {
    this.redis = redis;
    this.keys = keys;
    this.runTtl = options.runTtlSeconds ?? 86_400;
    this.statsTtl = options.statsTtlSeconds ?? 40 * 86_400;
  }

  async read(lane: Lane, reads: readonly LaneRead[]): Promise<LaneSnapshot[]> {
    if (reads.length === 0) return [];
    const commands: SlotCommand[] = [];
    for (const r of reads) {
      const laneKey = this.keys.loopLane(r.tenant, r.run, lane);
      const flagsKey = this.keys.loopFlags(r.tenant, r.run);
      commands.push({ key: laneKey, name: "hmget", args: [laneKey, "state", `at:${r.source}`, ...r.offsets.map((o) => `memo:${r.source}:${o}`)] });
      commands.push({ key: flagsKey, name: "hgetall", args: [flagsKey] });
    }
    const what = `reading the ${lane} loop state of ${reads.length} runs`;
    const values = await redisCall(what, undefined, async () => replyValues(await execBySlot(this.redis, [commands]), what, commands.map((c) => c.key)));
    return reads.map((r, i) => {
      const [state, at, ...memoValues] = values[2 * i] as Array<string | null>;
      const memos = new Map<string, string>();
      r.offsets.forEach((o, j) => {
        const m = memoValues[j];
        if (m !== null && m !== undefined) memos.set(o, m);
      });
      return { state: state ?? null, at: at ?? null, memos, flags: flagsFromHash(values[2 * i + 1] as Record<string, string>) };
    });
  }

  async write(lane: Lane, writes: readonly LaneWrite[]): Promise<void> {
    if (writes.length === 0) return;
    // Deadlines and counts live under other hash tags than the runs, so they cannot join a
    // run's script. Both are idempotent and go first: once a run's script has stored its lane, a
    // retry replays its inputs and would not send them again. A day's counts go in one script.
    // Settled deadlines go last, after the scripts that settled them. On one node the three
    // phases go in one pipeline, in this order; on a cluster each phase waits for the one before.
    const first: SlotCommand[] = [];
    const days = new Map<string, LoopCount[]>();
    for (const c of writes.flatMap((w) => w.counts)) {
      const list = days.get(c.day);
      if (list) list.push(c);
      else days.set(c.day, [c]);
    }
    for (const [day, counts] of days) {
      for (let i = 0; i < counts.length; i += COUNTS_PER_SCRIPT) {
        first.push(countLoops.command(this.keys, { day, counts: counts.slice(i, i + COUNTS_PER_SCRIPT), ttl: this.statsTtl }));
      }
    }
    for (const w of writes) {
      for (const e of w.deadlines.flatMap(timerEntries)) first.push({ key: this.keys.loopDeadlines(), name: "zadd", args: [this.keys.loopDeadlines(), "NX", e.at, timerMember(e)] });
    }
    const runs: SlotCommand[] = [];
    // The script keeps the lane and the run's flags; which of the two failed, the server's words say.
    const runKeys: string[] = [];
    for (const w of writes) {
      const waitsUntil = Math.max(0, ...w.deadlines.map((d) => d.at));
      const ttl = Math.max(this.runTtl, Math.ceil((waitsUntil - Date.now()) / 1000) + this.runTtl);
      // Where an answer finds the approval's run, kept as long as the run's flags.
      for (const d of w.deadlines) first.push({ key: this.keys.loopApproval(d.approval), name: "set", args: [this.keys.loopApproval(d.approval), `${w.tenant}\n${w.run}`, "EX", ttl] });
      const laneKey = this.keys.loopLane(w.tenant, w.run, lane);
      const flagsKey = this.keys.loopFlags(w.tenant, w.run);
      runs.push(loopCommit.command(this.keys, { lane, write: w, ttl }));
      runKeys.push(`${laneKey} (or ${flagsKey})`);
    }
    const last: SlotCommand[] = [];
    for (const w of writes) {
      for (const e of w.settled.flatMap(timerEntries)) last.push({ key: this.keys.loopDeadlines(), name: "zrem", args: [this.keys.loopDeadlines(), timerMember(e)] });
    }
    const what = `writing the ${lane} loop state of ${writes.length} runs`;
    const keyed = [...first.map((c) => c.key), ...runKeys, ...last.map((c) => c.key)];
    await redisCall(what, undefined, async () => replyValues(await execBySlot(this.redis, [first, runs, last]), what, keyed));
  }

  async dueDeadlines(now: number, limit: number): Promise<TimerEntry[]> {
    const key = this.keys.loopDeadlines();
    const members = await redisCall("reading loop deadlines", key, () => this.redis.zrangebyscore(key, "-inf", now, "LIMIT", 0, limit));
    return members.map((m) => JSON.parse(m) as TimerEntry);
  }

  /** Every deadline and escalation step the timer watches, soonest first (`oz0 approval list`). */
  async watched(): Promise<TimerEntry[]> {
    const key = this.keys.loopDeadlines();
    const members = await redisCall("reading loop deadlines", key, () => this.redis.zrange(key, 0, -1));
    return members.map((m) => JSON.parse(m) as TimerEntry);
  }

  /** The tenant and run an approval belongs to, or null when none is kept (never held, or expired). */
  async approvalRun(approval: string): Promise<{ tenant: string; run: string } | null> {
    const key = this.keys.loopApproval(approval);
    const value = await redisCall(`reading approval ${approval}`, key, () => this.redis.get(key));
    const at = value?.indexOf("\n") ?? -1;
    return value && at > 0 ? { tenant: value.slice(0, at), run: value.slice(at + 1) } : null;
  }

  /** A run's flags: its stop, its holds and how each approval was answered. */
  async flags(tenant: string, run: string): Promise<RunFlags> {
    const key = this.keys.loopFlags(tenant, run);
    return flagsFromHash(await redisCall(`reading the loop flags of run ${run}`, key, () => this.redis.hgetall(key)));
  }

  /** The ID of the answer that decided an approval of a run, and how (the first answer wins); null while none has. */
  async decidedBy(tenant: string, run: string, approval: string): Promise<{ answer: "approved" | "denied"; id: string } | null> {
    const key = this.keys.loopFlags(tenant, run);
    const [approved, denied] = await redisCall(`reading the answer to approval ${approval}`, key, () => this.redis.hmget(key, `approved:${approval}`, `denied:${approval}`));
    if (approved) return { answer: "approved", id: approved };
    return denied ? { answer: "denied", id: denied } : null;
  }

  async dropDeadlines(entries: readonly TimerEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const key = this.keys.loopDeadlines();
    await redisCall("dropping loop deadlines", key, () => this.redis.zrem(key, ...entries.map(timerMember)));
  }
}
