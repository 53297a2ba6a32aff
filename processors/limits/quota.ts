/**
 * LIM-10: monthly quotas per person and per team, pure. A tree started by a principal (a person
 * or an app, from its root's `started` event) spends against that principal's month and, when
 * the principal has a team, the team's month. Each month is kept as the tenant's is
 * (tenant-budget.ts): spent, and the worst cases held by asks admitted and not settled.
 *
 * An ask is admitted when it fits both quotas (`spent + reserved + worst <= quota`, each one
 * that is set), and then holds its worst case in both, in one step, so concurrent asks of many
 * trees can never pass a quota together. There is no last call at a quota: it is shared by all
 * of a principal's trees, and one last call per tree would let every tree pass it. A usage
 * drops the held worst case and spends what the call cost, in both months, whether or not a
 * quota is set, so a quota set in the middle of a month knows what the month spent.
 *
 * A child's start (at the edge) is checked, not held: it spends nothing itself, so it starts
 * while the month's spend is below each quota that is set, and waits once a quota is spent
 * (what calls under way hold is theirs to settle, as a tree's budget counts at a child's start).
 *
 * Answers are kept in the principal's month, by `<op>:<request>`. It is the specification
 * store/redis/lua/limitsQuota-4.lua follows.
 */
import { drop, newTenantMonth, prune, type TenantMonth, type TenantTimes } from "./tenant-budget.ts";

/** The answer codes of a quota ask, as the script returns them. */
export const QUOTA_CODES = ["allow", "person", "team"] as const;
export type QuotaCode = (typeof QUOTA_CODES)[number];

export interface QuotaAnswer {
  readonly code: QuotaCode;
  readonly personSpent: number;
  readonly personReserved: number;
  /** 0 when the principal has no team. */
  readonly teamSpent: number;
  readonly teamReserved: number;
}

export interface QuotaAsk extends TenantTimes {
  readonly requestId: string;
  readonly worst: number;
  /** The principal's quota in micro-dollars, or -1 for none. */
  readonly personQuota: number;
  /** The team's quota in micro-dollars, or -1 for none (or no team). */
  readonly teamQuota: number;
}

export interface QuotaSpend extends TenantTimes {
  readonly kind: "usage" | "rewarm";
  readonly requestId: string;
  readonly cost: number;
}

/** A principal's or a team's month: spent, held worst cases, and (in the principal's) the answers given. */
export type QuotaMonth = TenantMonth<QuotaAnswer>;

export function newQuotaMonth(): QuotaMonth {
  return newTenantMonth<QuotaAnswer>();
}

const fits = (m: QuotaMonth, worst: number, quota: number): boolean => quota < 0 || m.spent + m.reserved + worst <= quota;

function answerOf(code: QuotaCode, person: QuotaMonth, team: QuotaMonth | null): QuotaAnswer {
  return { code, personSpent: person.spent, personReserved: person.reserved, teamSpent: team?.spent ?? 0, teamReserved: team?.reserved ?? 0 };
}

/** Checks an ask against the principal's and the team's month; when it fits both, holds its worst case in both. */
export function quotaAsk(person: QuotaMonth, team: QuotaMonth | null, a: QuotaAsk): QuotaAnswer {
  prune(person, a.now);
  if (team) prune(team, a.now);
  const key = `ask:${a.requestId}`;
  const before = person.done.get(key);
  if (before) return before.answer;
  const code: QuotaCode = !fits(person, a.worst, a.personQuota) ? "person" : team && !fits(team, a.worst, a.teamQuota) ? "team" : "allow";
  if (code === "allow") {
    for (const m of team ? [person, team] : [person]) {
      m.reserved += a.worst;
      m.held.set(a.requestId, { worst: a.worst, until: a.now + a.holdMs });
    }
  }
  const answer = answerOf(code, person, team);
  keep(person, key, answer, a.now + a.keepMs);
  return answer;
}

/** A check holds nothing: the principal's quota or the team's is spent (or neither), kept for replays as an ask is. */
export function quotaCheck(person: QuotaMonth, team: QuotaMonth | null, c: Omit<QuotaAsk, "worst" | "holdMs">): QuotaAnswer {
  prune(person, c.now);
  if (team) prune(team, c.now);
  const key = `check:${c.requestId}`;
  const before = person.done.get(key);
  if (before) return before.answer;
  const spentUp = (m: QuotaMonth, quota: number) => quota >= 0 && m.spent >= quota;
  const code: QuotaCode = spentUp(person, c.personQuota) ? "person" : team && spentUp(team, c.teamQuota) ? "team" : "allow";
  const answer = answerOf(code, person, team);
  keep(person, key, answer, c.now + c.keepMs);
  return answer;
}

/** The tenant, the forecast or the tree did not let a call through that the quotas admitted: its worst case is no longer held. */
export function quotaRelease(person: QuotaMonth, team: QuotaMonth | null, requestId: string): void {
  drop(person, requestId);
  if (team) drop(team, requestId);
}

/** A usage (its held worst cases dropped) or a re-warm: what it cost is spent in both months, once. */
export function quotaSettle(person: QuotaMonth, team: QuotaMonth | null, s: QuotaSpend): QuotaAnswer {
  prune(person, s.now);
  if (team) prune(team, s.now);
  const key = `${s.kind}:${s.requestId}`;
  const before = person.done.get(key);
  if (before) return before.answer;
  for (const m of team ? [person, team] : [person]) {
    if (s.kind === "usage") drop(m, s.requestId);
    m.spent += s.cost;
  }
  const answer = answerOf("allow", person, team);
  keep(person, key, answer, s.now + s.keepMs);
  return answer;
}

function keep(m: QuotaMonth, key: string, answer: QuotaAnswer, until: number): void {
  m.done.set(key, { answer, until });
}
