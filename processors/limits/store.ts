/**
 * The state port of the limits processors: one tree's settings, counters and answers. Two
 * implementations follow the same contract: Redis (Lua scripts, what runs) and memory (the
 * pure logic of admission.ts, for unit tests). Every change is atomic per tree and idempotent
 * by the input's identity; a store that cannot answer for now throws a TransientError.
 */
import type { CallAnswer, CallAsk, CallUsage, ChildAnswer, ChildAsk, SettleAnswer, WaitAnswer } from "./admission.ts";
import type { TreeSettings } from "./tree-settings.ts";

export interface RootJob {
  readonly jobId: string;
  readonly agent: string;
  readonly runId: string;
}

export interface LimitsStore {
  /** The tree's settings (null before any were set) and the agent of one of its jobs ("" when unknown). */
  read(treeId: string, jobId: string): Promise<{ settings: TreeSettings | null; jobAgent: string }>;
  /**
   * Sets the tree's settings: authoritative ones (from the root job's start) replace
   * provisional ones (from a first model call that came before it); otherwise the first wins.
   * Returns the settings the tree holds after the call.
   */
  init(treeId: string, settings: TreeSettings, authoritative: boolean, root: RootJob | null): Promise<TreeSettings>;
  admitCall(treeId: string, ask: CallAsk): Promise<CallAnswer>;
  settleCall(treeId: string, usage: CallUsage): Promise<SettleAnswer>;
  rewarm(treeId: string, requestId: string, cost: number): Promise<SettleAnswer>;
  child(treeId: string, phase: "ask" | "start", ask: ChildAsk): Promise<ChildAnswer>;
  endJob(treeId: string, jobId: string, root: boolean): Promise<void>;
  wait(treeId: string, eventId: string, jobId: string, kind: "started" | "ended", ts: number): Promise<WaitAnswer>;
  /** Settled spend, or null when the store keeps no state for the tree. */
  spent(treeId: string): Promise<number | null>;
}
