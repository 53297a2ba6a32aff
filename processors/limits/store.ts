/**
 * The state port of the limits processors: one tree's settings, counters and answers. Two
 * implementations follow the same contract: Redis (Lua scripts, what runs) and memory (the
 * pure logic of admission.ts, for unit tests). Every change is atomic per tree and idempotent
 * by the input's identity; a store that cannot answer for now throws a TransientError.
 *
 * A tree is named by its tenant and its ID: tree IDs come from runtimes and may be chosen
 * (FILE-5), so two tenants' trees of one ID never share state.
 *
 * Two smaller ports of the limits follow it, with the same two implementations each: a job's
 * standing (`StandingStore`: its ending, kept in the tree's limits hash and read by every
 * processor that admits something of the job, standing.ts) and the unknown outcomes waiting for
 * a person (`UnknownOutcomeStore`, LIM-11, unknown-outcomes.ts).
 */
import type { CallAnswer, CallAsk, CallUsage, ChildAnswer, ChildAsk, SettleAnswer, WaitAnswer } from "./admission.ts";
import type { TreeSettings } from "./tree-settings.ts";
import type { ForecastStats } from "./forecast.ts";
import type { BudgetAnswer, BudgetRequest } from "./budget-requests.ts";
import type { QuotaAnswer } from "./quota.ts";
import type { EndingRecord } from "./standing.ts";
import type { TenantAnswer } from "./tenant-budget.ts";
import type { UnknownOutcomeAnswer, UnknownOutcomeRequest } from "./unknown-outcomes.ts";

export interface RootJob {
  readonly jobId: string;
  readonly agent: string;
  readonly runId: string;
  /** When it started (ms): its timeout counts from here (LIM-1). */
  readonly at: number;
  /** Its own timeout from its start (run --timeout, ms), -1 for none; kept from the first start seen. */
  readonly timeout: number;
  /** It is a session: an agent with no limits.timeout times out after 2h. */
  readonly session: boolean;
}

/**
 * What the tree holds of one job (LIM-1): its agent ("" when unknown), when it started (ms, -1
 * when not seen), its own timeout from its start (ms, -1 for none) and whether it is a session.
 */
export interface JobClock {
  readonly jobAgent: string;
  readonly jobStart: number;
  readonly jobTimeout: number;
  readonly jobSession: boolean;
}

/** Whose quotas a tree spends against (LIM-10): its principal and the principal's team ("" for none). */
export interface QuotaHolder {
  readonly tenant: string;
  readonly principal: string;
  readonly team: string;
}

/** Who holds a tree's one forecast (LIM-8), and the tree's settled spend (-1 without state). */
export interface ForecastHolder {
  /** The forecast belongs to this request (also on a replay), given at `chance`. */
  readonly given: boolean;
  /** Another request of the tree has it. */
  readonly taken: boolean;
  readonly chance: number;
  readonly spent: number;
}

/** One model-call step of a tree, as `treeSteps` takes them: an ask, a usage or a re-warm. */
export type TreeStep =
  | { readonly kind: "ask"; readonly ask: CallAsk }
  | { readonly kind: "usage"; readonly usage: CallUsage }
  | { readonly kind: "rewarm"; readonly requestId: string; readonly cost: number };

/** A step's answer: what `admitCall`, `settleCall` or `rewarm` would have answered it. */
export type TreeStepAnswer = { readonly kind: "ask"; readonly answer: CallAnswer } | { readonly kind: "usage" | "rewarm"; readonly answer: SettleAnswer };

/** A usage or re-warm spent in a month (a tenant's, a principal's, a team's), once per request. */
export interface MonthSpend {
  readonly kind: "usage" | "rewarm";
  readonly requestId: string;
  readonly cost: number;
  readonly now: number;
}

export interface LimitsStore {
  /**
   * The tree's settings (null before any were set), and the agent of one of its jobs ("" when
   * unknown) and when that job started (ms, -1 when its start was not seen).
   */
  read(tenant: string, treeId: string, jobId: string): Promise<{ settings: TreeSettings | null } & JobClock>;
  /**
   * Sets the tree's settings: authoritative ones (from the root job's start) replace
   * provisional ones (from a first model call that came before it); otherwise the first wins.
   * Returns the settings the tree holds after the call.
   */
  init(tenant: string, treeId: string, settings: TreeSettings, authoritative: boolean, root: RootJob | null): Promise<TreeSettings>;
  admitCall(tenant: string, treeId: string, ask: CallAsk): Promise<CallAnswer>;
  settleCall(tenant: string, treeId: string, usage: CallUsage): Promise<SettleAnswer>;
  rewarm(tenant: string, treeId: string, requestId: string, cost: number): Promise<SettleAnswer>;
  /**
   * A tree's asks, usages and re-warms in their order, in one atomic step: the same answers and
   * changes as calling `admitCall`, `settleCall` and `rewarm` one by one.
   */
  treeSteps(tenant: string, treeId: string, steps: readonly TreeStep[]): Promise<TreeStepAnswer[]>;
  child(tenant: string, treeId: string, phase: "ask" | "start", ask: ChildAsk): Promise<ChildAnswer>;
  endJob(tenant: string, treeId: string, jobId: string, root: boolean): Promise<void>;
  wait(tenant: string, treeId: string, eventId: string, jobId: string, kind: "started" | "ended", ts: number): Promise<WaitAnswer>;
  /** Settled spend, or null when the store keeps no state for the tree. */
  spent(tenant: string, treeId: string): Promise<number | null>;

  /** LIM-10: an ask against the tenant's month (`YYYY-MM`, UTC); it holds its worst case when admitted. */
  tenantAsk(tenant: string, month: string, ask: { requestId: string; worst: number; budget: number; now: number }): Promise<TenantAnswer>;
  /** LIM-10: a call the tenant admitted and the tree did not: its worst case is no longer held. */
  tenantRelease(tenant: string, month: string, requestId: string): Promise<void>;
  /** LIM-10: a usage or re-warm spent in the tenant's month, once. */
  tenantSettle(tenant: string, month: string, spend: MonthSpend): Promise<TenantAnswer>;
  /** LIM-10: several usages and re-warms spent in the tenant's month in one step, in order, each as `tenantSettle` spends it. */
  tenantSpends(tenant: string, month: string, spends: readonly MonthSpend[]): Promise<TenantAnswer[]>;

  /**
   * LIM-10: an ask against the principal's and the team's month (`YYYY-MM`, UTC), quotas in
   * micro-dollars (-1 for none); it holds its worst case in both when admitted.
   */
  quotaAsk(who: QuotaHolder, month: string, ask: { requestId: string; worst: number; personQuota: number; teamQuota: number; now: number }): Promise<QuotaAnswer>;
  /** LIM-10: a child's start: whether the principal's or the team's quota is spent; holds nothing, kept for replays by its ID. */
  quotaCheck(who: QuotaHolder, month: string, check: { requestId: string; personQuota: number; teamQuota: number; now: number }): Promise<QuotaAnswer>;
  /** LIM-10: a call the quotas admitted and that did not go ahead: its worst case is no longer held. */
  quotaRelease(who: QuotaHolder, month: string, requestId: string): Promise<void>;
  /** LIM-10: a usage or re-warm spent in the principal's and the team's month, once. */
  quotaSettle(who: QuotaHolder, month: string, spend: { kind: "usage" | "rewarm"; requestId: string; cost: number; now: number }): Promise<QuotaAnswer>;

  /** LIM-7, LIM-8, LIM-10: keeps a budget request with its tree's state (once) and in the index of those waiting. */
  putBudgetRequest(r: BudgetRequest): Promise<void>;
  /** The budget requests nobody answered yet, soonest first (answered and expired ones leave the index). */
  budgetRequests(): Promise<BudgetRequest[]>;
  /** One budget request, how it was answered (null while it waits), and its tree's budget now (micro-dollars, -1 none); null when unknown. */
  budgetRequest(approval: string): Promise<{ request: BudgetRequest; answered: BudgetAnswer | null; treeBudget: number } | null>;
  /**
   * Answers a budget request once, in one step with the tree's state: approving with a budget
   * raises the tree's to it (never lowers it). Returns the answer that holds: this one, or the first.
   */
  answerBudgetRequest(r: BudgetRequest, a: BudgetAnswer): Promise<BudgetAnswer>;

  /** LIM-8: what a tree ended with, for its agent's forecast; null without state. */
  treeOutcome(tenant: string, treeId: string): Promise<{ spent: number; budget: number; hit: boolean } | null>;
  /** LIM-8: records a finished tree in its agent's window (HIT or its bucket), once. */
  recordFinished(tenant: string, agent: string, treeId: string, bucket: number): Promise<boolean>;
  forecastStats(tenant: string, agent: string): Promise<ForecastStats>;
  /**
   * LIM-8: the tree's one forecast. `claim` takes it for this request, at that chance (0..1), when
   * nobody has; null only asks.
   */
  forecastOnce(tenant: string, treeId: string, requestId: string, claim: { chance: number } | null): Promise<ForecastHolder>;
}

/** The limits hash's fields a job's standing is read from, in `standingOf`'s order. */
export function standingFields(jobId: string): string[] {
  const j = `job:${jobId}:`;
  return [`${j}end`, `${j}ended`, `${j}agent`, `${j}at`, `${j}tmo`, `${j}sess`, "s:budget", "s:wall", "spent"];
}

/** Reads and keeps jobs' standings. */
export interface StandingStore {
  /** The raw fields of `standingFields(job)`, for each job asked, in order. */
  read(jobs: ReadonlyArray<{ readonly tenant: string; readonly tree: string; readonly job: string }>): Promise<Array<ReadonlyArray<string | null>>>;
  /** Keeps each ending once (the first one of a job wins); idempotent. */
  record(endings: readonly EndingRecord[]): Promise<void>;
}

/**
 * LIM-11: where unknown outcomes waiting for a person are kept (unknown-outcomes.ts): each
 * request (and its answer once given) and an index of those waiting by deadline.
 */
export interface UnknownOutcomeStore {
  /** Keeps a request once and puts it in the index by its deadline; a replay changes nothing. */
  put(r: UnknownOutcomeRequest, now: number): Promise<void>;
  /** Those nobody answered yet, soonest deadline first. */
  waiting(): Promise<UnknownOutcomeRequest[]>;
  /** Those in the index whose deadline passed by `now` (answered by the deadline and not yet published, too), soonest first, at most `limit`. */
  due(now: number, limit: number): Promise<Array<{ request: UnknownOutcomeRequest; answered: UnknownOutcomeAnswer | null }>>;
  /** One request and how it was answered (null while it waits); null when none is kept. */
  get(approval: string): Promise<{ request: UnknownOutcomeRequest; answered: UnknownOutcomeAnswer | null } | null>;
  /**
   * Answers once: returns the answer that holds (this one, or the first); null when no such
   * request is kept. `leave` takes it out of the index at once (a person's answer); the timer
   * leaves it in until its decision is published (`done`).
   */
  answer(approval: string, a: UnknownOutcomeAnswer, leave: boolean): Promise<UnknownOutcomeAnswer | null>;
  /** Takes it out of the index of those waiting. */
  done(approval: string): Promise<void>;
}
