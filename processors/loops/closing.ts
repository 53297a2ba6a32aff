/**
 * Approvals closed with their job's end. A loop (LOOP-5) or a tool call
 * (TOOL-3) waiting for a person belongs to a job; once that job has ended (its runtime reported
 * its end, as `oz0 mcp` does when its session closes; a stop or refusal ended it; its timeout
 * passed: `processors/limits/standing.ts`), nobody can use an answer any more. The deadline
 * timer (`deadlines.ts`) finds such approvals among those it watches and publishes a closing
 * answer on `oz0.loop-approvals` (from `loop-deadlines`, reason ApprovalClosed, the job's
 * ending in its evidence); `loop-approvals` settles the hold with it like any first answer:
 * the held call (and the calls waiting behind a loop) is refused with the job's ending, the
 * approval leaves `oz0 approval list`, and the audit log records it as closed with the job's
 * ending code. A person's answer that came first wins, as always; a closing answer published
 * twice is one answer.
 *
 * Pure: the timer reads the standings, the processor calls `stepClosed`.
 */
import type { Decision } from "../../schemas/types.ts";
import { endedWords, standingOf, type Ending } from "../limits/standing.ts";
import type { AgentDefinition } from "../../config/agent.ts";
import { deriveId } from "../runner/ids.ts";
import type { Emit } from "../runner/processor.ts";
import type { LaneStep } from "./lane.ts";
import { decision, refusedResult, type Subject } from "./outputs.ts";
import type { Deadline, RunFlags, TimerEntry } from "./store.ts";

/** The reason code of an answer that closes an approval with its job's end. */
export const APPROVAL_CLOSED = "ApprovalClosed";

/** Who publishes closing answers (the deadline timer: `deadlines.ts`'s LOOP_DEADLINES). */
const TIMER = "loop-deadlines";

/** The job's ending, as a closing answer carries it in its evidence. */
export interface Closing {
  readonly code: string;
  readonly limit: string | null;
  readonly message: string;
}

/** The answer that closes a waiting approval with its job's end: deterministic, so published twice it is one answer. */
export function closingAnswer(e: Pick<TimerEntry, "approval" | "tenant" | "tree_id" | "job_id" | "run_id">, ending: Pick<Ending, "code" | "limit" | "message">, now: number): Decision {
  const closed: Closing = { code: ending.code, limit: ending.limit, message: ending.message };
  return {
    id: deriveId(TIMER, e.approval, "closed"),
    input_id: e.approval,
    processor: TIMER,
    tenant: e.tenant,
    tree_id: e.tree_id,
    job_id: e.job_id,
    run_id: e.run_id,
    subject: e.approval,
    verdict: "stop",
    reason_code: APPROVAL_CLOSED,
    limit: ending.limit,
    numbers: {},
    message: endedWords(e.job_id, ending),
    evidence: JSON.stringify({ closed }),
    ts: now,
  };
}

/** Whether an answer on `oz0.loop-approvals` is a closing one. */
export const isClosing = (d: Pick<Decision, "processor" | "reason_code">): boolean => d.processor === TIMER && d.reason_code === APPROVAL_CLOSED;

/** The ending a closing answer carries, or why it is unusable. */
export function closingOf(d: Pick<Decision, "evidence">): Closing | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(d.evidence ?? "null");
  } catch {
    return "evidence is not JSON: a closing answer carries the job's ending as {closed: {code, limit, message}}";
  }
  const c = (parsed as { closed?: Partial<Closing> } | null)?.closed;
  if (typeof c?.code !== "string" || c.code === "" || typeof c.message !== "string") return "evidence names no ending: a closing answer carries {closed: {code, limit, message}}";
  return { code: c.code, limit: typeof c.limit === "string" ? c.limit : null, message: c.message };
}

/**
 * The job's ending for the approvals of one job, from the limits hash's fields
 * (`standingFields`), or null while it runs. `agentOf` gives the agent's definition (its
 * `limits.timeout`); without one, only the endings kept are read (a passed timeout needs the
 * agent's definition to be known).
 */
export function jobEnding(fields: ReadonlyArray<string | null | undefined>, now: number, agentOf: ((name: string) => AgentDefinition | undefined) | null): Ending | null {
  return standingOf(fields, now, agentOf ?? (() => undefined), "", { timeout: agentOf !== null }).ending;
}

/**
 * `loop-approvals` on a closing answer: the held call is refused with the job's ending (its
 * failed result by its event ID, so a runtime still waiting reads it), and so is every call
 * waiting behind a loop; the approval is settled as denied, and marked closed with the ending's code.
 */
export function stepClosed(processor: string, flags: RunFlags, hold: Deadline, answer: Decision): LaneStep<Record<string, never>> | { invalid: string } {
  const closing = closingOf(answer);
  if (typeof closing === "string") return { invalid: closing };
  const approval = hold.approval;
  const kind = hold.kind ?? "loop";
  const s: Subject = { ...hold, id: answer.id, ts: answer.ts };
  const message = `Approval ${approval} (kind ${kind}) is closed with the job's end: ${endedWords(hold.job_id, closing)}`;
  const evidence = { approval: { id: approval, kind }, answered_by: answer.processor, closed: { code: closing.code } };
  const refusal = { verdict: "refuse" as const, reason_code: closing.code, limit: closing.limit, message, evidence };
  const emits: Emit[] = [
    decision(processor, s, refusal),
    refusedResult(processor, { ...s, id: hold.event_id ?? s.id, plugin: hold.plugin ?? "", tool: hold.tool ?? "", function: hold.function ?? "" }, message),
  ];
  for (const b of flags.behind.get(approval) ?? []) {
    const call: Subject = { ...s, id: `${s.id}:${b.event_id}`, call_id: b.call_id };
    emits.push(decision(processor, call, { ...refusal, evidence: { ...evidence, behind: true } }));
    emits.push(refusedResult(processor, { ...call, id: b.event_id, plugin: b.plugin, tool: b.tool, function: b.function }, message));
  }
  return {
    state: {},
    emits,
    remember: true,
    flags: [
      [`denied:${approval}`, answer.id],
      [`closed:${approval}`, closing.code],
    ],
    settled: [hold],
  };
}
