/**
 * What the loop processors keep per run, as a port: a memory implementation for the test
 * driver and a Redis one (Lua, `store/redis/lua/loopCommit-2.lua`) behave the same.
 *
 * A run's loop state is split by writer so no two processors ever write the same state: the
 * calls lane (written by `loop-calls`), the results lane (written by `loop-results`), and flags
 * that are only ever raised, never changed (stop, finish-only, approvals), which every lane
 * reads. Each write is idempotent by input source and offset.
 */
export type Lane = "calls" | "results" | "approvals";

/** Raised once for a run, never lowered. Field names are the Redis hash fields. */
export interface RunFlags {
  /** The job stopped with LoopDetected: the words later calls are answered with (LOOP-5, LOOP-6). */
  readonly stopped: string | null;
  /** No progress: every tool but the answer is withdrawn, with these words (LOOP-7). */
  readonly finishOnly: string | null;
  /** Loop approvals a person approved (LOOP-5). */
  readonly approved: ReadonlySet<string>;
  /** Loop approvals a person denied, or whose deadline passed (LOOP-5). */
  readonly denied: ReadonlySet<string>;
  /** Loops waiting for a person, by approval: what the answer decides about. */
  readonly holds: ReadonlyMap<string, Deadline>;
}

export const NO_FLAGS: RunFlags = Object.freeze({ stopped: null, finishOnly: null, approved: new Set<string>(), denied: new Set<string>(), holds: new Map<string, Deadline>() });

/** A flag to raise: `stopped`, `finish_only`, `approved:<approval>`, `denied:<approval>` or `hold:<approval>` (a Deadline's member). */
export type FlagField = "stopped" | "finish_only" | `approved:${string}` | `denied:${string}` | `hold:${string}`;

export function flagsFromHash(hash: Record<string, string>): RunFlags {
  const approved = new Set<string>();
  const denied = new Set<string>();
  const holds = new Map<string, Deadline>();
  for (const [field, value] of Object.entries(hash)) {
    if (field.startsWith("approved:")) approved.add(field.slice("approved:".length));
    if (field.startsWith("denied:")) denied.add(field.slice("denied:".length));
    if (field.startsWith("hold:")) holds.set(field.slice("hold:".length), JSON.parse(value) as Deadline);
  }
  return { stopped: hash.stopped ?? null, finishOnly: hash.finish_only ?? null, approved, denied, holds };
}

export interface LaneRead {
  readonly run: string;
  readonly source: string;
  /** Offsets of this run's inputs in the batch, to look up the memos of those applied before. */
  readonly offsets: readonly string[];
}

export interface LaneSnapshot {
  /** The lane's state as JSON, or null for a run it has not seen. */
  readonly state: string | null;
  /** The newest offset of the source applied, or null. */
  readonly at: string | null;
  /** Outcomes (JSON) of applied inputs that acted on a loop or were invalid, by offset. */
  readonly memos: ReadonlyMap<string, string>;
  readonly flags: RunFlags;
}

/** A loop waiting for a person (LOOP-5): its approval, the call it holds, and when nobody deciding stops the job. */
export interface Deadline {
  readonly approval: string;
  /** Epoch milliseconds. */
  readonly at: number;
  readonly tenant: string;
  readonly tree_id: string;
  readonly job_id: string;
  readonly run_id: string;
  readonly call_id: string;
}

/** The deadline as one string, fields in a fixed order: its member in the sorted set of deadlines. */
export function deadlineMember(d: Deadline): string {
  return JSON.stringify({ approval: d.approval, at: d.at, tenant: d.tenant, tree_id: d.tree_id, job_id: d.job_id, run_id: d.run_id, call_id: d.call_id });
}

/** A loop acted on, to count (LOOP-9). Never what was said. */
export interface LoopCount {
  readonly id: string;
  readonly day: string;
  readonly tenant: string;
  readonly plugin: string;
  readonly tool: string;
}

export interface LaneWrite {
  readonly run: string;
  readonly source: string;
  /** The newest offset of this run's inputs in the batch. */
  readonly at: string;
  readonly state: string;
  readonly memos: ReadonlyArray<readonly [offset: string, outcome: string]>;
  readonly flags: ReadonlyArray<readonly [FlagField, string]>;
  /** Deadlines to start watching. */
  readonly deadlines: readonly Deadline[];
  /** Deadlines to stop watching: their loop was decided. */
  readonly settled: readonly Deadline[];
  readonly counts: readonly LoopCount[];
}

export interface LoopStore {
  /** Reads the lanes of several runs in one round trip. */
  read(lane: Lane, reads: readonly LaneRead[]): Promise<LaneSnapshot[]>;
  /** Writes the lanes of several runs in one round trip; an input applied before changes nothing. */
  write(lane: Lane, writes: readonly LaneWrite[]): Promise<void>;
  /** Deadlines of every run that passed by `now`, oldest first, at most `limit`. */
  dueDeadlines(now: number, limit: number): Promise<Deadline[]>;
  /** Stops watching deadlines (their expiry was published). */
  dropDeadlines(deadlines: readonly Deadline[]): Promise<void>;
}

export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
