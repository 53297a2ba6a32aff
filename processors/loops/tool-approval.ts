/**
 * TOOL-3: a function in its tool's `requires_approval` (the plugin's manifest) waits for a person
 * before it runs, as an approval of kind `tool`, on the loop approval's machinery: the same hold
 * in the run's flags (`hold:<approval>`, with `kind: "tool"` and the call's arguments as asked),
 * the same sorted set of deadlines and escalation steps (`deadlines.ts`), the same answers on
 * `oz0.loop-approvals` from `oz0 approval approve|deny`, decided by `loop-approvals`.
 *
 * Unlike a loop, only the held call waits: the run's other calls go on, and the loop counters
 * are not touched (a held call is not counted towards a loop: each one waits for a person
 * anyway). Approved: an `allow` decision whose evidence carries the arguments the call is made
 * with (`approvedArguments`): those the person gave, else those asked. Denied, or nobody decided
 * by the deadline: a `refuse` decision and the held call's failed result, which the model reads;
 * the job goes on. A person's call by hand (origin `person`) is not held.
 *
 * Pure: `loop-calls` and `loop-approvals` call these from their steps.
 */
import type { PluginManifest } from "../../config/plugin.ts";
import { reachableSteps } from "../../config/approvals.ts";
import type { Decision, ToolCall } from "../../schemas/types.ts";
import { parseArguments } from "../call-arguments.ts";
import type { ConfigView } from "../runner/config-table.ts";
import { deriveId } from "../runner/ids.ts";
import type { Emit } from "../runner/processor.ts";
import { builtinManifest } from "../read-result/tool.ts";
import type { SettingsOf } from "./calls-processor.ts";
import { LOOP_DEADLINES } from "./deadlines.ts";
import type { LaneStep } from "./lane.ts";
import { decision, refusedResult, type Subject } from "./outputs.ts";
import type { Deadline, RunFlags } from "./store.ts";

/** When the tenant sets no deadline for approvals: a tool call waits a day for a person, as a loop does. */
export const DEFAULT_TOOL_DEADLINE_MS = 24 * 60 * 60 * 1000;

export const TOOL_APPROVAL = "ToolApproval";
export const TOOL_APPROVED = "ToolApproved";
export const TOOL_DENIED = "ToolDenied";
export const TOOL_APPROVAL_EXPIRED = "ToolApprovalExpired";
export const TOOL_APPROVAL_ESCALATED = "ToolApprovalEscalated";

/** Whether the call's function is in its tool's requires_approval, by the plugin's manifest. A tool without a manifest needs none. */
export function requiresApproval(config: ConfigView, call: Pick<ToolCall, "plugin" | "tool" | "function">): boolean {
  if (builtinManifest(call.plugin) !== undefined) return false;
  const manifest = config.get("plugin", call.plugin) as PluginManifest | undefined;
  const fn = manifest?.tools?.find((t) => t.id === call.tool)?.functions?.find((f) => f.name === call.function);
  return fn?.requires_approval === true;
}

/** A tool approval's ID: derived from the call's event ID, `t-` before it so people tell it from a loop's. */
export function toolApprovalId(call: Pick<ToolCall, "id">): string {
  return `t-${deriveId("loop-calls", "tool-approval", call.id)}`;
}

const fnName = (c: { plugin?: string; tool?: string; function?: string }): string => `${c.plugin ?? ""}/${c.tool ?? ""}.${c.function ?? ""}`;

function argumentsValue(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  const parsed = parseArguments(text);
  return typeof parsed === "string" ? text : parsed;
}

/** The wait decision of a held call: the same from the hold, the first time and on a replay alike. */
export function toolWaitOutputs(processor: string, call: ToolCall, hold: Deadline): Emit[] {
  const deadline = new Date(hold.at).toISOString();
  const message = `${fnName(call)} requires a person's approval before it runs: the call waits (approval ${hold.approval}, kind tool). A denial, or no decision by ${deadline}, refuses it.`;
  const escalation = (hold.escalation ?? []).map((e) => ({ at: new Date(e.at).toISOString(), to: e.to }));
  return [
    decision(processor, call, {
      verdict: "wait",
      reason_code: TOOL_APPROVAL,
      limit: "requires_approval",
      numbers: { deadline: hold.at },
      message,
      evidence: { approval: { id: hold.approval, kind: "tool", deadline, escalation }, function: fnName(call), arguments: argumentsValue(hold.arguments) },
    }),
  ];
}

/**
 * TOOL-3: the step of a call whose function requires approval: it waits, held in the run's
 * flags and watched by the deadline timer; null for a call that needs none. The deadline and
 * the ladder are the tenant's for approvals (`approvals.deadline`, or `loop_deadline`), a day
 * when unset.
 */
export function toolHold<S>(processor: string, config: ConfigView, settingsOf: SettingsOf, state: S, call: ToolCall): LaneStep<S, never> | null {
  if (call.origin === "person" || !requiresApproval(config, call)) return null;
  const settings = settingsOf(call);
  const approval = toolApprovalId(call);
  const waits = settings.loop_deadline ?? DEFAULT_TOOL_DEADLINE_MS;
  const escalation = reachableSteps(settings.escalation, waits).map((step) => ({ at: call.ts + step.after, to: step.to }));
  const hold: Deadline = {
    approval,
    kind: "tool",
    at: call.ts + waits,
    tenant: call.tenant,
    tree_id: call.tree_id,
    job_id: call.job_id,
    run_id: call.run_id,
    call_id: call.call_id,
    event_id: call.id,
    plugin: call.plugin,
    tool: call.tool,
    function: call.function,
    escalation,
    asked_at: call.ts,
    arguments: call.arguments,
  };
  // The outputs depend on the tenant's settings at this moment: remembered whole for a replay.
  return { state, emits: toolWaitOutputs(processor, call, hold), remember: true, flags: [[`hold:${approval}`, JSON.stringify(hold)]], deadlines: [hold] };
}

/**
 * The arguments an approval makes the call with, as JSON object text: those the person gave
 * (the answer's evidence `{arguments: {...}}`), keeping the asked call's `_meta` (files handed,
 * FILE-1) unless they give their own; else those asked. A string says why the answer is unusable.
 */
export function approvedArgumentsText(asked: string | undefined, answer: Pick<Decision, "evidence">): string | { invalid: string } {
  let given: unknown;
  try {
    given = (JSON.parse(answer.evidence ?? "null") as { arguments?: unknown } | null)?.arguments;
  } catch {
    return { invalid: "evidence is not JSON: an approval's answer carries the approved arguments as {arguments: {...}}" };
  }
  if (given === undefined || given === null) return asked ?? "{}";
  if (typeof given !== "object" || Array.isArray(given)) return { invalid: "the approved arguments are not a JSON object: approve with --arguments '{\"name\": value}'" };
  const askedValue = asked === undefined ? {} : parseArguments(asked);
  const meta = typeof askedValue === "object" ? askedValue._meta : undefined;
  const merged = meta !== undefined && !("_meta" in given) ? { ...(given as Record<string, unknown>), _meta: meta } : given;
  const text = JSON.stringify(merged);
  const bad = parseArguments(text);
  return typeof bad === "string" ? { invalid: `the approved arguments are unusable: ${bad}` } : text;
}

type AnswerState = Record<string, never>;

/**
 * `loop-approvals` on an answer to a tool approval (TOOL-3): approve, deny, the deadline, or a
 * step of the escalation ladder (`step`, parsed by the caller). The first answer wins; the
 * caller has checked the approval still waits.
 */
export function stepToolAnswer(processor: string, flags: RunFlags, hold: Deadline, answer: Decision, step: { step: number; to: string } | null): LaneStep<AnswerState> | { invalid: string } {
  const approval = hold.approval;
  const s: Subject = { ...hold, id: answer.id, ts: answer.ts };
  const about = { id: approval, kind: "tool" };
  const deadline = new Date(hold.at).toISOString();
  if (answer.verdict === "wait") {
    if (step === null) return { invalid: "an escalation names no step" };
    const taken = `${approval}:${step.step}`;
    if (flags.escalated.has(taken)) return { state: {}, emits: [], remember: false };
    const message = `Nobody has decided on the call of ${fnName(hold)} (approval ${approval}, kind tool) yet: it goes to ${step.to} as well (step ${step.step} of the escalation ladder). No decision by ${deadline} refuses the call.`;
    return {
      state: {},
      emits: [
        decision(processor, s, {
          verdict: "wait",
          reason_code: TOOL_APPROVAL_ESCALATED,
          numbers: { step: step.step, deadline: hold.at },
          message,
          evidence: { approval: { ...about, deadline }, escalation: { step: step.step, to: step.to, at: new Date(answer.ts).toISOString() } },
        }),
      ],
      remember: true,
      flags: [[`escalated:${taken}`, answer.id]],
    };
  }
  if (answer.verdict === "allow") {
    const args = approvedArgumentsText(hold.arguments, answer);
    if (typeof args !== "string") return args;
    const changed = hold.arguments !== undefined && args !== hold.arguments;
    const message = `A person approved the call of ${fnName(hold)} (approval ${approval})${changed ? " with changed arguments" : ""}: the call is made${answer.message ? `. ${answer.message}` : "."}`;
    return {
      state: {},
      emits: [decision(processor, s, { verdict: "allow", reason_code: TOOL_APPROVED, message, evidence: { approval: about, answered_by: answer.processor, arguments: argumentsValue(args), arguments_changed: changed } })],
      remember: true,
      flags: [[`approved:${approval}`, answer.id]],
      settled: [hold],
    };
  }
  const expired = answer.processor === LOOP_DEADLINES;
  const why = expired
    ? `Nobody decided on the call of ${fnName(hold)} (approval ${approval}) by ${deadline}`
    : `A person denied the call of ${fnName(hold)} (approval ${approval})${answer.message ? `: ${answer.message}` : ""}`;
  const message = `${why}. The call was not made; do without it, or answer with what you have.`;
  return {
    state: {},
    emits: [
      decision(processor, s, { verdict: "refuse", reason_code: expired ? TOOL_APPROVAL_EXPIRED : TOOL_DENIED, limit: "requires_approval", message, evidence: { approval: about, answered_by: answer.processor } }),
      // The held call's failed result, by its event ID: the model reads the refusal as the call's result.
      refusedResult(processor, { ...s, id: hold.event_id ?? s.id, plugin: hold.plugin ?? "", tool: hold.tool ?? "", function: hold.function ?? "" }, message),
    ],
    remember: true,
    flags: [[`denied:${approval}`, answer.id]],
    settled: [hold],
  };
}

/**
 * For runtimes (`oz0 mcp`, a runtime on `client/runtime-client.ts`): the arguments, as JSON
 * object text, a decision that settles a tool approval makes the call with; null for any other
 * decision (the call goes with the arguments as decided on `oz0.tool-calls`).
 */
export function approvedArguments(d: Pick<Decision, "verdict" | "evidence">): string | null {
  if (d.verdict !== "allow" || d.evidence === null) return null;
  try {
    const e = JSON.parse(d.evidence) as { approval?: { kind?: unknown }; arguments?: unknown };
    if (e.approval?.kind !== "tool" || e.arguments === null || typeof e.arguments !== "object" || Array.isArray(e.arguments)) return null;
    return JSON.stringify(e.arguments);
  } catch {
    return null;
  }
}
