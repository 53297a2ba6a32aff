/**
 * The gateway's half of the limits (LIM-1, LIM-2, LIM-7, LIM-8, LIM-9): every ask before a
 * model call is admitted or refused with its worst case reserved against the tree's budget;
 * every usage report settles the reservation; a prompt-cache re-warm only spends. Crossing the
 * warning share or the soft wall of the budget is reported once per tree. An ask is checked
 * against the tenant's monthly budget first (LIM-10), then against the monthly quotas of the
 * person or app that started the tree and of its team (LIM-10), then may get the tree's one
 * spend forecast (LIM-8); every usage and re-warm is spent in those months too.
 *
 * A batch's trees are decided concurrently, each tree's inputs in their order (by-tree.ts);
 * with ioredis auto-pipelining the commands of many trees go out in one write.
 */
import { resolveJobLimits } from "../../config/resolve.ts";
import type { Decision, ModelCall } from "../../schemas/types.ts";
import { deriveId } from "../runner/ids.ts";
import { defineProcessor, type Emit, type Outcome } from "../runner/processor.ts";
import type { CallAnswer, CallAsk, CallUsage, SettleAnswer } from "./admission.ts";
import { keepBudgetRequests } from "./budget-request-calls.ts";
import { allSettledOrThrow, byTreeGroups, treeKey } from "./by-tree.ts";
import { callJudgement, forecastJudgement, quotaJudgement, tenantBudgetJudgement, type Judgement } from "./decisions.ts";
import { agentOf, settledSettings, type LimitsEnv } from "./env.ts";
import { forecastApplies, forecastAt } from "./forecast-calls.ts";
import { jobTimeout, type TimeoutLimit } from "./job-timeout.ts";
import { costMicros, microsToUsd } from "./money.ts";
import { priceOf } from "./prices.ts";
import { quotaAsk, quotaGiveBack, quotaRefusal, quotaSpend, quotasOf } from "./quota-calls.ts";
import { spendCrossings } from "./spend.ts";
import { endedWords, endingFor, endingsOf, NO_STANDING, standingsOf, type Ending } from "./standing.ts";
import type { JobClock, MonthSpend, TreeStep } from "./store.ts";
import { monthOf } from "./tenant-budget.ts";
import { tenantAsk, tenantBudget, tenantGiveBack, tenantSpend } from "./tenant-calls.ts";
import { NO_LIMIT, type TreeSettings } from "./tree-settings.ts";

export const LIMITS_MODEL_CALLS = "limits-model-calls";

function decision(call: ModelCall, tag: string, j: Judgement, numbers: Record<string, number>): Emit {
  const value: Decision = {
    id: deriveId(LIMITS_MODEL_CALLS, tag, call.id),
    input_id: call.id,
    processor: LIMITS_MODEL_CALLS,
    tenant: call.tenant,
    tree_id: call.tree_id,
    job_id: call.job_id,
    run_id: call.run_id,
    subject: call.request_id,
    ...j,
    numbers,
    evidence: null,
    ts: call.ts,
  };
  return { to: "oz0.admissions", key: call.tree_id, value };
}

function spendNumbers(s: TreeSettings, a: { spent: number; reserved: number; modelCalls: number; tokens: number }): Record<string, number> {
  return {
    spent_usd: microsToUsd(a.spent),
    reserved_usd: microsToUsd(a.reserved),
    ...(s.budget === NO_LIMIT ? {} : { budget_usd: microsToUsd(s.budget), share: a.spent / s.budget }),
    model_calls: a.modelCalls,
    tokens: a.tokens,
  };
}

/** What an ask reserves and is checked against: its run's limits and its worst case at the model's prices. */
interface AskPlan {
  readonly ask: CallAsk;
  readonly run: { readonly maxSteps: number; readonly maxTokens: number; readonly timeout: number | null; readonly timeoutLimit: TimeoutLimit };
  /** When the call's job started (ms), -1 when its start was not seen. */
  readonly jobStart: number;
  readonly priced: Record<string, number>;
}

function askPlan(call: ModelCall, env: LimitsEnv, job: JobView): AskPlan {
  const agent = agentOf(env, call.agent ?? job.jobAgent);
  const limits = resolveJobLimits(agent);
  const { price, listed } = priceOf(env.prices, call.model);
  // LIM-1: an ask never reserves above its agent's max_output_tokens, whatever it asks for (docs/limits.md).
  const agentMax = limits.max_output_tokens ?? null;
  const asked = call.max_output_tokens;
  const capped = asked !== null && agentMax !== null && asked > agentMax;
  const maxOutput = capped ? agentMax : (asked ?? agentMax ?? price.max_output_tokens);
  const worst = costMicros(price, { input: call.input_tokens, output: maxOutput, cacheRead: call.cache_read_tokens, cacheWrite: call.cache_write_tokens });
  // LIM-1: the job's timeout (its agent's or its own run --timeout) counts from its start, once the start has been seen.
  const timeout = jobTimeout(agent, job);
  const run = { maxSteps: limits.max_steps, maxTokens: limits.max_tokens ?? NO_LIMIT, timeout: timeout.ms, timeoutLimit: timeout.limit };
  const deadline = timeout.deadline;
  const ask = { requestId: call.request_id, runId: call.run_id, inputTokens: call.input_tokens, worst, maxSteps: run.maxSteps, maxTokens: run.maxTokens, deadline, now: call.ts };
  // The cap the call is to be made with, whenever it is not the one asked: lowered to the agent's
  // limit, or the agent's limit for a call that asked none (the model gateway forwards it).
  const cap: Record<string, number> = capped ? { max_output_tokens: maxOutput, asked_output_tokens: asked } : asked === null && agentMax !== null ? { max_output_tokens: agentMax } : {};
  return { ask, run, jobStart: job.jobStart, priced: { worst_usd: microsToUsd(worst), ...(listed ? {} : { unpriced_model: 1 }), ...cap } };
}

/** The tree's answer to an ask, as the runtime reads it. */
function askDecision(call: ModelCall, settings: TreeSettings, plan: AskPlan, answer: CallAnswer): Emit {
  const timedOut: Record<string, number> = answer.code === "job_timeout" ? { timeout_ms: plan.run.timeout ?? 0, elapsed_ms: plan.ask.now - plan.jobStart } : {};
  const numbers = { ...spendNumbers(settings, answer), ...plan.priced, run_steps: answer.runSteps, run_tokens: answer.runTokens, ...timedOut };
  return decision(call, "ask", callJudgement(settings, answer, plan.run), numbers);
}

/** What a usage or a re-warm cost at the model's prices. */
function spentCost(call: ModelCall, env: LimitsEnv): number {
  const { price } = priceOf(env.prices, call.model);
  return costMicros(price, { input: call.input_tokens, output: call.output_tokens ?? 0, cacheRead: call.cache_read_tokens, cacheWrite: call.cache_write_tokens });
}

async function ask(call: ModelCall, env: LimitsEnv, settings: TreeSettings, job: JobView): Promise<Emit[]> {
  const plan = askPlan(call, env, job);
  const { worst } = plan.ask;
  const priced = plan.priced;
  // LIM-10: the tenant's month, and the quotas of the principal and team, at once; a call either
  // refuses never reaches the tree, and gives back what the other held.
  const [tenant, quota] = await allSettledOrThrow([tenantAsk(env, call, worst), quotaAsk(env, call, settings, worst)]);
  if (tenant && tenant.answer.code === "budget") {
    await quotaGiveBack(env, call, quota);
    const { spent, reserved } = tenant.answer;
    const numbers = { tenant_spent_usd: microsToUsd(spent), tenant_reserved_usd: microsToUsd(reserved), tenant_budget_usd: microsToUsd(tenant.budget), ...priced };
    return [decision(call, "tenant", tenantBudgetJudgement(call.tenant, tenant.month, tenant.budget, tenant.answer, worst), numbers)];
  }
  // Past a quota, the job waits for a budget request.
  const refused = quotaRefusal(quota);
  if (refused) {
    await tenantGiveBack(env, call, tenant);
    const numbers = { quota_spent_usd: microsToUsd(refused.spent), quota_reserved_usd: microsToUsd(refused.reserved), ...(refused.quota < 0 ? {} : { quota_usd: microsToUsd(refused.quota) }), ...priced };
    return [decision(call, "quota", quotaJudgement(refused, call.tenant, quota?.month ?? "", worst), numbers)];
  }
  const giveBack = () => allSettledOrThrow([tenantGiveBack(env, call, tenant), quotaGiveBack(env, call, quota)]);
  // LIM-8: the tree's one forecast holds the call (nothing reserved) while a person raises the budget.
  const forecast = await forecastAt(env, call.tree_id, call.request_id, settings);
  if (forecast) {
    await giveBack();
    const numbers = { spent_usd: microsToUsd(forecast.spent), budget_usd: microsToUsd(settings.budget), chance: forecast.chance, forecast_chance: forecast.threshold, ...priced };
    return [decision(call, "forecast", forecastJudgement(settings, forecast.chance, forecast.threshold), numbers)];
  }
  const answer = await env.store.admitCall(call.tenant, call.tree_id, plan.ask);
  if (answer.code !== "allow" && answer.code !== "allow_last_call") await giveBack();
  return [askDecision(call, settings, plan, answer)];
}

function crossings(call: ModelCall, settings: TreeSettings, answer: SettleAnswer): Emit[] {
  return spendCrossings(settings, answer.spentBefore, answer.spent).map((c) => decision(call, c.limit ?? "spend", c, spendNumbers(settings, answer)));
}

export const limitsModelCallsProcessor = defineProcessor<ModelCall, LimitsEnv>({
  name: LIMITS_MODEL_CALLS,
  input: "oz0.model-calls",
  outputs: ["oz0.admissions"],
  validate(call) {
    const reasons: string[] = [];
    for (const field of ["id", "tenant", "tree_id", "job_id", "run_id", "request_id", "model"] as const) {
      if (!call[field]) reasons.push(`${field} is empty: the runtime must set it on every event`);
    }
    for (const field of ["input_tokens", "max_output_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"] as const) {
      const n = call[field];
      if (n !== null && n < 0) reasons.push(`${field} is ${n}: it counts tokens, so it cannot be negative`);
    }
    if (call.kind === "usage" && call.output_tokens === null) reasons.push("a usage report needs output_tokens: what the call answered");
    return reasons;
  },
  async process(records, env) {
    const months = new MonthSpends();
    const outcomes = await byTreeGroups(records, (call) => treeKey(call.tenant, call.tree_id), async (calls) => {
      // A tree that fails is decided again input by input: only what a call that succeeded spends is kept.
      const mine = new MonthSpends();
      const out = await keepBudgetRequests(env, await decideUnlessEnded(calls, env, mine));
      months.take(mine);
      return out;
    });
    await months.flush(env);
    return outcomes;
  },
});

/**
 * Endings bind (standing.ts): an ask of a job that ended, or whose start was refused, is
 * refused with its ending and reserves nothing; the rest of the tree's inputs are decided as
 * before. The endings the decisions make (a stop, a tree limit) are kept for the job's later
 * inputs, of every processor.
 */
async function decideUnlessEnded(calls: ModelCall[], env: LimitsEnv, months: MonthSpends): Promise<Outcome[]> {
  const view = new TreeView();
  if (!env.standing) return decideTree(calls, env, months, view);
  // The job's timeout is the tree script's to check (limitsAdmitCall), with its own answer. The
  // jobs' standings and their trees' state are read in one round trip.
  const [standings] = await Promise.all([standingsOf(env.standing, env.config, calls.filter((c) => c.kind === "ask"), { timeout: false }), view.prefetch(env, calls)]);
  // An ending this processor decided is the tree script's to hold (a run whose ask ended its job
  // gets the same answer for every later ask, in order, whatever the batches): only the endings
  // other processors kept are checked here.
  const ended = calls.map((c) => {
    const e = c.kind === "ask" ? endingFor(standings.get(c) ?? NO_STANDING, c.id) : null;
    return e !== null && e.processor !== LIMITS_MODEL_CALLS ? e : null;
  });
  const rest = calls.filter((_, i) => ended[i] === null);
  const decided = rest.length > 0 ? await decideTree(rest, env, months, view) : [];
  let k = 0;
  const out = calls.map((c, i): Outcome => {
    const e = ended[i];
    return e ? { emits: [endedDecision(c, e)] } : (decided[k++] as Outcome);
  });
  await env.standing.record(endingsOf(decided.flatMap((o) => ("emits" in o ? o.emits : [])), false));
  return out;
}

/** An ask of a job that has ended: refused with the ending's reason. */
function endedDecision(call: ModelCall, e: Ending): Emit {
  return decision(call, "ended", { verdict: "stop", reason_code: e.code, limit: e.limit, message: endedWords(call.job_id, e) }, {});
}

/**
 * A tree's inputs of one batch, in their order. When no ask of the tree is checked against
 * anything but the tree (the tenant has no monthly budget, no quota holds the tree, no forecast
 * can hold an ask), every step goes to the tree in one script, and what usages spend in the
 * tenant's and the quotas' months is written once for the batch (`MonthSpends`): no ask of the
 * batch reads those months. Otherwise each input is decided alone, in order.
 */
async function decideTree(calls: ModelCall[], env: LimitsEnv, months: MonthSpends, view: TreeView): Promise<Outcome[]> {
  await view.prefetch(env, calls);
  const read: Array<{ settings: TreeSettings } & JobView> = [];
  for (const call of calls) read.push(await view.read(env, call));
  const first = calls[0];
  const settings = read[0]?.settings;
  if (!first || !settings) return [];
  const alone = tenantBudget(env, first.tenant) === null && calls.every((c) => quotasOf(env, c.tenant, settings, monthOf(c.ts)) === null) && !forecastApplies(settings);
  if (!alone) {
    const out: Outcome[] = [];
    for (const [i, call] of calls.entries()) {
      const r = read[i] as (typeof read)[number];
      out.push({ emits: await decide(call, env, r.settings, r) });
    }
    return out;
  }
  const plans: Array<AskPlan | null> = [];
  const steps = calls.map((call, i): TreeStep => {
    if (call.kind === "ask") {
      const plan = askPlan(call, env, read[i] as (typeof read)[number]);
      plans.push(plan);
      return { kind: "ask", ask: plan.ask };
    }
    plans.push(null);
    const cost = spentCost(call, env);
    months.add(call, settings, cost);
    return call.kind === "usage" ? { kind: "usage", usage: usageOf(call, cost) } : { kind: "rewarm", requestId: call.request_id, cost };
  });
  const answers = await env.store.treeSteps(first.tenant, first.tree_id, steps);
  return calls.map((call, i) => {
    const a = answers[i];
    const plan = plans[i];
    if (!a) throw new Error(`the limits store answered ${answers.length} steps of tree ${first.tree_id} for ${calls.length}`);
    if (a.kind === "ask") {
      if (!plan) throw new Error(`step ${i} of tree ${first.tree_id} was answered as an ask, but it is a ${call.kind}`);
      return { emits: [askDecision(call, settings, plan, a.answer)] };
    }
    return { emits: crossings(call, settings, a.answer) };
  });
}

function usageOf(call: ModelCall, cost: number): CallUsage {
  return { requestId: call.request_id, runId: call.run_id, inputTokens: call.input_tokens, outputTokens: call.output_tokens ?? 0, cost };
}

async function decide(call: ModelCall, env: LimitsEnv, settings: TreeSettings, job: JobView): Promise<Emit[]> {
  if (call.kind === "ask") return ask(call, env, settings, job);
  const cost = spentCost(call, env);
  // The tree, the tenant's month and the quotas' months are separate keys, each step idempotent: no order between them.
  const [answer] = await allSettledOrThrow([
    call.kind === "usage" ? env.store.settleCall(call.tenant, call.tree_id, usageOf(call, cost)) : env.store.rewarm(call.tenant, call.tree_id, call.request_id, cost),
    tenantSpend(env, call, cost),
    quotaSpend(env, call, settings, cost),
  ]);
  return crossings(call, settings, answer);
}

/**
 * What a batch's usages and re-warms spend in months no ask of the batch is checked against
 * (the tenant's month without a monthly budget, the quotas' months without a quota): written
 * after the batch's trees are decided, a tenant's month in one script per 500 spends. Each
 * spend is idempotent by its request.
 */
class MonthSpends {
  readonly #tenants = new Map<string, { tenant: string; month: string; spends: MonthSpend[] }>();
  readonly #quotas: Array<{ call: ModelCall; settings: TreeSettings; cost: number }> = [];

  add(call: ModelCall, settings: TreeSettings, cost: number): void {
    const month = monthOf(call.ts);
    const key = JSON.stringify([call.tenant, month]);
    let t = this.#tenants.get(key);
    if (!t) this.#tenants.set(key, (t = { tenant: call.tenant, month, spends: [] }));
    t.spends.push({ kind: call.kind === "usage" ? "usage" : "rewarm", requestId: call.request_id, cost, now: call.ts });
    this.#quotas.push({ call, settings, cost });
  }

  /** Adds another's spends (a tree's, once it is decided). */
  take(other: MonthSpends): void {
    for (const [key, t] of other.#tenants) {
      const mine = this.#tenants.get(key);
      if (mine) mine.spends.push(...t.spends);
      else this.#tenants.set(key, { ...t, spends: [...t.spends] });
    }
    this.#quotas.push(...other.#quotas);
  }

  async flush(env: LimitsEnv): Promise<void> {
    const tenants = [...this.#tenants.values()].flatMap(({ tenant, month, spends }) => {
      const sends: Array<Promise<unknown>> = [];
      for (let i = 0; i < spends.length; i += MONTH_SPENDS_PER_SCRIPT) sends.push(env.store.tenantSpends(tenant, month, spends.slice(i, i + MONTH_SPENDS_PER_SCRIPT)));
      return sends;
    });
    await allSettledOrThrow([...tenants, ...this.#quotas.map(({ call, settings, cost }) => quotaSpend(env, call, settings, cost))]);
  }
}

/** Spends per script call: one call holds Redis for about 10 µs a spend. */
const MONTH_SPENDS_PER_SCRIPT = 500;

/**
 * A tree's settings as one batch reads them: read once (and set provisionally when the tree has
 * none), then kept for the tree's later inputs in the batch. A job's agent is read when an input
 * of that job does not name its own.
 */
class TreeView {
  #settings: TreeSettings | undefined;
  readonly #reads = new Map<string, Promise<{ settings: TreeSettings | null } & JobView>>();

  /** Starts the read of each call's job (once a job), all at once: they go to the store together, with whatever else is asked in the same tick. */
  prefetch(env: LimitsEnv, calls: readonly ModelCall[]): Promise<unknown> {
    return Promise.all(calls.map((call) => this.#readOf(env, call)));
  }

  #readOf(env: LimitsEnv, call: ModelCall): Promise<{ settings: TreeSettings | null } & JobView> {
    let read = this.#reads.get(call.job_id);
    if (!read) {
      read = env.store.read(call.tenant, call.tree_id, call.job_id);
      this.#reads.set(call.job_id, read);
    }
    return read;
  }

  async read(env: LimitsEnv, call: ModelCall): Promise<{ settings: TreeSettings } & JobView> {
    const { settings, ...job } = await this.#readOf(env, call);
    // The tree's settings are the first job's: set provisionally once when the tree has none yet.
    this.#settings ??= settings ?? (await settledSettings(env, call.tree_id, call.tenant, call.agent ?? "", { settings, ...job })).settings;
    return { ...job, settings: this.#settings };
  }
}

/** What a batch knows of one job: its agent, when it started, its own timeout and whether it is a session. */
type JobView = JobClock;
