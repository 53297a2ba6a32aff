/**
 * LOOP-2, LOOP-3, LOOP-8: finds repeats and cycles in a run's calls, before each call is made.
 * Pure: the run's call state and one call in, the new state and any loop out.
 *
 * - repeats: the same signature (function + arguments digest) `repeats` times among the run's
 *   last `window` calls since the counters last started again. Not only in a row: an agent
 *   that reads the same page between other calls still spins; the window keeps a long run's
 *   rare legitimate re-reads apart. Changed arguments (the next page) are another signature.
 * - cycles: the last 2..4 signatures repeated `cycles` times in a row, shortest first; a
 *   sequence of one signature is a repeat, not a cycle.
 * - harness (LOOP-8): a harness session's own calls count only as the same call again with no
 *   other call between, and are never part of a cycle.
 */

/** How many recent calls a run keeps, unless `cycles` needs more. */
export const CALL_WINDOW = 32;

export interface CallState {
  /** Signatures of the run's recent calls (not the harness's own), oldest first. */
  readonly recent: readonly string[];
  /** The run's newest call of any origin and how many times in a row it came. */
  readonly streak: { readonly signature: string; readonly count: number } | null;
}

export const EMPTY_CALL_STATE: CallState = Object.freeze({ recent: Object.freeze([]), streak: null });

export type CallDetector = "repeats" | "cycles" | "harness_repeats";

export interface LoopFound {
  readonly detector: CallDetector;
  /** The calls that make the loop, oldest first, as signatures. */
  readonly calls: readonly string[];
  /** How many times the repeated call, or the sequence, came. */
  readonly count: number;
}

export interface CallThresholds {
  readonly repeats: number;
  readonly cycles: number;
}

export interface WatchedCall {
  readonly signature: string;
  /** A harness session's own tool (origin `harness`). */
  readonly harness: boolean;
}

export function callWindow(t: CallThresholds): number {
  return Math.max(CALL_WINDOW, t.repeats, 4 * t.cycles);
}

/** Observes one call; `loop` is set when this call completes a loop. */
export function watchCall(state: CallState, call: WatchedCall, t: CallThresholds): { state: CallState; loop: LoopFound | null } {
  const streak = state.streak?.signature === call.signature ? { signature: call.signature, count: state.streak.count + 1 } : { signature: call.signature, count: 1 };
  if (call.harness) {
    const next = { recent: state.recent, streak };
    const loop = streak.count >= t.repeats ? { detector: "harness_repeats" as const, calls: Array<string>(streak.count).fill(call.signature), count: streak.count } : null;
    return { state: next, loop };
  }
  // The last `window` signatures with this one, as `[...recent, signature].slice(-window)` without the copy in between.
  const recent = state.recent.slice(Math.max(0, state.recent.length + 1 - Math.trunc(callWindow(t))));
  recent.push(call.signature);
  const next = { recent, streak };
  return { state: next, loop: findRepeat(recent, call.signature, t.repeats) ?? findCycle(recent, t.cycles) };
}

function findRepeat(recent: readonly string[], signature: string, repeats: number): LoopFound | null {
  let count = 0;
  for (const s of recent) if (s === signature) count++;
  return count >= repeats ? { detector: "repeats", calls: Array<string>(count).fill(signature), count } : null;
}

/** The last 2..4 signatures repeated `cycles` times in a row, compared in place (this runs for every call). */
function findCycle(recent: readonly string[], cycles: number): LoopFound | null {
  // Thresholds come validated as whole numbers from 2; anything else takes the general path.
  if (!Number.isInteger(cycles) || cycles < 1) return findCycleBySlices(recent, cycles);
  for (let length = 2; length <= 4; length++) {
    const span = length * cycles;
    if (recent.length < span) return null;
    const start = recent.length - span;
    const first = recent[start];
    let distinct = false;
    for (let i = 1; i < length && !distinct; i++) distinct = recent[start + i] !== first;
    if (!distinct) continue;
    let repeated = true;
    for (let i = length; i < span && repeated; i++) repeated = recent[start + i] === recent[start + (i % length)];
    if (repeated) return { detector: "cycles", calls: recent.slice(start), count: cycles };
  }
  return null;
}

function findCycleBySlices(recent: readonly string[], cycles: number): LoopFound | null {
  for (let length = 2; length <= 4; length++) {
    const span = length * cycles;
    if (recent.length < span) return null;
    const tail = recent.slice(-span);
    const sequence = tail.slice(0, length);
    if (new Set(sequence).size < 2) continue;
    if (tail.every((s, i) => s === sequence[i % length])) return { detector: "cycles", calls: tail, count: cycles };
  }
  return null;
}

/** After a person approves a loop, or a loop is reported: the counters start again. */
export function startAgain(): CallState {
  return EMPTY_CALL_STATE;
}
