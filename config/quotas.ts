/**
 * LIM-10: a tenant's monthly quotas per person and per team (seed 003, "monthly quota (oz0
 * quota set)"): what one principal, or one team, may spend in a calendar month (UTC) across
 * all the job trees they start. Past it, the job waits for a budget request.
 */
import { readMoney, withoutUndefined } from "./fields.ts";
import type { Value } from "./yaml-file.ts";

/** `quotas` of a tenant, in US dollars. */
export interface TenantQuotas {
  /** Each person's (each principal's) quota per month. @default none */
  readonly person?: number;
  /** Each team's quota per month. @default none */
  readonly team?: number;
  /** One principal's own quota, over `person`. */
  readonly per_person?: Readonly<Record<string, number>>;
  /** One team's own quota, over `team`. */
  readonly per_team?: Readonly<Record<string, number>>;
  /** Quotas for one month only (`YYYY-MM`, UTC), over all the others in that month (`oz0 quota set --month`). */
  readonly per_month?: Readonly<Record<string, MonthQuotas>>;
}

/** The quotas of one month: a principal's or a team's own, for that month alone. */
export interface MonthQuotas {
  readonly per_person?: Readonly<Record<string, number>>;
  readonly per_team?: Readonly<Record<string, number>>;
}

export type QuotaKind = "person" | "team";

/** The quota that holds one principal or team, and the setting that sets it (for messages). */
export interface QuotaOf {
  readonly usd: number;
  /** `quotas.person`, or `quotas.per_person.<id>` when the principal has its own. */
  readonly setting: string;
}

/** The quota of `id` (a principal or a team) in `month` (`YYYY-MM`, UTC), or null when none holds it. */
export function quotaOf(quotas: TenantQuotas | undefined, kind: QuotaKind, id: string, month: string): QuotaOf | null {
  if (!quotas || !id) return null;
  const once = quotas.per_month?.[month]?.[`per_${kind}`]?.[id];
  if (once !== undefined) return { usd: once, setting: `quotas.per_month.${month}.per_${kind}.${id}` };
  const own = kind === "person" ? quotas.per_person?.[id] : quotas.per_team?.[id];
  if (own !== undefined) return { usd: own, setting: `quotas.per_${kind}.${id}` };
  const all = quotas[kind];
  return all === undefined ? null : { usd: all, setting: `quotas.${kind}` };
}

const QUOTA_KEYS = ["person", "team", "per_person", "per_team", "per_month"] as const;
/** A calendar month as quotas name it: `YYYY-MM` (UTC). */
export const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;

/** Parses `quotas:` of a tenant's settings; undefined when left out. */
export function readQuotas(v: Value): TenantQuotas | undefined {
  if (v.absent) return undefined;
  const fields = v.mapping(QUOTA_KEYS);
  if (fields === undefined) return undefined;
  return withoutUndefined({
    person: readQuota(fields.get("person"), "each person's monthly quota in US dollars, or none,"),
    team: readQuota(fields.get("team"), "each team's monthly quota in US dollars, or none,"),
    per_person: readOwnQuotas(fields.get("per_person"), "person"),
    per_team: readOwnQuotas(fields.get("per_team"), "team"),
    per_month: readMonths(fields.get("per_month")),
  });
}

function readMonths(v: Value): Record<string, MonthQuotas> | undefined {
  if (v.absent) return undefined;
  if (!v.isMapping) return v.fail(`expected a mapping of month (YYYY-MM, UTC) to quotas per_person and per_team, such as {"2026-12": {per_person: {alice: 200}}}; got ${v.describe()}`);
  const out: Record<string, MonthQuotas> = {};
  for (const month of Object.keys(v.toJS() as Record<string, unknown>)) {
    const m = v.child(month);
    if (!MONTH.test(month)) {
      m.fail(`a month is written YYYY-MM (UTC), such as 2026-12; got ${JSON.stringify(month)}`);
      continue;
    }
    const fields = m.mapping(["per_person", "per_team"]);
    if (fields === undefined) continue;
    const quotas = withoutUndefined({ per_person: readOwnQuotas(fields.get("per_person"), "person"), per_team: readOwnQuotas(fields.get("per_team"), "team") });
    if (Object.keys(quotas).length > 0) out[month] = quotas;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}

function readQuota(v: Value, what: string): number | undefined {
  if (v.scalar === "none") return undefined;
  return readMoney(v, what);
}

function readOwnQuotas(v: Value, kind: QuotaKind): Record<string, number> | undefined {
  if (v.absent) return undefined;
  if (!v.isMapping) return v.fail(`expected a mapping of ${kind} to monthly quota in US dollars, such as {research: 2000}; got ${v.describe()}`);
  const out: Record<string, number> = {};
  for (const id of Object.keys(v.toJS() as Record<string, unknown>)) {
    // Principals are the binding's names (an email, an app's ID), kept as written.
    const usd = readMoney(v.child(id), `the monthly quota of ${kind} ${id} in US dollars`);
    if (usd !== undefined) out[id] = usd;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}
