/**
 * The Redis half of the tenant's monthly budget and the quotas per person and team (LIM-10),
 * and the spend forecast (LIM-8): the scripts limitsTenant, limitsQuota, limitsForecastRecord
 * and limitsForecastOnce, each one atomic step on keys of one slot, idempotent by its input.
 * A Redis failure is classified by what the server said (`store/redis/errors.ts`): a
 * TransientError, or a StoreRefused naming the key.
 */
import type { RedisClient } from "../../store/redis/client.ts";
import type { Keys } from "../../store/redis/keys.ts";
import { runScript } from "../../store/redis/scripts.ts";
import { redisFailure } from "../../store/redis/errors.ts";
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

function ints(reply: unknown, what: string): number[] {
  if (!Array.isArray(reply) || reply.some((v) => typeof v !== "number")) throw new Error(`${what} answered ${JSON.stringify(reply)}, not a list of integers`);
  return reply as number[];
}

function tenantAnswer(r: number[]): TenantAnswer {
  const code = TENANT_CODES[r[0] ?? -1];
  if (code === undefined) throw new Error(`limitsTenant answered code ${r[0]}, which is not one of ${TENANT_CODES.length}: the script and tenant-budget.ts disagree`);
  return { code, spent: r[1] ?? 0, reserved: r[2] ?? 0, spentBefore: r[3] ?? 0 };
}

function quotaAnswer(r: number[]): QuotaAnswer {
  const code = QUOTA_CODES[r[0] ?? -1];
  if (code === undefined) throw new Error(`limitsQuota answered code ${r[0]}, which is not one of ${QUOTA_CODES.length}: the script and quota.ts disagree`);
  return { code, personSpent: r[1] ?? 0, personReserved: r[2] ?? 0, teamSpent: r[3] ?? 0, teamReserved: r[4] ?? 0 };
}

export function redisBudgetStore(redis: RedisClient, keys: Keys, options: RedisBudgetOptions = {}): BudgetPart {
  const hold = options.tenantHoldMs ?? 3600_000;
  const keep = options.tenantKeepMs ?? 24 * 3600_000;
  const tenantTtl = options.tenantTtlSeconds ?? 40 * 24 * 3600;
  const forecastTtl = options.forecastTtlSeconds ?? 90 * 24 * 3600;
  const window = options.forecastWindow ?? FORECAST_WINDOW;

  async function guarded<T>(what: string, key: string, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (err) {
      throw redisFailure(err, what, key);
    }
  }

  const tenant = (t: string, month: string, args: Array<string | number>) =>
    guarded(`keeping the monthly spend of tenant ${t}`, keys.tenantMonth(t, month), async () => ints(await runScript(redis, "limitsTenant", [keys.tenantMonth(t, month), keys.tenantMonthTimers(t, month)], [...args, hold, keep, tenantTtl]), "limitsTenant"));

  const quota = (who: QuotaHolder, month: string, op: string, requestId: string, amount: number, quotas: readonly [number, number], now: number) =>
    guarded(`keeping the monthly spend of ${who.principal}${who.team ? ` and team ${who.team}` : ""} (tenant ${who.tenant})`, keys.quotaMonth(who.tenant, "person", who.principal, month), async () => {
      const person = [keys.quotaMonth(who.tenant, "person", who.principal, month), keys.quotaMonthTimers(who.tenant, "person", who.principal, month)];
      const team = who.team ? [keys.quotaMonth(who.tenant, "team", who.team, month), keys.quotaMonthTimers(who.tenant, "team", who.team, month)] : person;
      const args = [op, requestId, amount, ...quotas, who.team ? 1 : 0, now, hold, keep, tenantTtl];
      return quotaAnswer(ints(await runScript(redis, "limitsQuota", [...person, ...team], args), "limitsQuota"));
    });

  return {
    tenantAsk: async (t, month, a) => tenantAnswer(await tenant(t, month, ["ask", a.requestId, a.worst, a.budget, a.now])),
    tenantRelease: async (t, month, requestId) => void (await tenant(t, month, ["release", requestId, 0, 0, 0])),
    tenantSettle: async (t, month, s) => tenantAnswer(await tenant(t, month, [s.kind, s.requestId, s.cost, 0, s.now])),
    tenantSpends: (t, month, spends) =>
      guarded(`keeping the monthly spend of tenant ${t}`, keys.tenantMonth(t, month), async () => {
        if (spends.length === 0) return [];
        const args: Array<string | number> = [hold, keep, tenantTtl, spends.length];
        for (const s of spends) args.push(s.kind, s.requestId, s.cost, s.now);
        const r = ints(await runScript(redis, "limitsTenantSpends", [keys.tenantMonth(t, month), keys.tenantMonthTimers(t, month)], args), "limitsTenantSpends");
        if (r.length !== 4 * spends.length) throw new Error(`limitsTenantSpends answered ${r.length} numbers for ${spends.length} spends, not 4 each`);
        return spends.map((_, i) => tenantAnswer(r.slice(4 * i, 4 * i + 4)));
      }),

    quotaAsk: (who, month, a) => quota(who, month, "ask", a.requestId, a.worst, [a.personQuota, a.teamQuota], a.now),
    quotaCheck: (who, month, c) => quota(who, month, "check", c.requestId, 0, [c.personQuota, c.teamQuota], c.now),
    quotaRelease: async (who, month, requestId) => void (await quota(who, month, "release", requestId, 0, [-1, -1], 0)),
    quotaSettle: (who, month, s) => quota(who, month, s.kind, s.requestId, s.cost, [-1, -1], s.now),

    treeOutcome: (tenant, treeId) =>
      guarded(`reading how tree ${treeId} ended`, keys.limits(tenant, treeId), async () => {
        const [auth, spent, budget, hit] = await redis.hmget(keys.limits(tenant, treeId), "s:auth", "spent", "s:budget", "budget_hit");
        return auth === null ? null : { spent: Number(spent ?? 0), budget: Number(budget ?? -1), hit: hit === "1" };
      }),

    recordFinished: (t, agent, treeId, bucket) =>
      guarded(`recording tree ${treeId} for the forecast of ${agent}`, keys.forecast(t, agent), async () => {
        const r = ints(await runScript(redis, "limitsForecastRecord", [keys.forecast(t, agent)], [treeId, bucket, window, forecastTtl]), "limitsForecastRecord");
        return r[0] === 1;
      }),

    forecastStats: (t, agent) =>
      guarded(`reading the forecast of ${agent}`, keys.forecast(t, agent), async (): Promise<ForecastStats> => {
        const fields = ["finished", "hits", ...Array.from({ length: FORECAST_BUCKETS }, (_, i) => `b:${i}`)];
        const values = (await redis.hmget(keys.forecast(t, agent), ...fields)).map((v) => Number(v ?? 0));
        return { finished: values[0] ?? 0, hits: values[1] ?? 0, buckets: values.slice(2) };
      }),

    forecastOnce: (tenant, treeId, requestId, claim) =>
      guarded(`giving tree ${treeId} its forecast`, keys.limits(tenant, treeId), async () => {
        const args = [requestId, claim ? 1 : 0, claim ? Math.round(claim.chance * 1_000_000) : 0];
        const r = ints(await runScript(redis, "limitsForecastOnce", [keys.limits(tenant, treeId)], args), "limitsForecastOnce");
        return { given: r[0] === 1, taken: r[1] === 1, chance: (r[2] ?? 0) / 1_000_000, spent: r[3] ?? -1 };
      }),
  };
}
