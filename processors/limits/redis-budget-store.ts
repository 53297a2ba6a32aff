/**
 * The Redis half of the tenant's monthly budget and the quotas per person and team (LIM-10),
 * and the spend forecast (LIM-8): the scripts limitsTenant, limitsQuota, limitsForecastRecord
 * and limitsForecastOnce, each one atomic step on keys of one slot, idempotent by its input.
 * A Redis failure is classified by what the server said (`store/redis/errors.ts`): a
 * TransientError, or a StoreRefused naming the key.
 */
import type { RedisClient } from "../../store/redis/client.ts";
import type { Keys } from "../../store/redis/keys.ts";
import { redisCall } from "../../store/redis/errors.ts";
import { defineScript, integers, type ReplyDecoder } from "../../store/redis/script.ts";
import { FORECAST_BUCKETS, FORECAST_WINDOW, type ForecastStats } from "./forecast.ts";
import { QUOTA_CODES, type QuotaAnswer } from "./quota.ts";
import type { LimitsStore, QuotaHolder } from "./store.ts";
import { TENANT_CODES, type TenantAnswer } from "./tenant-budget.ts";

export interface RedisBudgetOptions {
  /** How long an admitted ask holds its worst case against the tenant without a usage, ms. @default 1 hour */
  readonly tenantHoldMs?: number;
  /** How long the tenant's answers are kept for replays, ms. @default 1 day */
  readonly tenantKeepMs?: number;
  /** Seconds a tenant's month lives after its last event. @default 40 days */
  readonly tenantTtlSeconds?: number;
  /** Seconds an agent's forecast history lives after its last finished tree. @default 90 days */
  readonly forecastTtlSeconds?: number;
  /** Finished trees kept per agent. @default FORECAST_WINDOW */
  readonly forecastWindow?: number;
}

type BudgetPart = Pick<LimitsStore, "tenantAsk" | "tenantRelease" | "tenantSettle" | "tenantSpends" | "quotaAsk" | "quotaCheck" | "quotaRelease" | "quotaSettle" | "treeOutcome" | "recordFinished" | "forecastStats" | "forecastOnce">;

function tenantAnswer(r: number[], fail: (expected: string) => never): TenantAnswer {
  const code = TENANT_CODES[r[0] ?? -1];
  if (code === undefined) fail(`a code of the ${TENANT_CODES.length} of tenant-budget.ts`);
  return { code, spent: r[1] ?? 0, reserved: r[2] ?? 0, spentBefore: r[3] ?? 0 };
}

/** How long a tenant's or a quota's answers are held and kept. */
interface Timers {
  readonly hold: number;
  readonly keep: number;
  readonly ttl: number;
}

type TenantMonth = { readonly tenant: string; readonly month: string };

/** One step of a tenant's month (ask, release, usage, rewarm, ...): its code and spends. */
export const limitsTenant = defineScript({
  name: "limitsTenant",
  keys: (k, i: TenantMonth & { readonly step: readonly [op: string, requestId: string, amount: number, budget: number, now: number]; readonly timers: Timers }) => [k.tenantMonth(i.tenant, i.month), k.tenantMonthTimers(i.tenant, i.month)],
  args: (i) => [...i.step, i.timers.hold, i.timers.keep, i.timers.ttl],
  reply: (raw, fail) => tenantAnswer(integers(raw, fail), fail),
  what: (i) => `keeping the monthly spend of tenant ${i.tenant}`,
});

/** Several spends of a tenant's month in one step: an answer for each. */
export const limitsTenantSpends = defineScript({
  name: "limitsTenantSpends",
  keys: (k, i: TenantMonth & { readonly spends: ReadonlyArray<{ readonly kind: string; readonly requestId: string; readonly cost: number; readonly now: number }>; readonly timers: Timers }) => [k.tenantMonth(i.tenant, i.month), k.tenantMonthTimers(i.tenant, i.month)],
  args: (i) => [i.timers.hold, i.timers.keep, i.timers.ttl, i.spends.length, ...i.spends.flatMap((s) => [s.kind, s.requestId, s.cost, s.now])],
  reply: (raw, fail) => {
    const r = integers(raw, fail);
    if (r.length % 4 !== 0) fail("4 numbers for each spend");
    return Array.from({ length: r.length / 4 }, (_, i) => tenantAnswer(r.slice(4 * i, 4 * i + 4), fail));
  },
  what: (i) => `keeping the monthly spend of tenant ${i.tenant}`,
});

const quotaAnswer: ReplyDecoder<QuotaAnswer> = (raw, fail) => {
  const r = integers(raw, fail);
  const code = QUOTA_CODES[r[0] ?? -1];
  if (code === undefined) return fail(`a code of the ${QUOTA_CODES.length} of quota.ts`);
  return { code, personSpent: r[1] ?? 0, personReserved: r[2] ?? 0, teamSpent: r[3] ?? 0, teamReserved: r[4] ?? 0 };
};

/** One step of a person's quota and their team's in a month. */
export const limitsQuota = defineScript({
  name: "limitsQuota",
  keys: (k, i: { readonly who: QuotaHolder; readonly month: string; readonly step: readonly [op: string, requestId: string, amount: number, personQuota: number, teamQuota: number]; readonly now: number; readonly timers: Timers }) => {
    const person = [k.quotaMonth(i.who.tenant, "person", i.who.principal, i.month), k.quotaMonthTimers(i.who.tenant, "person", i.who.principal, i.month)];
    const team = i.who.team ? [k.quotaMonth(i.who.tenant, "team", i.who.team, i.month), k.quotaMonthTimers(i.who.tenant, "team", i.who.team, i.month)] : person;
    return [...person, ...team];
  },
  args: (i) => [...i.step, i.who.team ? 1 : 0, i.now, i.timers.hold, i.timers.keep, i.timers.ttl],
  reply: quotaAnswer,
  what: (i) => `keeping the monthly spend of ${i.who.principal}${i.who.team ? ` and team ${i.who.team}` : ""} (tenant ${i.who.tenant})`,
});

/** Records a finished tree's spend bucket in its agent's forecast, once: true when recorded. */
export const limitsForecastRecord = defineScript({
  name: "limitsForecastRecord",
  keys: (k, i: { readonly tenant: string; readonly agent: string; readonly tree: string; readonly bucket: number; readonly window: number; readonly ttl: number }) => [k.forecast(i.tenant, i.agent)],
  args: (i) => [i.tree, i.bucket, i.window, i.ttl],
  reply: (raw, fail) => integers(raw, fail)[0] === 1,
  what: (i) => `recording tree ${i.tree} for the forecast of ${i.agent}`,
});

/** Gives a tree its forecast once per request. */
export const limitsForecastOnce = defineScript({
  name: "limitsForecastOnce",
  keys: (k, i: { readonly tenant: string; readonly tree: string; readonly requestId: string; readonly claim: { readonly chance: number } | null }) => [k.limits(i.tenant, i.tree)],
  args: (i) => [i.requestId, i.claim ? 1 : 0, i.claim ? Math.round(i.claim.chance * 1_000_000) : 0],
  reply: (raw, fail) => {
    const r = integers(raw, fail);
    return { given: r[0] === 1, taken: r[1] === 1, chance: (r[2] ?? 0) / 1_000_000, spent: r[3] ?? -1 };
  },
  what: (i) => `giving tree ${i.tree} its forecast`,
});

export function redisBudgetStore(redis: RedisClient, keys: Keys, options: RedisBudgetOptions = {}): BudgetPart {
  const hold = options.tenantHoldMs ?? 3600_000;
  const keep = options.tenantKeepMs ?? 24 * 3600_000;
  const tenantTtl = options.tenantTtlSeconds ?? 40 * 24 * 3600;
  const forecastTtl = options.forecastTtlSeconds ?? 90 * 24 * 3600;
  const window = options.forecastWindow ?? FORECAST_WINDOW;

  const timers: Timers = { hold, keep, ttl: tenantTtl };
  const tenant = (t: string, month: string, step: readonly [string, string, number, number, number]) => limitsTenant.run(redis, keys, { tenant: t, month, step, timers });

  const quota = (who: QuotaHolder, month: string, op: string, requestId: string, amount: number, quotas: readonly [number, number], now: number) =>
    limitsQuota.run(redis, keys, { who, month, step: [op, requestId, amount, ...quotas], now, timers });

  return {
    tenantAsk: (t, month, a) => tenant(t, month, ["ask", a.requestId, a.worst, a.budget, a.now]),
    tenantRelease: async (t, month, requestId) => void (await tenant(t, month, ["release", requestId, 0, 0, 0])),
    tenantSettle: (t, month, s) => tenant(t, month, [s.kind, s.requestId, s.cost, 0, s.now]),
    tenantSpends: async (t, month, spends) => {
      if (spends.length === 0) return [];
      const answers = await limitsTenantSpends.run(redis, keys, { tenant: t, month, spends, timers });
      if (answers.length !== spends.length) throw new Error(`limitsTenantSpends answered ${4 * answers.length} numbers for ${spends.length} spends, not 4 each`);
      return answers;
    },

    quotaAsk: (who, month, a) => quota(who, month, "ask", a.requestId, a.worst, [a.personQuota, a.teamQuota], a.now),
    quotaCheck: (who, month, c) => quota(who, month, "check", c.requestId, 0, [c.personQuota, c.teamQuota], c.now),
    quotaRelease: async (who, month, requestId) => void (await quota(who, month, "release", requestId, 0, [-1, -1], 0)),
    quotaSettle: (who, month, s) => quota(who, month, s.kind, s.requestId, s.cost, [-1, -1], s.now),

    treeOutcome: (tenant, treeId) =>
      redisCall(`reading how tree ${treeId} ended`, keys.limits(tenant, treeId), async () => {
        const [auth, spent, budget, hit] = await redis.hmget(keys.limits(tenant, treeId), "s:auth", "spent", "s:budget", "budget_hit");
        return auth === null ? null : { spent: Number(spent ?? 0), budget: Number(budget ?? -1), hit: hit === "1" };
      }),

    recordFinished: (t, agent, treeId, bucket) =>
      limitsForecastRecord.run(redis, keys, { tenant: t, agent, tree: treeId, bucket, window, ttl: forecastTtl }),

    forecastStats: (t, agent) =>
      redisCall(`reading the forecast of ${agent}`, keys.forecast(t, agent), async (): Promise<ForecastStats> => {
        const fields = ["finished", "hits", ...Array.from({ length: FORECAST_BUCKETS }, (_, i) => `b:${i}`)];
        const values = (await redis.hmget(keys.forecast(t, agent), ...fields)).map((v) => Number(v ?? 0));
        return { finished: values[0] ?? 0, hits: values[1] ?? 0, buckets: values.slice(2) };
      }),

    forecastOnce: (tenant, treeId, requestId, claim) =>
      limitsForecastOnce.run(redis, keys, { tenant, tree: treeId, requestId, claim }),
  };
}
