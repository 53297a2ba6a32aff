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
  /** Escalation steps taken (LOOP-5), as `<approval>:<step>`. */
  readonly escalated: ReadonlySet<string>;
  /** Calls of the run that came while a loop waited and wait behind it, by approval (LOOP-5): the answer decides them too. */
  readonly behind: ReadonlyMap<string, readonly BehindCall[]>;
  /** Approvals closed with their job's end, by approval: the ending's code. Read as denied as well (`denied:` is raised with it). */
  readonly closed?: ReadonlyMap<string, string>;
}

/** A call that waits behind a loop waiting for a person: what its decision and failed result name. */
export interface BehindCall {
  /** The call's event ID: a runtime awaits the call's result by it. */
  readonly event_id: string;
  readonly call_id: string;
  readonly plugin: string;
  readonly tool: string;
  readonly function: string;
}

export const NO_FLAGS: RunFlags = Object.freeze({
  stopped: null,
  finishOnly: null,
  approved: new Set<string>(),
  denied: new Set<string>(),
  holds: new Map<string, Deadline>(),
  escalated: new Set<string>(),
  behind: new Map<string, readonly BehindCall[]>(),
});

/** `behind:<approval>:<call event ID>`: approval IDs hold no colon (`a-` and hex), so the first one after the prefix ends it. */
export function behindField(approval: string, eventId: string): FlagField {
  return `behind:${approval}:${eventId}`;
}

/** Adds one call behind its approval, once: the same field read again changes nothing. */
export function withBehind(behind: ReadonlyMap<string, readonly BehindCall[]>, field: string, value: string): ReadonlyMap<string, readonly BehindCall[]> {
  const rest = field.slice("behind:".length);
  const approval = rest.slice(0, rest.indexOf(":"));
  const call = JSON.parse(value) as BehindCall;
  const calls = behind.get(approval) ?? [];
  if (calls.some((c) => c.event_id === call.event_id)) return behind;
  return new Map([...behind, [approval, [...calls, call]]]);
}

/**
 * A flag to raise: `stopped`, `finish_only`, `approved:<approval>`, `denied:<approval>`,
 * `hold:<approval>` (the Deadline as JSON), `escalated:<approval>:<step>`,
 * `behind:<approval>:<call event ID>` (a BehindCall as JSON) or `closed:<approval>` (the
 * ending code of the job the approval was closed with).
 */
export type FlagField = "stopped" | "finish_only" | `approved:${string}` | `denied:${string}` | `hold:${string}` | `escalated:${string}` | `behind:${string}` | `closed:${string}`;

export function flagsFromHash(hash: Record<string, string>): RunFlags {
  const approved = new Set<string>();
  const denied = new Set<string>();
  const holds = new Map<string, Deadline>();
  const escalated = new Set<string>();
  const closed = new Map<string, string>();
  let behind: ReadonlyMap<string, readonly BehindCall[]> = new Map();
  for (const [field, value] of Object.entries(hash)) {
    if (field.startsWith("behind:")) behind = withBehind(behind, field, value);
    if (field.startsWith("escalated:")) escalated.add(field.slice("escalated:".length));
    if (field.startsWith("approved:")) approved.add(field.slice("approved:".length));
    if (field.startsWith("denied:")) denied.add(field.slice("denied:".length));
    if (field.startsWith("hold:")) holds.set(field.slice("hold:".length), JSON.parse(value) as Deadline);
    if (field.startsWith("closed:")) closed.set(field.slice("closed:".length), value);
  }
  return { stopped: hash.stopped ?? null, finishOnly: hash.finish_only ?? null, approved, denied, holds, escalated, behind, ...(closed.size > 0 ? { closed } : {}) };
}

export interface LaneRead {
  /** The run's tenant: run IDs come from runtimes, so a run's state is kept per tenant and run. */
  readonly tenant: string;
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

/**
 * A loop waiting for a person (LOOP-5): its approval, the call it holds, when nobody deciding
 * stops the job, and the steps of its escalation ladder. Loops held before the ladder and the
 * call's function were kept have neither.
 */
export interface Deadline {
  readonly approval: string;
  /** Epoch milliseconds. */
  readonly at: number;
  readonly tenant: string;
  readonly tree_id: string;
  readonly job_id: string;
  readonly run_id: string;
  readonly call_id: string;
  /** The held call's event ID: a runtime awaits the call's result by it (`input_id`). */
  readonly event_id?: string;
  /** The held call's plugin, tool and function: what a failed result for it names. */
  readonly plugin?: string;
  readonly tool?: string;
  readonly function?: string;
  /** When each step of the tenant's escalation ladder is taken (epoch milliseconds, before `at`), in order. */
  readonly escalation?: ReadonlyArray<{ readonly at: number; readonly to: string }>;
  /** When the loop was found: the held call's time (epoch milliseconds). */
  readonly asked_at?: number;
  /** What the loop was, as the wait decision's evidence says it, for the people who answer (`oz0 approval list`). */
  readonly evidence?: LoopEvidence;
  /** What waits: a loop (LOOP-5), or a call of a function in its tool's requires_approval (TOOL-3). @default "loop" */
  readonly kind?: "loop" | "tool";
  /** TOOL-3: the held call's arguments as asked (JSON object text, as the call carries them): what an approval without other arguments makes the call with. */
  readonly arguments?: string;
}

/** A loop's evidence: its detector, the calls of the loop, the held call's arguments, the count and the threshold. */
export interface LoopEvidence {
  readonly detector: string;
  readonly calls?: ReadonlyArray<{ readonly function: string; readonly args_digest: string }>;
  readonly arguments?: unknown;
  readonly count: number;
  readonly threshold: number;
}

/**
 * One moment the deadline timer watches: a waiting loop's deadline (no `step`), or one step of
 * its escalation ladder (`step` from 1, and who it goes `to`).
 */
export interface TimerEntry extends Pick<Deadline, "approval" | "at" | "tenant" | "tree_id" | "job_id" | "run_id" | "call_id"> {
  readonly step?: number;
  readonly to?: string;
}

/** The entry as one string, fields in a fixed order: its member in the sorted set of deadlines. */
export function timerMember(e: TimerEntry): string {
  const base = { approval: e.approval, at: e.at, tenant: e.tenant, tree_id: e.tree_id, job_id: e.job_id, run_id: e.run_id, call_id: e.call_id };
  return JSON.stringify(e.step === undefined ? base : { ...base, step: e.step, to: e.to });
}

/** The deadline's own member in the sorted set of deadlines (the same as before ladders were kept). */
export function deadlineMember(d: Deadline): string {
  return timerMember({ approval: d.approval, at: d.at, tenant: d.tenant, tree_id: d.tree_id, job_id: d.job_id, run_id: d.run_id, call_id: d.call_id });
}

/** What the timer watches for a waiting loop: each step of its ladder, then its deadline. */
export function timerEntries(d: Deadline): TimerEntry[] {
  const base = { approval: d.approval, tenant: d.tenant, tree_id: d.tree_id, job_id: d.job_id, run_id: d.run_id, call_id: d.call_id };
  return [...(d.escalation ?? []).map((s, i) => ({ ...base, at: s.at, step: i + 1, to: s.to })), { ...base, at: d.at }];
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
  readonly tenant: string;
  readonly run: string;
  readonly source: string;
  /** The newest offset of this run's inputs in the batch. */
  readonly at: string;
  /**
   * The first offset of the batch from this source (`InputRecord.batchStart`; -1 where the
   * source cannot say). Every offset before it was committed, so Kafka never hands it out
   * again and no replay needs its memo: the run's memos from this source before it are dropped.
   */
  readonly from: string;
  readonly state: string;
  readonly memos: ReadonlyArray<readonly [offset: string, outcome: string]>;
  readonly flags: ReadonlyArray<readonly [FlagField, string]>;
  /** Deadlines to start watching, with their escalation steps. */
  readonly deadlines: readonly Deadline[];
  /** Deadlines to stop watching, with their escalation steps: their loop was decided. */
  readonly settled: readonly Deadline[];
  readonly counts: readonly LoopCount[];
}

export interface LoopStore {
  /** Reads the lanes of several runs in one round trip. */
  read(lane: Lane, reads: readonly LaneRead[]): Promise<LaneSnapshot[]>;
  /** Writes the lanes of several runs in one round trip; an input applied before changes nothing. */
  write(lane: Lane, writes: readonly LaneWrite[]): Promise<void>;
  /** Deadlines and escalation steps of every run that passed by `now`, oldest first, at most `limit`. */
  dueDeadlines(now: number, limit: number): Promise<TimerEntry[]>;
  /** Stops watching deadlines and escalation steps (what they give was published). */
  dropDeadlines(entries: readonly TimerEntry[]): Promise<void>;
}

export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
