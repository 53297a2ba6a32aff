/**
 * What an admission's answer becomes on `oz0.admissions`: a verdict, a reason code, the limit
 * that decided, and a message the model (or a person) reads: which limit and how to raise it.
 */
import type { Decision } from "../../schemas/types.ts";
import type { CallAnswer, ChildAnswer } from "./admission.ts";
import type { TimeoutLimit } from "./job-timeout.ts";
import type { QuotaRefusal } from "./quota-calls.ts";
import { microsToUsd } from "./money.ts";
import type { TreeSettings } from "./tree-settings.ts";

export type Judgement = Pick<Decision, "verdict" | "reason_code" | "limit" | "message">;

const ALLOW: Judgement = { verdict: "allow", reason_code: null, limit: null, message: "" };

function budgetJudgement(s: TreeSettings, what: string): Judgement {
  const budget = `$${microsToUsd(s.budget).toFixed(2)}`;
  const raise = `raise limits.max_cost_usd of agent ${s.rootAgent || "(the root)"}, or give the job a larger --budget`;
  return s.onBudget === "wait"
    ? { verdict: "wait", reason_code: "BudgetExceeded", limit: "limits.max_cost_usd", message: `${what} would pass the tree's budget of ${budget}; the job waits for a person to raise it (${raise}).` }
    : { verdict: "stop", reason_code: "BudgetExceeded", limit: "limits.max_cost_usd", message: `${what} would pass the tree's budget of ${budget}: the job fails with BudgetExceeded. To allow more, ${raise}.` };
}

/** LIM-1, LIM-2, LIM-7. */
/** A duration as people write it in an agent's limits: 90s, 10m, 1h30m. */
export function duration(ms: number): string {
  const total = Math.round(ms / 1000);
  const [h, m, sec] = [Math.floor(total / 3600), Math.floor((total % 3600) / 60), total % 60];
  return [h ? `${h}h` : "", m ? `${m}m` : "", sec || total === 0 ? `${sec}s` : ""].join("");
}

const raiseTimeout = (limit: TimeoutLimit): string =>
  limit === "run --timeout" ? "Its timeout was set for this job when it started (run --timeout): start it again with a longer one to allow more." : "Raise limits.timeout of the agent to allow more.";

export function callJudgement(s: TreeSettings, a: CallAnswer, run: { maxSteps: number; maxTokens: number; timeout?: number | null; timeoutLimit?: TimeoutLimit }): Judgement {
  switch (a.code) {
    case "job_timeout": {
      const limit = run.timeoutLimit ?? "limits.timeout";
      return { verdict: "stop", reason_code: "AgentTimeout", limit, message: `The job ran past its ${duration(run.timeout ?? 0)} (${limit}): it ends with AgentTimeout. ${raiseTimeout(limit)}` };
    }
    case "allow":
      return ALLOW;
    case "allow_last_call":
      return { ...ALLOW, limit: "limits.reserve", message: "This is the last model call the budget allows (reserve: last_call): answer with what you have." };
    case "run_steps":
      return { verdict: "stop", reason_code: "UsageLimitExceeded", limit: "limits.max_steps", message: `The run made its ${run.maxSteps} model calls (limits.max_steps): the job ends with UsageLimitExceeded. Raise limits.max_steps of the agent to allow more.` };
    case "run_tokens":
      return { verdict: "stop", reason_code: "UsageLimitExceeded", limit: "limits.max_tokens", message: `The run would pass its ${run.maxTokens} tokens (limits.max_tokens): the job ends with UsageLimitExceeded. Raise limits.max_tokens of the agent to allow more.` };
    case "tree_model_calls":
      return { verdict: "refuse", reason_code: "oz0_tree_limit", limit: "limits.tree.model_calls", message: `402 oz0_tree_limit: the job tree made its ${s.modelCalls} model calls (limits.tree.model_calls); the job fails with TreeLimitExceeded. Raise limits.tree.model_calls of the root agent ${s.rootAgent || ""}, or the tenant's (oz0 tenant spend --tree-model-calls).` };
    case "tree_tokens":
      return { verdict: "refuse", reason_code: "oz0_tree_limit", limit: "limits.tree.tokens", message: `402 oz0_tree_limit: the job tree would pass its ${s.tokens} tokens (limits.tree.tokens); the job fails with TreeLimitExceeded. Raise limits.tree.tokens of the root agent ${s.rootAgent || ""}, or the tenant's (oz0 tenant spend --tree-tokens).` };
    case "budget":
      return budgetJudgement(s, "This model call");
  }
}

const CHILD_LIMITS: Record<Exclude<ChildAnswer["code"], "allow" | "budget" | "job_timeout" | "quota">, { limit: string; says: (s: TreeSettings, a: ChildAnswer) => string }> = {
  depth: { limit: "limits.tree.depth", says: (s) => `the job tree may go ${s.depth} deep (limits.tree.depth); raise limits.tree.depth of the root agent or the tenant's (oz0 tenant spend --tree-depth)` },
  children: { limit: "limits.tree.children", says: (s) => `the job tree has started its ${s.children} children (limits.tree.children); raise limits.tree.children of the root agent or the tenant's (oz0 tenant spend --tree-children)` },
  fan_out: { limit: "limits.tree.fan_out", says: (s) => `the job tree runs ${s.fanOut} children at once (limits.tree.fan_out); wait for one to end, or raise limits.tree.fan_out of the root agent or the tenant's (oz0 tenant spend --tree-fan-out)` },
  delegation_depth: { limit: "delegation.max_depth", says: () => "you may not delegate deeper (delegation.max_depth of your agent); raise delegation.max_depth to allow it" },
  delegation_children: { limit: "delegation.max_children", says: () => "this run has made all the delegations it may (delegation.max_children); answer with what you have, or raise delegation.max_children of your agent" },
};

/** LIM-3, LIM-5, LIM-6: a child refused at its ask is refused; one refused at its start is stopped (the edge fails it). LIM-10: one a quota refused waits. */
export function childJudgement(
  s: TreeSettings,
  a: ChildAnswer,
  context: { quota?: { refusal: QuotaRefusal | null; tenant: string; month: string } | null; timeoutLimit?: TimeoutLimit } = {},
): Judgement {
  if (a.code === "allow") return ALLOW;
  const quota = context.quota;
  if (a.code === "quota") return childQuotaJudgement(quota?.refusal ?? null, quota?.tenant ?? s.tenant, quota?.month ?? "this month");
  if (a.code === "budget") {
    const j = budgetJudgement(s, "A child job");
    return j.verdict === "wait" ? j : { ...j, verdict: a.phase === "ask" ? "refuse" : "stop", message: `The child is not started: the tree's budget is spent. ${j.message}` };
  }
  if (a.code === "job_timeout") {
    const limit = context.timeoutLimit ?? "limits.timeout";
    return { verdict: a.phase === "ask" ? "refuse" : "stop", reason_code: "AgentTimeout", limit, message: `The child job is not started: the job that asks for it ran past its ${limit} and ends with AgentTimeout. ${raiseTimeout(limit)}` };
  }
  const { limit, says } = CHILD_LIMITS[a.code];
  const reason_code = a.code.startsWith("delegation") ? "UsageLimitExceeded" : "TreeLimitExceeded";
  return { verdict: a.phase === "ask" ? "refuse" : "stop", reason_code, limit, message: `The child job is not started (${reason_code}): ${says(s, a)}.` };
}

/** LIM-3: a job whose waits for people add up past the tree's wait. */
export function waitJudgement(s: TreeSettings, waited: number): Judgement {
  return {
    verdict: "stop",
    reason_code: "TreeLimitExceeded",
    limit: "limits.tree.wait",
    message: `The job has waited for people ${Math.round(waited / 1000)}s in all, past the tree's ${Math.round(s.wait / 1000)}s (limits.tree.wait): it fails with TreeLimitExceeded. Raise limits.tree.wait of the root agent, or the tenant's.`,
  };
}

const usd = (micros: number) => `$${microsToUsd(micros).toFixed(2)}`;

/** LIM-10: the tenant's monthly budget is spent: every model call of the tenant fails with 402 BudgetExceeded. */
export function tenantBudgetJudgement(tenant: string, month: string, budget: number, a: { spent: number; reserved: number }, worst: number): Judgement {
  return {
    verdict: "refuse",
    reason_code: "BudgetExceeded",
    limit: "tenant.monthly_budget_usd",
    message:
      `402 BudgetExceeded: tenant ${tenant} has spent ${usd(a.spent)} (and holds ${usd(a.reserved)} for calls under way) of its monthly budget of ${usd(budget)} for ${month} (UTC); ` +
      `this call's worst case of ${usd(worst)} does not fit, so the tenant's model calls fail until the month ends. To allow more, raise monthly_budget_usd in the tenant's settings (tenants/${tenant}.yaml).`,
  };
}

/** LIM-8: the tree will likely need more than its budget: the job waits for a budget request before it reaches the wall. */
export function forecastJudgement(s: TreeSettings, chance: number, threshold: number): Judgement {
  const pct = (x: number) => `${Math.round(x * 100)}%`;
  return {
    verdict: "wait",
    reason_code: "budget_forecast",
    limit: "spend.forecast.chance",
    message:
      `The job tree will likely need more than its budget of ${usd(s.budget)}: ${pct(chance)} of agent ${s.rootAgent}'s finished trees that spent as much went on to hit their budget (spend.forecast.chance is ${pct(threshold)}). ` +
      `The job waits for a person to raise the budget before it reaches the wall: raise limits.max_cost_usd of agent ${s.rootAgent}, or give the job a larger --budget.`,
  };
}

const quotaRaise = (setting: string, tenant: string) => `a person raises ${setting} in the settings of tenant ${tenant} (tenants/${tenant}.yaml, or oz0 quota set), or the quota starts anew next month`;

/**
 * LIM-10: the monthly quota of the tree's principal or of its team is spent: the child is not
 * started, and the job waits for a budget request. With no refusal to read (a replay after the
 * quota's answer was forgotten), the message names the quotas in general.
 */
export function childQuotaJudgement(q: QuotaRefusal | null, tenant: string, month: string): Judgement {
  if (!q) {
    return { verdict: "wait", reason_code: "quota_exceeded", limit: "quotas", message: `The child job is not started: a monthly quota of the tree's principal or team for ${month} (UTC) is spent. The job waits for a budget request: ${quotaRaise("quotas.per_person or quotas.per_team", tenant)}.` };
  }
  const whose = q.kind === "person" ? `${q.id}'s` : `team ${q.id}'s`;
  return {
    verdict: "wait",
    reason_code: "quota_exceeded",
    limit: q.setting,
    message: `The child job is not started: ${whose} monthly quota${q.quota < 0 ? "" : ` of ${usd(q.quota)}`} for ${month} (UTC) is spent (${usd(q.spent)}). The job waits for a budget request: ${quotaRaise(q.setting, tenant)}.`,
  };
}

/**
 * LIM-10: a monthly quota of the tree's principal or of its team would be passed: the job waits
 * for a budget request (a person raises the quota), as `on_budget: wait` does for the tree's budget.
 */
export function quotaJudgement(q: QuotaRefusal, tenant: string, month: string, worst: number): Judgement {
  const whose = q.kind === "person" ? `${q.id}'s` : `team ${q.id}'s`;
  return {
    verdict: "wait",
    reason_code: "quota_exceeded",
    limit: q.setting,
    message:
      `This model call would pass ${whose} monthly quota${q.quota < 0 ? "" : ` of ${usd(q.quota)}`} for ${month} (UTC): ${usd(q.spent)} is spent and ${usd(q.reserved)} held for calls under way, and its worst case is ${usd(worst)}. ` +
      `The job waits for a budget request: ${quotaRaise(q.setting, tenant)}.`,
  };
}
