/**
 * `loop-approvals` (LOOP-5): answers to loops waiting for a person. Reads
 * `oz0.loop-approvals` (Decision events, subject the approval ID): a person's approve (verdict
 * `allow`), a person's deny (`stop`), or a passed deadline (`stop`, from `loop-deadlines`).
 * The first answer wins. Approve: the held call is allowed and the run's counters start
 * again. Deny or no decision in time: the job stops with LoopDetected, and the model reads the
 * words as the held call's failed result. The calls that came while it waited (and were told
 * to wait behind it) are decided with it: allowed, or stopped with their failed results. While nobody decides, each step of the tenant's
 * escalation ladder (a `wait` from `loop-deadlines`, reason LoopEscalated) is decided once: a
 * `wait` decision naming who the approval goes to now.
 */
import type { Decision } from "../../schemas/types.ts";
import { defineProcessor, type Emit, type InputRecord } from "../runner/processor.ts";
import { LOOP_DEADLINES } from "./deadlines.ts";
import { runLane, type LaneSpec, type LaneStep } from "./lane.ts";
import { decision, finding, refusedResult, type Subject } from "./outputs.ts";
import type { LoopEnv } from "./calls-processor.ts";
import type { Deadline, RunFlags } from "./store.ts";
import { stepToolAnswer } from "./tool-approval.ts";
import { closingOf, isClosing, stepClosed } from "./closing.ts";

function toolEscalation(answer: Decision): { step: number; to: string } | null {
  const esc = escalationOf(answer);
  return typeof esc === "string" ? null : esc;
}

export const LOOP_APPROVALS = "loop-approvals";

/** The approvals lane keeps nothing of its own: what it decides is in the run's flags. */
type ApprovalsLaneState = Record<string, never>;

/**
 * The calls that came while the loop waited and wait behind it: each is decided with the loop,
 * allowed when it is approved, stopped (with its failed result) when it is not.
 */
function behindOutputs(flags: RunFlags, approval: string, s: Subject, verdict: "allow" | "stop", message: string, answeredBy: string): Emit[] {
  const out: Emit[] = [];
  for (const b of flags.behind.get(approval) ?? []) {
    const call: Subject = { ...s, id: `${s.id}:${b.event_id}`, call_id: b.call_id };
    const evidence = { approval: { id: approval, kind: "loop" }, answered_by: answeredBy, behind: true };
    if (verdict === "allow") {
      out.push(decision(LOOP_APPROVALS, call, { verdict: "allow", reason_code: "LoopApproved", message: `A person approved the loop this call waited behind (approval ${approval}): the call is made.`, evidence }));
    } else {
      out.push(decision(LOOP_APPROVALS, call, { verdict: "stop", reason_code: "LoopDetected", message, evidence }));
      out.push(refusedResult(LOOP_APPROVALS, { ...call, id: b.event_id, plugin: b.plugin, tool: b.tool, function: b.function }, message));
    }
  }
  return out;
}

export function stepAnswer(flags: RunFlags, answer: Decision): LaneStep<ApprovalsLaneState> | { invalid: string } {
  const approval = answer.subject;
  const hold = flags.holds.get(approval);
  // Closed with its job's end (closing.ts): an approval no longer kept has nothing left to close.
  if (!hold && isClosing(answer)) return { state: {}, emits: [], remember: false };
  if (!hold) return { invalid: `no loop of run ${answer.run_id ?? "(none)"} waits on approval ${approval}: answer an approval the run's wait decision named` };
  if (flags.approved.has(approval) || flags.denied.has(approval)) return { state: {}, emits: [], remember: false };
  if (isClosing(answer)) return stepClosed(LOOP_APPROVALS, flags, hold, answer);
  // TOOL-3: an approval of kind tool refuses only the held call when denied.
  if (hold.kind === "tool") return stepToolAnswer(LOOP_APPROVALS, flags, hold, answer, answer.verdict === "wait" ? toolEscalation(answer) : null);
  const s: Subject = { ...hold, id: answer.id, ts: answer.ts };
  if (answer.verdict === "wait") return stepEscalation(flags, hold, s, answer);
  const facts = { approval, answered_by: answer.processor };
  if (answer.verdict === "allow") {
    const message = `A person approved the loop (approval ${approval}): the counters start again and the call is made.`;
    return {
      state: {},
      emits: [
        decision(LOOP_APPROVALS, s, { verdict: "allow", reason_code: "LoopApproved", message, evidence: { approval: { id: approval, kind: "loop" }, answered_by: answer.processor } }),
        ...behindOutputs(flags, approval, s, "allow", message, answer.processor),
        finding(LOOP_APPROVALS, s, { finding: "loop_approved", ...facts }, {}),
      ],
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
    emits: [
      decision(LOOP_APPROVALS, s, { verdict: "stop", reason_code: "LoopDetected", message, evidence: { approval: { id: approval, kind: "loop" }, answered_by: answer.processor } }),
      // The held call's result, by its event ID. Loops held before the call's event and function were kept name
      // neither: the result still answers the call ID.
      refusedResult(LOOP_APPROVALS, { ...s, id: hold.event_id ?? s.id, plugin: hold.plugin ?? "", tool: hold.tool ?? "", function: hold.function ?? "" }, message),
      ...behindOutputs(flags, approval, s, "stop", message, answer.processor),
      finding(LOOP_APPROVALS, s, { finding: answer.processor === LOOP_DEADLINES ? "loop_deadline_passed" : "loop_denied", ...facts }, {}),
    ],
    remember: true,
    flags: [
      [`denied:${approval}`, answer.id],
      ["stopped", message],
    ],
    settled: [hold],
  };
}

/** The step of the ladder an escalation names, from its evidence (`{escalation: {step, to}}`), or why it is unusable. */
export function escalationOf(answer: Pick<Decision, "evidence">): { step: number; to: string } | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.evidence ?? "null");
  } catch {
    return "evidence is not JSON: an escalation names its step as {escalation: {step, to}}";
  }
  const e = (parsed as { escalation?: { step?: unknown; to?: unknown } } | null)?.escalation;
  if (typeof e?.step !== "number" || !Number.isInteger(e.step) || e.step < 1 || typeof e.to !== "string" || e.to === "") {
    return "evidence names no escalation step: an escalation carries {escalation: {step (from 1), to}}";
  }
  return { step: e.step, to: e.to };
}

/** LOOP-5: one step of the escalation ladder, taken once while nobody has decided. */
function stepEscalation(flags: RunFlags, hold: Deadline, s: Subject, answer: Decision): LaneStep<ApprovalsLaneState> {
  const esc = escalationOf(answer);
  if (typeof esc === "string") throw new Error(`validate let an unusable escalation through: ${esc}`);
  const taken = `${hold.approval}:${esc.step}`;
  if (flags.escalated.has(taken)) return { state: {}, emits: [], remember: false };
  const deadline = new Date(hold.at).toISOString();
  const message = `Nobody has decided on the loop (approval ${hold.approval}, kind loop) yet: it goes to ${esc.to} as well (step ${esc.step} of the escalation ladder). No decision by ${deadline} stops the job with LoopDetected.`;
  return {
    state: {},
    emits: [
      decision(LOOP_APPROVALS, s, {
        verdict: "wait",
        reason_code: "LoopEscalated",
        numbers: { step: esc.step, deadline: hold.at },
        message,
        evidence: { approval: { id: hold.approval, kind: "loop", deadline }, escalation: { step: esc.step, to: esc.to, at: new Date(answer.ts).toISOString() } },
      }),
      finding(LOOP_APPROVALS, s, { finding: "loop_escalated", approval: hold.approval, to: esc.to }, { step: esc.step }),
    ],
    remember: true,
    flags: [[`escalated:${taken}`, answer.id]],
  };
}

const approvalsLane: LaneSpec<Decision, ApprovalsLaneState> = {
  lane: "approvals",
  runOf: (answer) => answer.run_id ?? "",
  tenantOf: (answer) => answer.tenant,
  initial: {},
  step: (_state, flags, r: InputRecord<Decision>) => stepAnswer(flags, r.value),
  plain: () => [],
};

export const loopApprovalsProcessor = defineProcessor<Decision, LoopEnv>({
  name: LOOP_APPROVALS,
  input: "oz0.loop-approvals",
  outputs: ["oz0.call-decisions", "oz0.trace", "oz0.results-delivered"],
  validate(answer) {
    const reasons: string[] = [];
    if (!answer.run_id) reasons.push("run_id is empty: an answer to a loop approval names the run that waits");
    if (!answer.tenant) reasons.push("tenant is empty: an answer to a loop approval names the tenant of the run that waits (a run's loop state is kept per tenant)");
    if (!answer.subject) reasons.push("subject is empty: it names the approval answered");
    if (answer.verdict === "wait") {
      if (answer.processor !== LOOP_DEADLINES || answer.reason_code !== "LoopEscalated") reasons.push(`verdict is wait from ${answer.processor}: only ${LOOP_DEADLINES} publishes a wait, an escalation step (reason LoopEscalated)`);
      else if (typeof escalationOf(answer) === "string") reasons.push(escalationOf(answer) as string);
    } else if (answer.verdict !== "allow" && answer.verdict !== "stop") reasons.push(`verdict is ${answer.verdict}: a loop approval is answered allow (approve) or stop (deny)`);
    else if (isClosing(answer) && typeof closingOf(answer) === "string") reasons.push(closingOf(answer) as string);
    return reasons;
  },
  process: (records, env) => runLane(approvalsLane, env.store, records),
});
