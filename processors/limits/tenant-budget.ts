/**
 * LIM-10: a tenant's monthly budget, pure. One state per tenant and calendar month (UTC), in
 * micro-dollars: what was spent, and the worst cases held for calls admitted and not settled.
 * An ask is admitted when `spent + reserved + worst <= budget`, and then holds its worst case,
 * so concurrent asks can never pass the budget together (no last call at the tenant).
 *
 * The tree's state and the tenant's are two keys in two slots, so they change in two steps: a
 * crash between them re-runs the batch, and each step is idempotent by the request ID. A held
 * worst case is dropped when its usage settles, when the tree refuses the call, or `holdMs`
 * after the ask (a call whose usage never comes). Answers are kept `keepMs` for replays.
 * It is the specification store/redis/lua/limitsTenant-2.lua follows.
 */

/** One month's spend; `A` is what its answers are (a quota's month keeps its own kind). */
export interface TenantMonth<A = TenantAnswer> {
  spent: number;
  reserved: number;
  /** Worst cases held, by request ID, and when each is dropped (ms). */
  held: Map<string, { worst: number; until: number }>;
  /** Answers already given, by `<op>:<request>`, and when each is forgotten (ms). */
  done: Map<string, { answer: A; until: number }>;
}

export function newTenantMonth<A = TenantAnswer>(): TenantMonth<A> {
  return { spent: 0, reserved: 0, held: new Map(), done: new Map() };
}

/** The answer codes of a tenant ask, as the script returns them. */
export const TENANT_CODES = ["allow", "budget"] as const;
export type TenantCode = (typeof TENANT_CODES)[number];

export interface TenantAnswer {
  readonly code: TenantCode;
  readonly spent: number;
  readonly reserved: number;
  /** Spent before this input. */
  readonly spentBefore: number;
}

export interface TenantTimes {
  /** The event's time, ms: what ages held worst cases and kept answers. */
  readonly now: number;
  /** How long an admitted ask holds its worst case without a usage. */
  readonly holdMs: number;
  /** How long an answer is kept for replays. */
  readonly keepMs: number;
}

export interface TenantAsk extends TenantTimes {
  readonly requestId: string;
  readonly worst: number;
  /** The tenant's monthly budget, micro-dollars (≥ 0). */
  readonly budget: number;
}

export interface TenantSpend extends TenantTimes {
  readonly kind: "usage" | "rewarm";
  readonly requestId: string;
  readonly cost: number;
}

/** Drops held worst cases and kept answers whose time is up. */
export function prune<A>(m: TenantMonth<A>, now: number): void {
  for (const [req, h] of m.held) {
    if (h.until <= now) {
      m.reserved -= h.worst;
      m.held.delete(req);
    }
  }
  for (const [key, d] of m.done) if (d.until <= now) m.done.delete(key);
}

/** Drops the worst case `requestId` holds, if it holds one. */
export function drop<A>(m: TenantMonth<A>, requestId: string): void {
  const h = m.held.get(requestId);
  if (h) {
    m.reserved -= h.worst;
    m.held.delete(requestId);
  }
}

/** Checks an ask against the tenant's month and, when it fits, holds its worst case. */
export function tenantAsk(m: TenantMonth, a: TenantAsk): TenantAnswer {
  prune(m, a.now);
  const key = `ask:${a.requestId}`;
  const before = m.done.get(key);
  if (before) return before.answer;
  const spentBefore = m.spent;
  const code: TenantCode = m.spent + m.reserved + a.worst <= a.budget ? "allow" : "budget";
  if (code === "allow") {
    m.reserved += a.worst;
    m.held.set(a.requestId, { worst: a.worst, until: a.now + a.holdMs });
  }
  const answer: TenantAnswer = { code, spent: m.spent, reserved: m.reserved, spentBefore };
  m.done.set(key, { answer, until: a.now + a.keepMs });
  return answer;
}

/** The tree refused (or the forecast held) a call the tenant admitted: its worst case is no longer held. */
export function tenantRelease(m: TenantMonth, requestId: string): void {
  drop(m, requestId);
}

/** A usage (its held worst case dropped) or a re-warm: what it cost is spent, once. */
export function tenantSettle(m: TenantMonth, s: TenantSpend): TenantAnswer {
  prune(m, s.now);
  const key = `${s.kind}:${s.requestId}`;
  const before = m.done.get(key);
  if (before) return before.answer;
  const spentBefore = m.spent;
  if (s.kind === "usage") drop(m, s.requestId);
  m.spent += s.cost;
  const answer: TenantAnswer = { code: "allow", spent: m.spent, reserved: m.reserved, spentBefore };
  m.done.set(key, { answer, until: s.now + s.keepMs });
  return answer;
}

/** The calendar month (UTC) of a time in ms, as `YYYY-MM`. */
export function monthOf(ts: number): string {
  return new Date(ts).toISOString().slice(0, 7);
}
