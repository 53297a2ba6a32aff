/**
 * `loop-approvals` (LOOP-5): answers to loops waiting for a person. Reads
 * `oz0.loop-approvals` (Decision events, subject the approval ID): a person's approve (verdict
 * `allow`), a person's deny (`stop`), or a passed deadline (`stop`, from `loop-deadlines`).
 * The first answer wins. Approve: the held call is allowed and the run's counters start
 * again. Deny or no decision in time: the job stops with LoopDetected.
 */
import type { Decision } from "../../schemas/types.ts";
import { defineProcessor, type InputRecord } from "../runner/processor.ts";
import { LOOP_DEADLINES } from "./deadlines.ts";
import { runLane, type LaneSpec, type LaneStep } from "./lane.ts";
import { decision, finding, type Subject } from "./outputs.ts";
import type { LoopEnv } from "./calls-processor.ts";
import type { RunFlags } from "./store.ts";

export const LOOP_APPROVALS = "loop-approvals";

/** The approvals lane keeps nothing of its own: what it decides is in the run's flags. */
type ApprovalsLaneState = Record<string, never>;

export function stepAnswer(flags: RunFlags, answer: Decision): LaneStep<ApprovalsLaneState> | { invalid: string } {
  const approval = answer.subject;
  const hold = flags.holds.get(approval);
  if (!hold) return { invalid: `no loop of run ${answer.run_id ?? "(none)"} waits on approval ${approval}: answer an approval the run's wait decision named` };
  if (flags.approved.has(approval) || flags.denied.has(approval)) return { state: {}, emits: [], remember: false };
  const s: Subject = { ...hold, id: answer.id, ts: answer.ts };
  const facts = { approval, answered_by: answer.processor };
  if (answer.verdict === "allow") {
    const message = `A person approved the loop (approval ${approval}): the counters start again and the call is made.`;
    return {
      state: {},
      emits: [decision(LOOP_APPROVALS, s, { verdict: "allow", reason_code: "LoopApproved", message }), finding(LOOP_APPROVALS, s, { finding: "loop_approved", ...facts }, {})],
      remember: true,
      flags: [[`approved:${approval}`, answer.id]],
      settled: [hold],
    };
  }
  const why =
    answer.processor === LOOP_DEADLINES
      ? `Nobody decided on the loop (approval ${approval}) by ${new Date(hold.at).toISOString()}.`
      : `A person denied the loop (approval ${approval})${answer.message ? `: ${answer.message}` : ""}.`;
  const message = `${why} The job stopped with LoopDetected.`;
  return {
    state: {},
    emits: [decision(LOOP_APPROVALS, s, { verdict: "stop", reason_code: "LoopDetected", message, evidence: { approval: { id: approval, kind: "loop" }, answered_by: answer.processor } }), finding(LOOP_APPROVALS, s, { finding: answer.processor === LOOP_DEADLINES ? "loop_deadline_passed" : "loop_denied", ...facts }, {})],
    remember: true,
    flags: [
      [`denied:${approval}`, answer.id],
      ["stopped", message],
    ],
    settled: [hold],
  };
}

const approvalsLane: LaneSpec<Decision, ApprovalsLaneState> = {
  lane: "approvals",
  runOf: (answer) => answer.run_id ?? "",
  initial: {},
  step: (_state, flags, r: InputRecord<Decision>) => stepAnswer(flags, r.value),
  plain: () => [],
};

export const loopApprovalsProcessor = defineProcessor<Decision, LoopEnv>({
  name: LOOP_APPROVALS,
  input: "oz0.loop-approvals",
  outputs: ["oz0.call-decisions", "oz0.trace"],
  validate(answer) {
    const reasons: string[] = [];
    if (!answer.run_id) reasons.push("run_id is empty: an answer to a loop approval names the run that waits");
    if (!answer.subject) reasons.push("subject is empty: it names the approval answered");
    if (answer.verdict !== "allow" && answer.verdict !== "stop") reasons.push(`verdict is ${answer.verdict}: a loop approval is answered allow (approve) or stop (deny)`);
    return reasons;
  },
  process: (records, env) => runLane(approvalsLane, env.store, records),
});
