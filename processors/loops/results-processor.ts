/**
 * `loop-results` (LOOP-4, LOOP-7): watches each tool result after the call, and passes every
 * result on to fit-results (`oz0.tool-results.watched`). When `loops.no_progress` results in a
 * row added nothing (empty, seen before in the run, the same error again), only the answer is
 * left for the rest of the run: the finish-only flag is raised (so `loop-calls` refuses every
 * later call but the answer with the same words), the result that crossed the line goes on
 * with the words (`no_progress`), which fit-results adds to what the model reads, and a
 * `refuse` decision about it carries them too.
 */
import type { ToolResult } from "../../schemas/types.ts";
import { deriveId } from "../runner/ids.ts";
import { defineProcessor, type Emit, type InputRecord } from "../runner/processor.ts";
import { loopSettings, type LoopEnv } from "./calls-processor.ts";
import { functionName, summarizeResult } from "./digest.ts";
import { runLane, type LaneSpec, type LaneStep } from "./lane.ts";
import { decision, finding, finishOnlyWords, loopActed } from "./outputs.ts";
import { EMPTY_PROGRESS_STATE, startProgressAgain, watchResult, type ProgressState } from "./progress-detector.ts";
import { utcDay, type RunFlags } from "./store.ts";
import { isWatched } from "./watched.ts";

export const LOOP_RESULTS = "loop-results";

/** Where every result goes on, to fit-results: chained in the pipeline's application, a topic of its own when run apart. */
export const WATCHED_TOPIC = "oz0.tool-results.watched";

export interface ResultsLaneState {
  readonly progress: ProgressState;
  /** Approvals of the run seen so far: each one starts the counters again (LOOP-5). */
  readonly approvals: number;
}

const INITIAL: ResultsLaneState = { progress: EMPTY_PROGRESS_STATE, approvals: 0 };

/** What a crossing is built again from on a replay: the streak, the threshold it crossed, what the last result was. */
export interface CrossingRecall {
  readonly results: number;
  readonly threshold: number;
  readonly last: string | null;
}

/** LOOP-7: the result on its way to fit-results, with the words of the line it crossed, or none. */
export function watched(result: ToolResult, words: string | null): Emit {
  return { to: WATCHED_TOPIC, key: result.run_id, value: { ...result, no_progress: words } satisfies ToolResult };
}

/** The outputs of a result that crossed the no-progress line: the same the first time and on a replay. */
function crossingOutputs(result: ToolResult, c: CrossingRecall): Emit[] {
  const words = finishOnlyWords(c.threshold);
  const numbers = { results: c.results, threshold: c.threshold };
  const evidence = { detector: "no_progress", function: functionName(result), results: c.results, last: c.last };
  return [
    watched(result, words),
    decision(LOOP_RESULTS, result, { verdict: "refuse", reason_code: "NoProgress", limit: "loops.no_progress", numbers, message: words, evidence }),
    finding(LOOP_RESULTS, result, { finding: "no_progress", function: functionName(result), last: c.last ?? "" }, numbers),
    loopActed(LOOP_RESULTS, result, { detector: "no_progress", day: utcDay(result.ts), action: "finish_only" }),
  ];
}

export function stepResult(env: Pick<LoopEnv, "config">, state: ResultsLaneState, flags: RunFlags, result: ToolResult): LaneStep<ResultsLaneState, CrossingRecall> {
  if (!isWatched(result)) return { state, emits: [watched(result, null)], remember: false };
  const progress = flags.approved.size > state.approvals ? startProgressAgain(state.progress) : state.progress;
  const settings = loopSettings(env.config, result);
  const step = watchResult(progress, summarizeResult(result), settings.no_progress);
  const next = { progress: step.state, approvals: flags.approved.size };
  if (!step.crossed || flags.finishOnly !== null) return { state: next, emits: [watched(result, null)], remember: false };

  const recall: CrossingRecall = { results: step.state.streak, threshold: settings.no_progress, last: step.nothingNew ?? null };
  return {
    state: next,
    emits: crossingOutputs(result, recall),
    remember: true,
    recall,
    flags: [["finish_only", finishOnlyWords(settings.no_progress)]],
    counts: [{ id: deriveId(LOOP_RESULTS, result.id), day: utcDay(result.ts), tenant: result.tenant, plugin: result.plugin, tool: result.tool }],
  };
}

function resultsLane(env: LoopEnv): LaneSpec<ToolResult, ResultsLaneState, CrossingRecall> {
  return {
    lane: "results",
    runOf: (result) => result.run_id,
    tenantOf: (result) => result.tenant,
    initial: INITIAL,
    step: (state, flags, r: InputRecord<ToolResult>) => stepResult(env, state, flags, r.value),
    plain: (r) => [watched(r.value, null)],
    replay: (r, recall) => crossingOutputs(r.value, recall),
  };
}

export const loopResultsProcessor = defineProcessor<ToolResult, LoopEnv>({
  name: LOOP_RESULTS,
  input: "oz0.tool-results",
  outputs: [WATCHED_TOPIC, "oz0.call-decisions", "oz0.trace", "oz0.audit"],
  validate(result) {
    const reasons: string[] = [];
    for (const field of ["id", "tenant", "tree_id", "job_id", "run_id", "call_id"] as const) {
      if (!result[field]) reasons.push(`${field} is empty`);
    }
    return reasons;
  },
  process: (records, env) => runLane(resultsLane(env), env.store, records),
});
