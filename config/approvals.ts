/**
 * A tenant's approvals (LOOP-5): how long an approval waits for a decision, and its escalation
 * ladder: to whom it goes, in order, while nobody has decided. A loop waiting for a person is
 * such an approval (kind loop), so its deadline and ladder are these.
 */
import { readDuration, readText, required, withoutUndefined } from "./fields.ts";
import { formatDuration } from "./units.ts";
import type { Value } from "./yaml-file.ts";

/** One step of the ladder: once `after` has passed with no decision, the approval goes to `to` as well. */
export interface EscalationStep {
  /** Milliseconds after the approval was asked for. */
  readonly after: number;
  /** Who it goes to: a group or a person, as the approval service names them. */
  readonly to: string;
}

export interface TenantApprovals {
  /** Milliseconds an approval waits for a decision; the same setting as `loop_deadline`, which is its older name. @default a day */
  readonly deadline?: number;
  /** Steps in the order they are taken, each `after` later than the one before and before the deadline. @default [] */
  readonly escalation?: readonly EscalationStep[];
}

/**
 * Reads `approvals: {deadline, escalation: [{after, to}, ...]}`. `loopDeadline` is the tenant's
 * `loop_deadline`, when written: the two name the same deadline, so only one may be set.
 */
export function readApprovals(v: Value, loopDeadline: { readonly written: boolean; readonly ms: number | undefined }): TenantApprovals | undefined {
  const fields = v.mapping(["deadline", "escalation"], { after: "approvals.escalation[n]", to: "approvals.escalation[n]" });
  if (fields === undefined || v.absent) return undefined;
  const deadlineValue = fields.get("deadline");
  const deadline = readDuration(deadlineValue, { min: 1, what: "how long an approval waits for a decision" });
  if (deadline !== undefined && loopDeadline.written) {
    deadlineValue.fail("is set twice: loop_deadline is the older name of approvals.deadline; keep one of them");
  }
  const limit = deadline ?? loopDeadline.ms;
  const steps: EscalationStep[] = [];
  for (const item of fields.get("escalation").list("escalation steps, each {after: 15m, to: <group>}") ?? []) {
    const step = readStep(item);
    if (step === undefined) continue;
    const before = steps.at(-1);
    if (before !== undefined && step.after <= before.after) {
      item.fail(`after ${formatDuration(step.after)} does not come after the step before (${formatDuration(before.after)}): list the steps in the order they are taken`);
      continue;
    }
    if (limit !== undefined && step.after >= limit) {
      item.fail(`after ${formatDuration(step.after)} is not before the deadline (${formatDuration(limit)}): the approval is decided by then`);
      continue;
    }
    steps.push(step);
  }
  return withoutUndefined({ deadline, escalation: steps.length > 0 ? steps : undefined });
}

function readStep(v: Value): EscalationStep | undefined {
  if (v.absent) return v.fail("expected an escalation step {after: 15m, to: <group>}; got nothing");
  const fields = v.mapping(["after", "to"]);
  if (fields === undefined) return undefined;
  const after = required(fields.get("after"), (x) => readDuration(x, { min: 1, what: "how long after the ask nobody has decided" }), "how long after the ask nobody has decided, such as 15m");
  const to = required(fields.get("to"), (x) => readText(x, "who the approval goes to, a group or a person"), "who the approval goes to, such as team-leads");
  return after === undefined || to === undefined ? undefined : { after, to };
}

/**
 * The escalation steps that can still be taken before `deadline` (milliseconds after the ask),
 * in order. A step at or past the deadline would come after the approval is decided.
 */
export function reachableSteps(steps: readonly EscalationStep[] | undefined, deadline: number): EscalationStep[] {
  return (steps ?? []).filter((s) => s.after < deadline);
}
