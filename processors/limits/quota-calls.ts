/**
 * LIM-10 quotas in the model-call processor: an ask of a tree started by a principal is checked
 * against the principal's and the team's monthly quotas (after the tenant's budget, before the
 * tree's), and a call that then does not go ahead gives back what it held. Every usage and
 * re-warm of such a tree is spent in both months, whether or not a quota is set.
 */
import { quotaOf, type QuotaOf } from "../../config/quotas.ts";
import type { JobEvent, ModelCall } from "../../schemas/types.ts";
import { tenantOf, type LimitsEnv } from "./env.ts";
import { usdToMicros } from "./money.ts";
import type { QuotaAnswer } from "./quota.ts";
import type { QuotaHolder } from "./store.ts";
import { monthOf } from "./tenant-budget.ts";
import type { TreeSettings } from "./tree-settings.ts";

/** What the quotas answered an ask; null when the tree has no principal or no quota holds it. */
export interface QuotaCheck {
  readonly who: QuotaHolder;
  readonly month: string;
  readonly person: QuotaOf | null;
  readonly team: QuotaOf | null;
  readonly answer: QuotaAnswer;
}

/** The quota that refused, with its numbers, as quotaJudgement reads it. */
export interface QuotaRefusal {
  readonly kind: "person" | "team";
  readonly id: string;
  readonly setting: string;
  readonly quota: number;
  readonly spent: number;
  readonly reserved: number;
}

/** Whose quotas a tree spends against; null when nobody said who started it. */
export function quotaHolder(tenant: string, s: TreeSettings): QuotaHolder | null {
  return s.principal ? { tenant, principal: s.principal, team: s.team ?? "" } : null;
}

const micros = (q: QuotaOf | null): number => (q === null ? -1 : usdToMicros(q.usd));

/** The quotas an ask of the tree in `month` is checked against; null when no quota holds it (then `quotaAsk` reads nothing). */
export function quotasOf(env: LimitsEnv, tenant: string, s: TreeSettings, month: string): { who: QuotaHolder; person: QuotaOf | null; team: QuotaOf | null } | null {
  const who = quotaHolder(tenant, s);
  if (!who) return null;
  const quotas = tenantOf(env, tenant)?.quotas;
  const person = quotaOf(quotas, "person", who.principal, month);
  const team = quotaOf(quotas, "team", who.team, month);
  return person || team ? { who, person, team } : null;
}

export async function quotaAsk(env: LimitsEnv, call: ModelCall, s: TreeSettings, worst: number): Promise<QuotaCheck | null> {
  const month = monthOf(call.ts);
  const held = quotasOf(env, call.tenant, s, month);
  if (!held) return null;
  const { who, person, team } = held;
  const answer = await env.store.quotaAsk(who, month, { requestId: call.request_id, worst, personQuota: micros(person), teamQuota: micros(team), now: call.ts });
  return { who, month, person, team, answer };
}

/**
 * A child's ask or start, checked against the quotas before the tree's state is (so a child the
 * quotas refuse takes no slot): a quota that is spent leaves it waiting for a budget request.
 * Keyed by the event, so a replay reads the first answer.
 */
export async function quotaChildCheck(env: LimitsEnv, e: JobEvent, s: TreeSettings): Promise<QuotaCheck | null> {
  const month = monthOf(e.ts);
  const held = quotasOf(env, e.tenant, s, month);
  if (!held) return null;
  const { who, person, team } = held;
  const answer = await env.store.quotaCheck(who, month, { requestId: `child:${e.id}`, personQuota: micros(person), teamQuota: micros(team), now: e.ts });
  return { who, month, person, team, answer };
}

/** The quota that refused the ask, or null when it was admitted. */
export function quotaRefusal(check: QuotaCheck | null): QuotaRefusal | null {
  if (!check || check.answer.code === "allow") return null;
  const { code: kind, personSpent, personReserved, teamSpent, teamReserved } = check.answer;
  const q = kind === "person" ? check.person : check.team;
  // A replay keeps its first answer even when the quota was changed since: name the setting all the same.
  const said = { setting: q?.setting ?? `quotas.${kind}`, quota: micros(q) };
  return kind === "person"
    ? { kind, id: check.who.principal, ...said, spent: personSpent, reserved: personReserved }
    : { kind, id: check.who.team, ...said, spent: teamSpent, reserved: teamReserved };
}

/** The quotas held the call's worst case and the call does not go ahead: let go of it. */
export async function quotaGiveBack(env: LimitsEnv, call: ModelCall, check: QuotaCheck | null): Promise<void> {
  if (check?.answer.code === "allow") await env.store.quotaRelease(check.who, check.month, call.request_id);
}

export async function quotaSpend(env: LimitsEnv, call: ModelCall, s: TreeSettings, cost: number): Promise<void> {
  const who = quotaHolder(call.tenant, s);
  if (who) await env.store.quotaSettle(who, monthOf(call.ts), { kind: call.kind === "usage" ? "usage" : "rewarm", requestId: call.request_id, cost, now: call.ts });
}
