/**
 * LIM-10 in the model-call processor: an ask is checked against its tenant's monthly budget
 * before the tree's (the tenant's month and the tree are two keys in two slots, so two steps),
 * and a call the tree then refuses gives back what it held of the tenant's month. Every usage
 * and re-warm is spent in the tenant's month too, whether or not the tenant has a budget, so a
 * budget set in the middle of a month knows what the month spent.
 */
import type { ModelCall } from "../../schemas/types.ts";
import { tenantOf, type LimitsEnv } from "./env.ts";
import { usdToMicros } from "./money.ts";
import { monthOf, type TenantAnswer } from "./tenant-budget.ts";

/** What the tenant answered an ask; null when the tenant has no monthly budget. */
export interface TenantCheck {
  readonly month: string;
  readonly budget: number;
  readonly answer: TenantAnswer;
}

export function tenantBudget(env: LimitsEnv, tenant: string): number | null {
  const usd = tenantOf(env, tenant)?.monthly_budget_usd;
  return usd === undefined ? null : usdToMicros(usd);
}

export async function tenantAsk(env: LimitsEnv, call: ModelCall, worst: number): Promise<TenantCheck | null> {
  const budget = tenantBudget(env, call.tenant);
  if (budget === null) return null;
  const month = monthOf(call.ts);
  const answer = await env.store.tenantAsk(call.tenant, month, { requestId: call.request_id, worst, budget, now: call.ts });
  return { month, budget, answer };
}

/** The tenant held the call's worst case and the call does not go ahead: let go of it. */
export async function tenantGiveBack(env: LimitsEnv, call: ModelCall, check: TenantCheck | null): Promise<void> {
  if (check?.answer.code === "allow") await env.store.tenantRelease(call.tenant, check.month, call.request_id);
}

export async function tenantSpend(env: LimitsEnv, call: ModelCall, cost: number): Promise<void> {
  await env.store.tenantSettle(call.tenant, monthOf(call.ts), { kind: call.kind === "usage" ? "usage" : "rewarm", requestId: call.request_id, cost, now: call.ts });
}
