/**
 * LOOP-4: results that add nothing. Pure: the run's result state and one result in, the new
 * state out, and whether this result is the one that crossed `no_progress`.
 *
 * A result adds nothing when it is empty, or says what a result of this run said before (an
 * error said again is such a result). Any result that adds something ends the streak.
 */
import type { ResultSummary } from "./digest.ts";

/** How many result hashes a run remembers. */
export const SEEN_WINDOW = 256;

export interface ProgressState {
  /** Hashes of the run's recent results, oldest first. */
  readonly seen: readonly string[];
  /** Results in a row that added nothing. */
  readonly streak: number;
}

export const EMPTY_PROGRESS_STATE: ProgressState = Object.freeze({ seen: Object.freeze([]), streak: 0 });

export type NothingNew = "empty" | "same_error" | "seen_before";

export interface ProgressStep {
  readonly state: ProgressState;
  /** Why this result added nothing, or null when it added something. */
  readonly nothingNew: NothingNew | null;
  /** This result made the streak reach `no_progress`: from now on only the answer is left. */
  readonly crossed: boolean;
}

export function watchResult(state: ProgressState, result: ResultSummary, noProgress: number): ProgressStep {
  const before = state.seen.includes(result.hash);
  const nothingNew: NothingNew | null = result.empty ? "empty" : before ? (result.error ? "same_error" : "seen_before") : null;
  const seen = before ? state.seen : [...state.seen, result.hash].slice(-SEEN_WINDOW);
  const streak = nothingNew === null ? 0 : state.streak + 1;
  return { state: { seen, streak }, nothingNew, crossed: nothingNew !== null && streak === noProgress };
}

/** After a person approves a loop: the counters start again (what was seen stays seen). */
export function startProgressAgain(state: ProgressState): ProgressState {
  return { seen: state.seen, streak: 0 };
}
