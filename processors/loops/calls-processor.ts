/**
 * `loop-calls` (LOOP-2, LOOP-3, LOOP-5..LOOP-8): decides each tool call before it is made.
 * Allows it; or, when it completes a repeat or a cycle, acts on the agent's on_loop: waits for
 * a person (an approval of kind loop), stops the job with LoopDetected, or reports a
 * possible_loop finding and lets it go. Refuses every call but the answer once no progress
 * has left only the answer (LOOP-7), every call of a tool an admin switched off (LOOP-9),
 * every call handed a file above its agent's clearance (OFF-9: the fill-in withheld the file,
 * `processors/files/arguments.ts`), and stops every call of a stopped job. A call refused or
 * stopped is not made: the model reads the words as its failed result. Each loop acted on
 * goes to the audit log (LOOP-9).
 */
import type { AgentDefinition } from "../../config/agent.ts";
import { reachableSteps } from "../../config/approvals.ts";
import { asKillSwitch, killSwitchId, killSwitchWords } from "../../config/kill-switch.ts";
import { resolveLoopSettings, type EffectiveLoopSettings } from "../../config/resolve.ts";
import type { TenantSettings } from "../../config/tenant.ts";
import type { ToolCall } from "../../schemas/types.ts";
import type { ConfigView } from "../runner/config-table.ts";
import { deriveId } from "../runner/ids.ts";
import { defineProcessor, type Emit, type InputRecord } from "../runner/processor.ts";
import { EMPTY_CALL_STATE, startAgain, watchCall, type CallDetector, type CallState } from "./call-detector.ts";
import { parseArguments } from "../call-arguments.ts";
import { withheldFilesRefusal } from "../files/arguments.ts";
import { callSignature, functionName, splitSignature } from "./digest.ts";
import { runLane, type LaneSpec, type LaneStep } from "./lane.ts";
import { endedWords, endingFor, endingsOf, NO_STANDING, standingsOf, type Standing } from "../limits/standing.ts";
import type { StandingStore } from "../limits/store.ts";
import { decision, finding, loopActed, loopWords, refusedResult, type Subject } from "./outputs.ts";
import { behindField, utcDay, type BehindCall, type Deadline, type LoopEvidence, type LoopStore, type RunFlags } from "./store.ts";
import { isAnswer, isWatched } from "./watched.ts";
import { toolHold } from "./tool-approval.ts";
import { toolNotAllowed } from "./tool-policy.ts";

export const LOOP_CALLS = "loop-calls";

/** OFF-9: the reason a call handed a file above the agent's clearance is refused with. */
export const CLEARANCE = "ClearanceExceeded";

/** When the tenant sets no loop_deadline: a loop's approval waits a day for a person. */
export const DEFAULT_LOOP_DEADLINE_MS = 24 * 60 * 60 * 1000;

export interface LoopEnv {
  readonly config: ConfigView;
  readonly store: LoopStore;
  /** Endings bind: how each call's job stands (processors/limits/standing.ts). Left out, nothing is checked or kept. */
  readonly standing?: StandingStore;
}

/** A loop waiting for a person (LOOP-5). */
export interface Hold {
  readonly approval: string;
  readonly call_id: string;
  readonly deadline: number;
}

export interface CallsLaneState {
  readonly calls: CallState;
  readonly hold: Hold | null;
}

const INITIAL: CallsLaneState = { calls: EMPTY_CALL_STATE, hold: null };

export function loopSettings(config: ConfigView, call: Pick<ToolCall, "agent" | "tenant" | "origin">): EffectiveLoopSettings {
  const agent = config.get("agent", call.agent) as AgentDefinition | undefined;
  const tenant = config.get("tenant", call.tenant) as TenantSettings | undefined;
  return resolveLoopSettings(agent, tenant, { harness: call.origin === "harness" });
}

/** A call's loop settings, resolved once per agent, tenant and harness-or-not. */
export type SettingsOf = (call: Pick<ToolCall, "agent" | "tenant" | "origin">) => EffectiveLoopSettings;

/**
 * `loopSettings` remembered for one batch: they depend only on the agent, the tenant and
 * whether the call is a harness's, and a batch is decided without yielding, so the
 * configuration cannot change under it.
 */
export function settingsPerBatch(config: ConfigView): SettingsOf {
  const known = new Map<string, EffectiveLoopSettings>();
  return (call) => {
    const key = `${call.agent}\u0000${call.tenant}\u0000${call.origin === "harness" ? "h" : ""}`;
    let settings = known.get(key);
    if (settings === undefined) {
      settings = loopSettings(config, call);
      known.set(key, settings);
    }
    return settings;
  };
}

/** What `parseArguments` made of a call's arguments, kept with the call: `validate` parses them, the digest and the evidence reuse it. */
const parsed = new WeakMap<ToolCall, { readonly text: string; readonly value: Record<string, unknown> | string }>();

function argumentsOf(call: ToolCall): Record<string, unknown> | string {
  const known = parsed.get(call);
  if (known !== undefined && known.text === call.arguments) return known.value;
  const value = parseArguments(call.arguments);
  parsed.set(call, { text: call.arguments, value });
  return value;
}

/**
 * A loop acted on, as remembered for a replay: with the call, every output of the call is built
 * from it. Thresholds, on_loop and the wait's times are kept as they were then, since the
 * settings may change before a replay.
 */
export interface Acted {
  readonly detector: CallDetector;
  /** The loop's calls as signatures, oldest first; left out when they are the call's own signature `count` times (a repeat). */
  readonly calls?: readonly string[];
  readonly count: number;
  readonly threshold: number;
  readonly on_loop: EffectiveLoopSettings["on_loop"];
  /** wait: when the approval's deadline passes, and when each step of its escalation ladder is taken (epoch ms). */
  readonly deadline?: number;
  readonly escalation?: ReadonlyArray<{ readonly at: number; readonly to: string }>;
}

function loopCallsOf(call: ToolCall, acted: Acted): readonly string[] {
  return acted.calls ?? Array<string>(acted.count).fill(callSignature(call, argumentsOf(call)));
}

function loopEvidence(acted: Acted, call: ToolCall): LoopEvidence {
  return { detector: acted.detector, calls: loopCallsOf(call, acted).map(splitSignature), arguments: argumentsOf(call), count: acted.count, threshold: acted.threshold };
}

function evidence(acted: Acted, call: ToolCall, approval?: { id: string; deadline: number; escalation: ReadonlyArray<{ at: number; to: string }> }): unknown {
  return {
    ...loopEvidence(acted, call),
    ...(approval
      ? { approval: { id: approval.id, kind: "loop", deadline: new Date(approval.deadline).toISOString(), escalation: approval.escalation.map((e) => ({ at: new Date(e.at).toISOString(), to: e.to })) } }
      : {}),
  };
}

/** A loop approval's ID: `a-` before the derived part, so people tell it from a tool's (`t-`), and it never begins with "-", which a command line would take for an option. */
const approvalOf = (call: ToolCall): string => `a-${deriveId(LOOP_CALLS, "approval", call.id)}`;

function stoppedWords(call: ToolCall, acted: Acted): string {
  return `${loopWords(acted.detector, functionName(call), acted.count)} The job stopped with LoopDetected.`;
}

/** Every output of a call that completed a loop, from the call and the loop as remembered: the first time and on a replay alike. */
export function actedOutputs(call: ToolCall, acted: Acted): Emit[] {
  const s: Subject = call;
  const limit = acted.detector === "cycles" ? "loops.cycles" : "loops.repeats";
  const fn = functionName(call);
  const words = loopWords(acted.detector, fn, acted.count);
  const numbers = { count: acted.count, threshold: acted.threshold };
  const facts = { detector: acted.detector, function: fn, on_loop: acted.on_loop };
  const audit = loopActed(LOOP_CALLS, call, { detector: acted.detector, day: utcDay(call.ts), action: acted.on_loop });
  if (acted.on_loop === "report") {
    return [
      decision(LOOP_CALLS, s, { verdict: "report", reason_code: "possible_loop", limit, numbers, message: words, evidence: evidence(acted, call) }),
      finding(LOOP_CALLS, s, { finding: "possible_loop", ...facts }, numbers),
      audit,
    ];
  }
  if (acted.on_loop === "stop") {
    const message = stoppedWords(call, acted);
    return [
      decision(LOOP_CALLS, s, { verdict: "stop", reason_code: "LoopDetected", limit, numbers, message, evidence: evidence(acted, call) }),
      refusedResult(LOOP_CALLS, call, message),
      finding(LOOP_CALLS, s, { finding: "loop_stopped", ...facts }, numbers),
      audit,
    ];
  }
  const approval = approvalOf(call);
  const deadline = acted.deadline ?? call.ts + DEFAULT_LOOP_DEADLINE_MS;
  const escalation = acted.escalation ?? [];
  const message = `${words} It waits for a person to approve it (approval ${approval}, kind loop); a denial, or no decision by ${new Date(deadline).toISOString()}, stops the job with LoopDetected.`;
  return [
    decision(LOOP_CALLS, s, { verdict: "wait", reason_code: "LoopDetected", limit, numbers: { ...numbers, deadline }, message, evidence: evidence(acted, call, { id: approval, deadline, escalation }) }),
    finding(LOOP_CALLS, s, { finding: "loop_waits", approval, ...facts }, numbers),
    audit,
  ];
}

function act(settingsOf: SettingsOf, state: CallsLaneState, flags: RunFlags, call: ToolCall): LaneStep<CallsLaneState, CallRecall> {
  const s: Subject = call;
  const settings = settingsOf(call);
  const signature = callSignature(call, argumentsOf(call));
  const { state: calls, loop } = watchCall(state.calls, { signature, harness: call.origin === "harness" }, settings);
  if (!loop) return { state: { ...state, calls }, emits: [decision(LOOP_CALLS, s, { verdict: "allow" })], remember: false };

  // A repeat's calls are the call itself, count times: kept only when they are anything else.
  const own = loop.calls.length === loop.count && loop.calls.every((c) => c === signature);
  const found = { detector: loop.detector, ...(own ? {} : { calls: loop.calls }), count: loop.count, threshold: loop.detector === "cycles" ? settings.cycles : settings.repeats };
  const count = { id: deriveId(LOOP_CALLS, s.id), day: utcDay(call.ts), tenant: call.tenant, plugin: call.plugin, tool: call.tool };

  if (settings.on_loop === "report") {
    const acted: Acted = { ...found, on_loop: "report" };
    return { state: { ...state, calls: startAgain() }, emits: actedOutputs(call, acted), remember: true, recall: { acted }, counts: [count] };
  }
  if (settings.on_loop === "stop") {
    const acted: Acted = { ...found, on_loop: "stop" };
    return { state: { ...state, calls }, emits: actedOutputs(call, acted), remember: true, recall: { acted }, flags: [["stopped", stoppedWords(call, acted)]], counts: [count] };
  }
  const approval = approvalOf(call);
  const waits = settings.loop_deadline ?? DEFAULT_LOOP_DEADLINE_MS;
  const deadline = call.ts + waits;
  // LOOP-5: the tenant's escalation ladder, each step from the ask; a step at or past the deadline is never reached.
  const escalation = reachableSteps(settings.escalation, waits).map((step) => ({ at: call.ts + step.after, to: step.to }));
  const acted: Acted = { ...found, on_loop: "wait", deadline, escalation };
  const hold: Deadline = { approval, at: deadline, tenant: call.tenant, tree_id: call.tree_id, job_id: call.job_id, run_id: call.run_id, call_id: call.call_id, event_id: call.id, plugin: call.plugin, tool: call.tool, function: call.function, escalation, asked_at: call.ts, evidence: loopEvidence(acted, call) };
  return {
    state: { calls, hold: { approval, call_id: call.call_id, deadline } },
    emits: actedOutputs(call, acted),
    remember: true,
    recall: { acted },
    flags: [[`hold:${approval}`, JSON.stringify(hold)]],
    deadlines: [hold],
    counts: [count],
  };
}

/**
 * What a call's outputs are built from, beside the call, when they depend on the moment: the
 * loop it completed (acted), or what its run already said when it was refused: the job stopped
 * (its words), only the answer is left (its words), or a loop of the run waits for a person (its
 * approval). Kept for a replay, which builds the same outputs again from it.
 */
export type CallRecall =
  | { readonly stopped: string }
  | { readonly finish_only: string }
  | { readonly held: string }
  | { readonly acted: Acted }
  /** The call's job had ended, or its start was refused: its ending's reason and words. */
  | { readonly ended: { readonly code: string; readonly limit: string | null; readonly message: string } }
  /** LIM-8: the tree had passed its soft wall: only the answer is left, with its words. */
  | { readonly wall: string };

/** The outputs of a call from its recall: the same however often built, the first time and on a replay alike. */
export function recalled(call: ToolCall, recall: CallRecall): Emit[] {
  const s: Subject = call;
  if ("acted" in recall) return actedOutputs(call, recall.acted);
  if ("stopped" in recall) {
    return [decision(LOOP_CALLS, s, { verdict: "stop", reason_code: "LoopDetected", message: recall.stopped }), refusedResult(LOOP_CALLS, call, recall.stopped)];
  }
  if ("ended" in recall) {
    const { code, limit, message } = recall.ended;
    return [decision(LOOP_CALLS, s, { verdict: "stop", reason_code: code, limit, message }), refusedResult(LOOP_CALLS, call, message)];
  }
  if ("wall" in recall) {
    return [decision(LOOP_CALLS, s, { verdict: "refuse", reason_code: "SoftWall", limit: "spend.soft_wall", message: recall.wall }), refusedResult(LOOP_CALLS, call, recall.wall)];
  }
  if ("finish_only" in recall) {
    return [
      decision(LOOP_CALLS, s, { verdict: "refuse", reason_code: "NoProgress", limit: "loops.no_progress", message: recall.finish_only }),
      refusedResult(LOOP_CALLS, call, recall.finish_only),
    ];
  }
  const message = `A loop of this run waits for a person (approval ${recall.held}, kind loop): no call goes ahead until it is decided.`;
  return [decision(LOOP_CALLS, s, { verdict: "wait", reason_code: "LoopDetected", message, evidence: { approval: { id: recall.held, kind: "loop" } } })];
}

function refused(state: CallsLaneState, call: ToolCall, recall: CallRecall): LaneStep<CallsLaneState, CallRecall> {
  return { state, emits: recalled(call, recall), remember: true, recall };
}

export function stepCall(
  config: ConfigView,
  state: CallsLaneState,
  flags: RunFlags,
  call: ToolCall,
  settingsOf: SettingsOf = settingsPerBatch(config),
  standing: Standing = NO_STANDING,
): LaneStep<CallsLaneState, CallRecall> {
  const s: Subject = call;
  if (flags.stopped !== null) return refused(state, call, { stopped: flags.stopped });
  // Endings bind: every call of a job that ended, timed out or whose start was refused is refused with its ending (the answer too).
  const ended = endingFor(standing, call.id);
  if (ended !== null) return refused(state, call, { ended: { code: ended.code, limit: ended.limit, message: endedWords(call.job_id, ended) } });
  if (isAnswer(call)) return { state, emits: [decision(LOOP_CALLS, s, { verdict: "allow" })], remember: false };
  // LOOP-9: a kill switch refuses every call of the tool, in every tenant, whoever makes it.
  const killed = asKillSwitch(config.get("kill_switch", killSwitchId(call.plugin, call.tool)));
  if (killed !== null) {
    const message = killSwitchWords(killed);
    const evidence = { kill_switch: { tool: killSwitchId(killed.plugin, killed.tool), reason: killed.reason, by: killed.by, thrown_at: new Date(killed.at).toISOString() } };
    return { state, emits: [decision(LOOP_CALLS, s, { verdict: "refuse", reason_code: "KillSwitch", message, evidence }), refusedResult(LOOP_CALLS, call, message)], remember: true };
  }
  // TOOL-1: a call of a tool the agent does not list is refused with the tools it may call; it is never made.
  const notAllowed = toolNotAllowed(LOOP_CALLS, config, call);
  if (notAllowed !== null) return { state, emits: notAllowed, remember: true };
  // OFF-9, FILE-1: a file above the agent's clearance is never handed to a tool: the call is refused (the fill-in withheld the file).
  const args = argumentsOf(call);
  const withheld = typeof args === "string" ? null : withheldFilesRefusal(args);
  if (withheld !== null) return { state, emits: [decision(LOOP_CALLS, s, { verdict: "refuse", reason_code: CLEARANCE, limit: "clearance", message: withheld }), refusedResult(LOOP_CALLS, call, withheld)], remember: true };
  if (flags.finishOnly !== null) return refused(state, call, { finish_only: flags.finishOnly });
  // LIM-8: past the soft wall only the answer is left (the answer was allowed above); a person's call by hand is not held.
  if (standing.finishOnly !== null && isWatched(call)) return refused(state, call, { wall: standing.finishOnly });
  if (!isWatched(call)) return { state, emits: [decision(LOOP_CALLS, s, { verdict: "allow" })], remember: false };
  // TOOL-3: a function in its tool's requires_approval waits for a person (an approval of kind tool); only this call waits.
  const toolWaits = toolHold(LOOP_CALLS, config, settingsOf, state, call);
  if (toolWaits !== null) return toolWaits;
  if (state.hold !== null) {
    // Approved: the counters start again and the call is made.
    if (flags.approved.has(state.hold.approval)) return act(settingsOf, { calls: startAgain(), hold: null }, flags, call);
    // LOOP-5: it waits behind the loop, and the loop's answer decides it too.
    const behind: BehindCall = { event_id: call.id, call_id: call.call_id, plugin: call.plugin, tool: call.tool, function: call.function };
    return { ...refused(state, call, { held: state.hold.approval }), flags: [[behindField(state.hold.approval, call.id), JSON.stringify(behind)]] };
  }
  return act(settingsOf, state, flags, call);
}

function callsLane(config: ConfigView): LaneSpec<ToolCall, CallsLaneState, CallRecall, ReadonlyMap<ToolCall, Standing> | undefined> {
  const settingsOf = settingsPerBatch(config);
  return {
    lane: "calls",
    runOf: (call) => call.run_id,
    tenantOf: (call) => call.tenant,
    initial: INITIAL,
    step: (state, flags, r: InputRecord<ToolCall>, standings) => stepCall(config, state, flags, r.value, settingsOf, standings?.get(r.value)),
    plain: (r): Emit[] => [decision(LOOP_CALLS, r.value, { verdict: "allow" })],
    replay: (r, recall) => recalled(r.value, recall),
  };
}

export const loopCallsProcessor = defineProcessor<ToolCall, LoopEnv>({
  name: LOOP_CALLS,
  input: "oz0.tool-calls",
  outputs: ["oz0.call-decisions", "oz0.trace", "oz0.results-delivered", "oz0.audit"],
  validate(call) {
    const reasons: string[] = [];
    for (const field of ["id", "tenant", "tree_id", "job_id", "run_id", "call_id", "plugin", "tool", "function"] as const) {
      if (!call[field]) reasons.push(`${field} is empty: the runtime must set it on every event`);
    }
    const args = argumentsOf(call);
    if (typeof args === "string") reasons.push(args);
    return reasons;
  },
  async process(records, env) {
    if (!env.standing) return runLane(callsLane(env.config), env.store, records);
    // Endings bind: each call's job read once a batch, beside the runs' loop state (one round trip for both);
    // the endings its decisions make (a loop that stops the job) kept for every processor.
    const standings = standingsOf(env.standing, env.config, records.map((r) => r.value));
    const out = await runLane(callsLane(env.config), env.store, records, standings);
    await env.standing.record(endingsOf(out.flatMap((o) => ("emits" in o ? o.emits : [])), false));
    return out;
  },
});
