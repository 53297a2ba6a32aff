/**
 * `loop-results` (LOOP-4, LOOP-7): watches each tool result after the call. When
 * `loops.no_progress` results in a row added nothing (empty, seen before in the run, the same
 * error again), only the answer is left for the rest of the run: the finish-only flag is
 * raised (so `loop-calls` refuses every later call but the answer with the same words), and a
 * `refuse` decision about the result that crossed the line carries the words the model reads.
 */
import type { ToolResult } from "../../schemas/types.ts";
import { deriveId } from "../runner/ids.ts";
import { defineProcessor, type InputRecord } from "../runner/processor.ts";
import { loopSettings, type LoopEnv } from "./calls-processor.ts";
import { functionName, summarizeResult } from "./digest.ts";
import { runLane, type LaneSpec, type LaneStep } from "./lane.ts";
import { decision, finding, finishOnlyWords, loopActed } from "./outputs.ts";
import { EMPTY_PROGRESS_STATE, startProgressAgain, watchResult, type ProgressState } from "./progress-detector.ts";
import { utcDay, type RunFlags } from "./store.ts";
import { isWatched } from "./watched.ts";

export const LOOP_RESULTS = "loop-results";

export interface ResultsLaneState {
  readonly progress: ProgressState;
  /** Approvals of the run seen so far: each one starts the counters again (LOOP-5). */
  readonly approvals: number;
}

const INITIAL: ResultsLaneState = { progress: EMPTY_PROGRESS_STATE, approvals: 0 };

export function stepResult(env: Pick<LoopEnv, "config">, state: ResultsLaneState, flags: RunFlags, result: ToolResult): LaneStep<ResultsLaneState> {
  if (!isWatched(result)) return { state, emits: [], remember: false };
  const progress = flags.approved.size > state.approvals ? startProgressAgain(state.progress) : state.progress;
  const settings = loopSettings(env.config, result);
  const step = watchResult(progress, summarizeResult(result), settings.no_progress);
  const next = { progress: step.state, approvals: flags.approved.size };
  if (!step.crossed || flags.finishOnly !== null) return { state: next, emits: [], remember: false };

  const words = finishOnlyWords(settings.no_progress);
  const numbers = { results: step.state.streak, threshold: settings.no_progress };
  const evidence = { detector: "no_progress", function: functionName(result), results: step.state.streak, last: step.nothingNew };
  const day = utcDay(result.ts);
  return {
    state: next,
    emits: [
      decision(LOOP_RESULTS, result, { verdict: "refuse", reason_code: "NoProgress", limit: "loops.no_progress", numbers, message: words, evidence }),
      finding(LOOP_RESULTS, result, { finding: "no_progress", function: functionName(result), last: step.nothingNew ?? "" }, numbers),
      loopActed(LOOP_RESULTS, result, { detector: "no_progress", day, action: "finish_only" }),
    ],
    remember: true,
    flags: [["finish_only", words]],
    counts: [{ id: deriveId(LOOP_RESULTS, result.id), day, tenant: result.tenant, plugin: result.plugin, tool: result.tool }],
  };
}

function resultsLane(env: LoopEnv): LaneSpec<ToolResult, ResultsLaneState> {
  return {
    lane: "results",
    runOf: (result) => result.run_id,
    tenantOf: (result) => result.tenant,
    initial: INITIAL,
    step: (state, flags, r: InputRecord<ToolResult>) => stepResult(env, state, flags, r.value),
    plain: () => [],
  };
}

export const loopResultsProcessor = defineProcessor<ToolResult, LoopEnv>({
  name: LOOP_RESULTS,
  input: "oz0.tool-results",
  outputs: ["oz0.call-decisions", "oz0.trace", "oz0.audit"],
  validate(result) {
    const reasons: string[] = [];
    for (const field of ["id", "tenant", "tree_id", "job_id", "run_id", "call_id"] as const) {
      if (!result[field]) reasons.push(`${field} is empty`);
    }
    return reasons;
  },
  process: (records, env) => runLane(resultsLane(env), env.store, records),
});
