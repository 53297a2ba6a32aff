/**
 * The edge's half of the limits (LIM-3, LIM-5, LIM-6, LIM-10, LIM-11): a root job's start sets what
 * its tree is held to; a child is admitted at its ask (its slots taken before anything waits)
 * and checked again at its start, against the tree and its principal's quotas; a job's end frees its fan-out slot; waits for people add up
 * per job against the tree's `wait`; an outcome that cannot be known waits for a person or
 * fails, per `on_unknown`. A root job's end records its tree for its agent's spend forecast
 * (LIM-8).
 */
import { resolveDelegation, resolveOnUnknown } from "../../config/resolve.ts";
import type { Decision, JobEvent } from "../../schemas/types.ts";
import { deriveId } from "../runner/ids.ts";
import { defineProcessor, type Emit, type Outcome } from "../runner/processor.ts";
import type { ChildAnswer } from "./admission.ts";
import { keepBudgetRequests } from "./budget-request-calls.ts";
import { byTree, treeKey } from "./by-tree.ts";
import { childJudgement, waitJudgement, type Judgement } from "./decisions.ts";
import { agentOf, settingsFor, tenantOf, settledSettings, treeSettings, type LimitsEnv } from "./env.ts";
import { unknownDeadlineMs, unknownRequestOf, withUnknownApproval } from "./unknown-outcomes.ts";
import { recordFinishedTree } from "./forecast-calls.ts";
import { jobTimeout } from "./job-timeout.ts";
import { microsToUsd } from "./money.ts";
import { quotaChildCheck, quotaRefusal, type QuotaRefusal } from "./quota-calls.ts";
import { endingFor, endingsOf, standingOf, type Ending } from "./standing.ts";
import { NO_LIMIT, type TreeSettings } from "./tree-settings.ts";

export const LIMITS_JOBS = "limits-jobs";

/** The `outcome` of an ended job whose outcome cannot be known (LIM-11). */
export const UNKNOWN_OUTCOME = "unknown";

/** A decision about `e`, addressed to `jobId`: the parent for a child's admission, else the job itself. */
function decision(e: JobEvent, tag: string, j: Judgement, numbers: Record<string, number>, jobId: string): Emit {
  const value: Decision = {
    id: deriveId(LIMITS_JOBS, tag, e.id),
    input_id: e.id,
    processor: LIMITS_JOBS,
    tenant: e.tenant,
    tree_id: e.tree_id,
    job_id: jobId,
    run_id: e.run_id,
    subject: e.job_id,
    ...j,
    numbers,
    evidence: null,
    ts: e.ts,
  };
  return { to: "oz0.admissions", key: e.tree_id, value };
}

function childNumbers(s: TreeSettings, a: ChildAnswer, depth: number): Record<string, number> {
  return {
    depth,
    children: a.children,
    running: a.running,
    delegations: a.delegations,
    delegation_depth: a.delegationDepth,
    spent_usd: microsToUsd(a.spent),
    ...(s.budget === NO_LIMIT ? {} : { budget_usd: microsToUsd(s.budget) }),
  };
}

/** The quota that refused a child, as a refused model call's numbers say it. */
function quotaNumbers(refused: QuotaRefusal | null): Record<string, number> {
  return refused ? { quota_spent_usd: microsToUsd(refused.spent), ...(refused.quota < 0 ? {} : { quota_usd: microsToUsd(refused.quota) }) } : {};
}

/** LIM-1: a job's own timeout (run --timeout) and whether it is a session, as its start says, kept with the start. */
function ownClock(e: JobEvent): { timeout: number; session: boolean } {
  return { timeout: e.timeout_ms ?? NO_LIMIT, session: e.session === true };
}

/**
 * Endings bind (standing.ts): a child of a job that ended is not started, nor a child whose own
 * ask or start was refused before. Its start is stopped (the edge fails it); its ask refused.
 */
async function endedChild(e: JobEvent & { parent_job_id: string }, env: LimitsEnv, phase: "ask" | "start"): Promise<Emit | null> {
  if (!env.standing) return null;
  const [parentFields, childFields] = await env.standing.read([
    { tenant: e.tenant, tree: e.tree_id, job: e.parent_job_id },
    { tenant: e.tenant, tree: e.tree_id, job: e.job_id },
  ]);
  const agent = (name: string) => agentOf(env, name);
  // The parent's timeout is the tree script's to check (limitsChild), with its own answer.
  const parentEnding = endingFor(standingOf(parentFields ?? [], e.ts, agent, "", { timeout: false }), e.id);
  const own = endingFor(standingOf(childFields ?? [], e.ts, agent, e.agent, { timeout: false }), e.id);
  const said = (ending: Ending, whose: string): Judgement => ({
    verdict: phase === "ask" ? "refuse" : "stop",
    reason_code: ending.code,
    limit: ending.limit,
    message: `The child job is not started: ${whose}. ${ending.message}`.trim(),
  });
  if (parentEnding) return decision(e, "ended", said(parentEnding, `the job that asks for it, ${e.parent_job_id}, has ended (${parentEnding.code})`), {}, e.parent_job_id);
  if (own) return decision(e, "ended", said(own, `job ${e.job_id} was refused or ended before (${own.code})`), {}, e.parent_job_id);
  return null;
}

/**
 * TOOL-2: an agent delegates only to the agents in its `delegation.allow`. A delegation (a child
 * of kind `delegation`) to any other agent is refused at its ask and stopped at its start, before
 * any slot is taken. A parent whose agent the pipeline has no definition of is not held to a
 * list, as it is held to no tool list (docs/limits.md).
 */
function delegationRefused(e: JobEvent & { parent_job_id: string }, parentAgent: string, parentDefinition: ReturnType<typeof agentOf>, phase: "ask" | "start"): Emit | null {
  if (parentDefinition === undefined || e.delegation !== "delegation") return null;
  const allow = resolveDelegation(parentDefinition).allow;
  if (allow.includes(e.agent)) return null;
  const may = allow.length === 0 ? "may delegate to no agent" : `may delegate only to ${allow.join(", ")}`;
  const j: Judgement = {
    verdict: phase === "ask" ? "refuse" : "stop",
    reason_code: "DelegationNotAllowed",
    limit: "delegation.allow",
    message: `The child job is not started (DelegationNotAllowed): agent ${parentAgent} ${may} (delegation.allow), and ${e.agent} is not among them. Add ${e.agent} to delegation.allow of agent ${parentAgent} to allow it.`,
  };
  return decision(e, "delegation", j, {}, e.parent_job_id);
}

async function child(e: JobEvent & { parent_job_id: string }, env: LimitsEnv, phase: "ask" | "start"): Promise<Emit[]> {
  // The jobs' standings and the parent's tree are read in one round trip.
  const [ended, read] = await Promise.all([endedChild(e, env, phase), env.store.read(e.tenant, e.tree_id, e.parent_job_id)]);
  if (ended) return [ended];
  const { settings, ...parent } = await settledSettings(env, e.tree_id, e.tenant, "", read);
  const parentDefinition = agentOf(env, parent.jobAgent);
  const refused = delegationRefused(e, parent.jobAgent, parentDefinition, phase);
  if (refused) return [refused];
  const delegation = resolveDelegation(parentDefinition);
  // LIM-1: a parent past its timeout (counted from its start, once seen) starts no child.
  const timeout = jobTimeout(parentDefinition, parent);
  // LIM-10: the quotas first, outside the tree's state; the tree's script takes no slot for a child they refuse.
  const quota = await quotaChildCheck(env, e, settings);
  const answer = await env.store.child(e.tenant, e.tree_id, phase, {
    jobId: e.job_id,
    parentJobId: e.parent_job_id,
    parentRunId: phase === "ask" ? (e.run_id ?? "") : "",
    runId: phase === "start" ? (e.run_id ?? "") : "",
    agent: e.agent,
    depth: e.depth,
    delegating: e.delegation === "delegation" || e.delegation === "flow_tool",
    parentMaxDepth: delegation.max_depth,
    parentMaxChildren: delegation.max_children ?? NO_LIMIT,
    at: e.ts,
    parentDeadline: timeout.deadline,
    quotaSpent: quota !== null && quota.answer.code !== "allow",
    ...ownClock(e),
  });
  const refusal = quotaRefusal(quota);
  const judgement = childJudgement(settings, answer, { quota: quota && { refusal, tenant: e.tenant, month: quota.month }, timeoutLimit: timeout.limit });
  const numbers = answer.code === "quota" ? { ...childNumbers(settings, answer, e.depth), ...quotaNumbers(refusal) } : childNumbers(settings, answer, e.depth);
  return [decision(e, phase, judgement, numbers, e.parent_job_id)];
}

async function unknownOutcome(e: JobEvent, env: LimitsEnv, settings: TreeSettings): Promise<Emit> {
  const wait = resolveOnUnknown(agentOf(env, e.agent), { startedByPerson: settings.startedByPerson }) === "wait";
  const j: Judgement = wait
    ? { verdict: "wait", reason_code: "unknown_outcome", limit: "on_unknown", message: "The outcome of the job cannot be known: a person decides whether it happened, runs it again, or stops it." }
    : { verdict: "stop", reason_code: "unknown_outcome", limit: "on_unknown", message: "The outcome of the job cannot be known and nobody is asked (on_unknown: fail): the job fails with unknown_outcome. Set on_unknown: wait to have a person decide." };
  const emit = decision(e, "unknown", j, {}, e.job_id);
  // LIM-11: the wait is an approval of kind unknown a person answers (unknown-outcomes.ts), kept once: its ID comes from the decision's.
  const request = env.unknown ? unknownRequestOf(emit.value as Decision, unknownDeadlineMs(tenantOf(env, e.tenant))) : null;
  if (!request || !env.unknown) return emit;
  await env.unknown.put(request, e.ts);
  return { ...emit, value: withUnknownApproval(emit.value as Decision, request) };
}

export const limitsJobsProcessor = defineProcessor<JobEvent, LimitsEnv>({
  name: LIMITS_JOBS,
  input: "oz0.jobs",
  outputs: ["oz0.admissions"],
  validate(e) {
    const reasons: string[] = [];
    for (const field of ["id", "tenant", "tree_id", "job_id", "agent"] as const) {
      if (!e[field]) reasons.push(`${field} is empty`);
    }
    if (e.depth < 0) reasons.push(`depth is ${e.depth}: the root is 0 and each child one deeper`);
    if (e.kind === "child_ask" && !e.parent_job_id) reasons.push("a child_ask names the parent_job_id of the job that starts the child");
    if (e.parent_job_id === null && e.depth !== 0) reasons.push(`a job with no parent is the tree's root, at depth 0; got depth ${e.depth}`);
    return reasons;
  },
  // The trees of a batch at once, each tree's events in order (by-tree.ts).
  // A budget request is kept with its decision, so a tree the store refuses fails alone.
  // Every ending decided (a child refused, a job past its waits or with no outcome) is kept for the job's later inputs (standing.ts).
  process: (records, env) =>
    byTree(records, (e) => treeKey(e.tenant, e.tree_id), () => null, async (e) => {
      const emits = await decide(e, env);
      await env.standing?.record(endingsOf(emits, true));
      return (await keepBudgetRequests(env, [{ emits }]))[0] as Outcome;
    }),
});

async function decide(e: JobEvent, env: LimitsEnv): Promise<Emit[]> {
  const parent = e.parent_job_id;
  if (e.kind === "started" && parent === null) {
    // LIM-10: whose quotas the tree spends against is recorded with its settings, once.
    // LIM-1: run --budget is the tree's budget instead of the root agent's max_cost_usd.
    const settings = settingsFor(env, e.tenant, e.agent, e.started_by === "person", { principal: e.principal, team: e.team, budgetUsd: e.budget_usd ?? null });
    await env.store.init(e.tenant, e.tree_id, settings, true, { jobId: e.job_id, agent: e.agent, runId: e.run_id ?? "", at: e.ts, ...ownClock(e) });
    return [];
  }
  if ((e.kind === "child_ask" || e.kind === "started") && parent !== null) {
    return child({ ...e, parent_job_id: parent }, env, e.kind === "child_ask" ? "ask" : "start");
  }
  const { settings } = await treeSettings(env, e.tree_id, e.tenant, e.job_id, parent === null ? e.agent : "");
  if (e.kind === "ended") {
    await env.store.endJob(e.tenant, e.tree_id, e.job_id, parent === null);
    if (parent === null) await recordFinishedTree(env, e.tree_id, settings);
    return e.outcome === UNKNOWN_OUTCOME ? [await unknownOutcome(e, env, settings)] : [];
  }
  const answer = await env.store.wait(e.tenant, e.tree_id, e.id, e.job_id, e.kind === "wait_started" ? "started" : "ended", e.ts);
  const over = answer.over && e.kind === "wait_ended";
  return over ? [decision(e, "wait", waitJudgement(settings, answer.waited), { waited_ms: answer.waited, wait_ms: settings.wait }, e.job_id)] : [];
}
