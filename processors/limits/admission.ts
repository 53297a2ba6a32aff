/**
 * The admission logic of a tree, pure: a tree's state and one input in, the answer out, the
 * state changed in place. It is the specification the Lua scripts in store/redis/lua/ follow
 * (a differential test runs both on the same inputs) and the in-memory store of unit tests.
 *
 * Every operation is idempotent by the input's own identity (a model request's ID, a child
 * job's ID, a wait event's ID): the same input again answers what it answered before and
 * changes nothing.
 */
import type { CallCode, ChildCode } from "./codes.ts";
import { NO_LIMIT, type TreeSettings } from "./tree-settings.ts";

export interface RunCounters {
  steps: number;
  tokens: number;
  /** The answer that ended the run's job (endings bind): every later ask of the run gets it. */
  stop?: CallCode;
}

/**
 * Answers that end the job (its model call fails): a run that got one gets the same for every
 * later ask, in order, whatever its batches. A budget that waits for a person does not end it.
 */
function endsTheJob(t: TreeState, code: CallCode): boolean {
  return code === "tree_model_calls" || code === "tree_tokens" || code === "run_steps" || code === "run_tokens" || code === "job_timeout" || (code === "budget" && t.settings.onBudget !== "wait");
}

export interface JobState {
  /** The job's agent, "" when unknown. */
  agent: string;
  /** Delegations and flow tools between the tree's root and this job (LIM-6). */
  delegationDepth: number;
  /** Whether the job holds one of the tree's fan-out slots. */
  slot: boolean;
  /** The parent run whose delegations this job counts against, "" when it is no delegation. */
  delegatedFrom: string;
  started: boolean;
  ended: boolean;
  /** The run the job is in now: an unasked child's delegation counts against it. */
  run: string;
  waited: number;
  /** When the wait in progress began (ms), or -1. */
  waitSince: number;
  /** When the job started (ms), or -1 before its start was seen (LIM-1 timeout). */
  at: number;
  /** Its own timeout from its start (run --timeout, ms), -1 for none. */
  timeout: number;
  /** It is a session (the 2h default timeout). */
  session: boolean;
}

export interface TreeState {
  settings: TreeSettings;
  /** Settled spend and outstanding reservations, micro-dollars. */
  spent: number;
  reserved: number;
  modelCalls: number;
  tokens: number;
  children: number;
  running: number;
  lastCallUsed: boolean;
  /** LIM-8: an ask did not fit the budget (refused for it, or let through as the last call). */
  budgetHit: boolean;
  runs: Map<string, RunCounters>;
  /** Outstanding reservations by model request ID. */
  reservations: Map<string, { worst: number; input: number }>;
  asks: Map<string, CallAnswer>;
  settled: Map<string, SettleAnswer>;
  jobs: Map<string, JobState>;
  /** Answers to children's asks and starts, by `ask:<job>` and `start:<job>`. */
  childAnswers: Map<string, ChildAnswer>;
  /** Delegations and flow tools per parent run, by `<parent job>/<run>`. */
  delegations: Map<string, number>;
  waits: Map<string, WaitAnswer>;
}

export function newTreeState(settings: TreeSettings): TreeState {
  return {
    settings,
    spent: 0,
    reserved: 0,
    modelCalls: 0,
    tokens: 0,
    children: 0,
    running: 0,
    lastCallUsed: false,
    budgetHit: false,
    runs: new Map(),
    reservations: new Map(),
    asks: new Map(),
    settled: new Map(),
    jobs: new Map(),
    childAnswers: new Map(),
    delegations: new Map(),
    waits: new Map(),
  };
}

/** What the tree has used, as an answer reports it. */
export interface TreeUse {
  readonly spent: number;
  readonly reserved: number;
  readonly modelCalls: number;
  readonly tokens: number;
}

function use(t: TreeState): TreeUse {
  return { spent: t.spent, reserved: t.reserved, modelCalls: t.modelCalls, tokens: t.tokens };
}

const within = (limit: number, value: number) => limit === NO_LIMIT || value <= limit;

// ---------------------------------------------------------------------------------------------
// Model calls

export interface CallAsk {
  readonly requestId: string;
  readonly runId: string;
  readonly inputTokens: number;
  /** The call's worst-case cost (its input plus the most it may answer), micro-dollars. */
  readonly worst: number;
  /** The run's limits (LIM-1), -1 for none. */
  readonly maxSteps: number;
  readonly maxTokens: number;
  /** LIM-1: when the job's timeout ends (its start plus limits.timeout, ms), -1 for none or a start not seen. */
  readonly deadline: number;
  /** The ask's time (ms). */
  readonly now: number;
}

export interface CallAnswer extends TreeUse {
  readonly code: CallCode;
  readonly runSteps: number;
  readonly runTokens: number;
}

function run(t: TreeState, runId: string): RunCounters {
  let r = t.runs.get(runId);
  if (!r) {
    r = { steps: 0, tokens: 0 };
    t.runs.set(runId, r);
  }
  return r;
}

function decideCall(t: TreeState, r: RunCounters, ask: CallAsk): CallCode {
  const s = t.settings;
  // LIM-1: a job past its timeout makes no more model calls.
  if (ask.deadline !== NO_LIMIT && ask.now > ask.deadline) return "job_timeout";
  if (!within(ask.maxSteps, r.steps + 1)) return "run_steps";
  if (!within(ask.maxTokens, r.tokens + ask.inputTokens)) return "run_tokens";
  if (!within(s.modelCalls, t.modelCalls + 1)) return "tree_model_calls";
  if (!within(s.tokens, t.tokens + ask.inputTokens)) return "tree_tokens";
  if (s.budget === NO_LIMIT) return "allow";
  const committed = t.spent + t.reserved;
  if (committed + ask.worst <= s.budget) return "allow";
  // LIM-7: the one call that does not fit goes through under last_call, while budget is left.
  if (s.reserve === "last_call" && committed < s.budget && !t.lastCallUsed) return "allow_last_call";
  return "budget";
}

/** LIM-1, LIM-2, LIM-7: checks a model call and, when it may go ahead, reserves its worst case. */
export function admitCall(t: TreeState, ask: CallAsk): CallAnswer {
  const before = t.asks.get(ask.requestId);
  if (before) return before;
  const r = run(t, ask.runId);
  const code = r.stop ?? decideCall(t, r, ask);
  if (r.stop === undefined && endsTheJob(t, code)) r.stop = code;
  if (code === "allow" || code === "allow_last_call") {
    t.modelCalls += 1;
    t.tokens += ask.inputTokens;
    t.reserved += ask.worst;
    r.steps += 1;
    r.tokens += ask.inputTokens;
    if (code === "allow_last_call") t.lastCallUsed = true;
    t.reservations.set(ask.requestId, { worst: ask.worst, input: ask.inputTokens });
  }
  if (code === "allow_last_call" || code === "budget") t.budgetHit = true;
  const answer: CallAnswer = { code, ...use(t), runSteps: r.steps, runTokens: r.tokens };
  t.asks.set(ask.requestId, answer);
  return answer;
}

export interface CallUsage {
  readonly requestId: string;
  readonly runId: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** What the call cost, micro-dollars. */
  readonly cost: number;
}

export interface SettleAnswer extends TreeUse {
  /** Settled spend before this input: a spend threshold crossed shows as before < line <= spent. */
  readonly spentBefore: number;
}

/**
 * Settles a model call: its reservation is released and what it cost is spent. A call never
 * asked about (or refused and made anyway) is counted all the same: it happened.
 */
export function settleCall(t: TreeState, u: CallUsage): SettleAnswer {
  const key = `usage:${u.requestId}`;
  const before = t.settled.get(key);
  if (before) return before;
  const spentBefore = t.spent;
  const r = run(t, u.runId);
  const held = t.reservations.get(u.requestId);
  if (held) {
    t.reserved -= held.worst;
    t.reservations.delete(u.requestId);
    const more = u.outputTokens + (u.inputTokens - held.input);
    t.tokens += more;
    r.tokens += more;
  } else {
    t.modelCalls += 1;
    t.tokens += u.inputTokens + u.outputTokens;
    r.steps += 1;
    r.tokens += u.inputTokens + u.outputTokens;
  }
  t.spent += u.cost;
  const answer: SettleAnswer = { ...use(t), spentBefore };
  t.settled.set(key, answer);
  return answer;
}

/** LIM-9: a prompt-cache re-warm is no model call and adds no tokens, but its cost is spent. */
export function rewarm(t: TreeState, requestId: string, cost: number): SettleAnswer {
  const key = `rewarm:${requestId}`;
  const before = t.settled.get(key);
  if (before) return before;
  const spentBefore = t.spent;
  t.spent += cost;
  const answer: SettleAnswer = { ...use(t), spentBefore };
  t.settled.set(key, answer);
  return answer;
}

// ---------------------------------------------------------------------------------------------
// Children

export interface ChildAsk {
  readonly jobId: string;
  readonly parentJobId: string;
  /** The parent's run that asks; "" when unknown (then the parent's current run). */
  readonly parentRunId: string;
  /** The child's own run, once it starts; "" before. */
  readonly runId: string;
  readonly agent: string;
  /** The child's depth in the tree (the root is 0). */
  readonly depth: number;
  /** A delegation or a flow tool's flow (LIM-6), not a reviewer or a flow's step. */
  readonly delegating: boolean;
  /** The parent agent's delegation limits (LIM-6); maxChildren -1 for none. */
  readonly parentMaxDepth: number;
  readonly parentMaxChildren: number;
  /** The event's time (ms): at a start, when the child's timeout starts counting. */
  readonly at: number;
  /** LIM-1: when the parent's timeout ends (ms), -1 for none or a start not seen: past it, the parent starts no child. */
  readonly parentDeadline: number;
  /** LIM-10: the monthly quota of the tree's principal or team is spent (checked before, outside the tree's state): the child is not started. */
  readonly quotaSpent: boolean;
  /** LIM-1, at a start: the child's own timeout (run --timeout, ms, -1 for none) and whether it is a session; kept from the first start seen. */
  readonly timeout: number;
  readonly session: boolean;
}

export interface ChildAnswer {
  readonly code: ChildCode;
  /** "ask" when the runtime asked first; "start" for the check when the child starts. */
  readonly phase: "ask" | "start";
  readonly children: number;
  readonly running: number;
  readonly delegations: number;
  readonly delegationDepth: number;
  readonly spent: number;
}

function job(t: TreeState, jobId: string): JobState {
  let j = t.jobs.get(jobId);
  if (!j) {
    j = { agent: "", delegationDepth: 0, slot: false, delegatedFrom: "", started: false, ended: false, run: "", waited: 0, waitSince: -1, at: -1, timeout: -1, session: false };
    t.jobs.set(jobId, j);
  }
  return j;
}

function budgetSpent(t: TreeState): boolean {
  return t.settings.budget !== NO_LIMIT && t.spent >= t.settings.budget;
}

function childRun(t: TreeState, a: ChildAsk): string {
  return `${a.parentJobId}/${a.parentRunId || (t.jobs.get(a.parentJobId)?.run ?? "")}`;
}

function decideChild(t: TreeState, a: ChildAsk, delegationDepth: number, delegations: number): ChildCode {
  const s = t.settings;
  if (a.parentDeadline !== NO_LIMIT && a.at > a.parentDeadline) return "job_timeout";
  if (!within(s.depth, a.depth)) return "depth";
  if (!within(s.children, t.children + 1)) return "children";
  if (!within(s.fanOut, t.running + 1)) return "fan_out";
  if (budgetSpent(t)) return "budget";
  if (a.quotaSpent) return "quota";
  if (a.delegating) {
    if (delegationDepth > a.parentMaxDepth) return "delegation_depth";
    if (!within(a.parentMaxChildren, delegations + 1)) return "delegation_children";
  }
  return "allow";
}

/** Takes the child's slots: children in all, running at once, and the parent run's delegations. */
function admitInto(t: TreeState, a: ChildAsk, delegationDepth: number, runKey: string): void {
  t.children += 1;
  t.running += 1;
  if (a.delegating) t.delegations.set(runKey, (t.delegations.get(runKey) ?? 0) + 1);
  const j = job(t, a.jobId);
  j.agent = a.agent;
  j.delegationDepth = delegationDepth;
  j.slot = true;
  j.delegatedFrom = a.delegating ? runKey : "";
}

function answerOf(t: TreeState, code: ChildCode, phase: "ask" | "start", runKey: string, delegationDepth: number): ChildAnswer {
  return { code, phase, children: t.children, running: t.running, delegations: t.delegations.get(runKey) ?? 0, delegationDepth, spent: t.spent };
}

/**
 * LIM-3, LIM-5, LIM-6: a child the runtime asks about before it starts. The slots are taken
 * when it is admitted, before anything waits, so parallel asks cannot all pass a limit.
 */
export function askChild(t: TreeState, a: ChildAsk): ChildAnswer {
  const key = `ask:${a.jobId}`;
  const before = t.childAnswers.get(key);
  if (before) return before;
  const parentDepth = t.jobs.get(a.parentJobId)?.delegationDepth ?? 0;
  const delegationDepth = a.delegating ? parentDepth + 1 : parentDepth;
  const runKey = childRun(t, a);
  const code = decideChild(t, a, delegationDepth, t.delegations.get(runKey) ?? 0);
  if (code === "allow") admitInto(t, a, delegationDepth, runKey);
  const answer = answerOf(t, code, "ask", runKey, delegationDepth);
  t.childAnswers.set(key, answer);
  return answer;
}

/** Releases what an admitted child held: it never starts. */
function release(t: TreeState, jobId: string): void {
  const j = t.jobs.get(jobId);
  if (j?.slot) {
    j.slot = false;
    t.running -= 1;
    t.children -= 1;
    if (j.delegatedFrom) t.delegations.set(j.delegatedFrom, (t.delegations.get(j.delegatedFrom) ?? 0) - 1);
    j.delegatedFrom = "";
  }
}

/**
 * LIM-5: the check again when a child's start arrives. A child admitted at its ask is checked
 * for the budget and the quotas (its slots are taken, and given back when it is refused); a child refused at its ask stays refused; a child
 * never asked about meets every check there, so no runtime starts more than the tree allows.
 */
export function startChild(t: TreeState, a: ChildAsk): ChildAnswer {
  const key = `start:${a.jobId}`;
  const before = t.childAnswers.get(key);
  if (before) return before;
  const asked = t.childAnswers.get(`ask:${a.jobId}`);
  const runKey = childRun(t, a);
  let answer: ChildAnswer;
  if (asked && asked.code !== "allow") {
    answer = { ...asked, phase: "start" };
  } else if (asked) {
    const code: ChildCode = budgetSpent(t) ? "budget" : a.quotaSpent ? "quota" : "allow";
    if (code !== "allow") release(t, a.jobId);
    answer = { ...asked, code, phase: "start", children: t.children, running: t.running, spent: t.spent };
  } else {
    const parentDepth = t.jobs.get(a.parentJobId)?.delegationDepth ?? 0;
    const delegationDepth = a.delegating ? parentDepth + 1 : parentDepth;
    const code = decideChild(t, a, delegationDepth, t.delegations.get(runKey) ?? 0);
    if (code === "allow") admitInto(t, a, delegationDepth, runKey);
    answer = answerOf(t, code, "start", runKey, delegationDepth);
  }
  if (answer.code === "allow") {
    const j = job(t, a.jobId);
    j.started = true;
    j.run = a.runId;
    startClock(j, a.at, a.timeout, a.session);
  }
  t.childAnswers.set(key, answer);
  return answer;
}

/** When the job started, its own timeout and whether it is a session: the first start seen sets all three. */
function startClock(j: JobState, at: number, timeout: number, session: boolean): void {
  if (j.at !== -1 || at === -1) return;
  j.at = at;
  j.timeout = timeout;
  j.session = session;
}

/** The root job starts: it is the tree's first job and holds no slot. */
export function startRoot(t: TreeState, jobId: string, agent: string, runId: string, at: number, timeout = -1, session = false): void {
  const j = job(t, jobId);
  j.agent = agent;
  j.started = true;
  startClock(j, at, timeout, session);
  if (runId) j.run = runId;
}

/** A job ended: its fan-out slot is free again (once). */
export function endJob(t: TreeState, jobId: string): { running: number } {
  const j = job(t, jobId);
  if (!j.ended) {
    j.ended = true;
    if (j.slot) {
      j.slot = false;
      t.running -= 1;
    }
  }
  return { running: t.running };
}

// ---------------------------------------------------------------------------------------------
// Waits for people

export interface WaitAnswer {
  /** Milliseconds the job has waited in all, this wait included once it ended. */
  readonly waited: number;
  readonly over: boolean;
}

/**
 * LIM-3: a job whose waits for people add up past the tree's `wait` fails; each job counts its
 * own. `ts` is the event's time; a wait_ended without its start adds nothing.
 */
export function waitEvent(t: TreeState, eventId: string, jobId: string, kind: "started" | "ended", ts: number): WaitAnswer {
  const before = t.waits.get(eventId);
  if (before) return before;
  const j = job(t, jobId);
  if (kind === "started") {
    if (j.waitSince < 0) j.waitSince = ts;
  } else if (j.waitSince >= 0) {
    j.waited += Math.max(0, ts - j.waitSince);
    j.waitSince = -1;
  }
  const answer: WaitAnswer = { waited: j.waited, over: !within(t.settings.wait, j.waited) };
  t.waits.set(eventId, answer);
  return answer;
}

/** LIM-8: the share of the budget spent, or null when the tree has no budget. */
export function shareOf(settings: TreeSettings, spent: number): number | null {
  return settings.budget === NO_LIMIT || settings.budget === 0 ? null : spent / settings.budget;
}
