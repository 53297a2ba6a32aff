/** The limits state in memory, over the pure logic of admission.ts, tenant-budget.ts and forecast.ts: for unit tests. */
import { admitCall, askChild, endJob, newTreeState, rewarm, settleCall, startChild, startRoot, waitEvent, type TreeState } from "./admission.ts";
import { newForecastState, recordTree, statsOf, type ForecastState } from "./forecast.ts";
import { newQuotaMonth, quotaAsk, quotaRelease, quotaSettle, type QuotaMonth } from "./quota.ts";
import type { LimitsStore, QuotaHolder } from "./store.ts";
import { newTenantMonth, tenantAsk, tenantRelease, tenantSettle, type TenantMonth } from "./tenant-budget.ts";

/** Held worst cases and kept answers of the tenant's month, as in Redis by default. */
export const MEMORY_TENANT_TIMES = { holdMs: 3600_000, keepMs: 24 * 3600_000 } as const;

export interface MemoryLimitsStore extends LimitsStore {
  trees: Map<string, TreeState>;
  /** By `<tenant>/<YYYY-MM>`. */
  months: Map<string, TenantMonth>;
  /** By `<tenant>/<person|team>:<id>/<YYYY-MM>`. */
  quotas: Map<string, QuotaMonth>;
  /** By `<tenant>/<agent>`. */
  forecasts: Map<string, ForecastState>;
}

function getOr<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let v = map.get(key);
  if (v === undefined) {
    v = make();
    map.set(key, v);
  }
  return v;
}

export function memoryLimitsStore(options: { forecastWindow?: number } = {}): MemoryLimitsStore {
  const trees = new Map<string, TreeState>();
  const months = new Map<string, TenantMonth>();
  const forecasts = new Map<string, ForecastState>();
  const quotas = new Map<string, QuotaMonth>();
  const holders = new Map<string, { requestId: string; chance: number }>();
  const authoritative = new Map<string, boolean>();
  const tree = (id: string): TreeState => {
    const t = trees.get(id);
    if (!t) throw new Error(`tree ${id} has no settings: init it first`);
    return t;
  };
  const month = (tenant: string, m: string) => getOr(months, `${tenant}/${m}`, newTenantMonth);
  const quotaMonths = (who: QuotaHolder, m: string): [QuotaMonth, QuotaMonth | null] => [
    getOr(quotas, `${who.tenant}/person:${who.principal}/${m}`, newQuotaMonth),
    who.team ? getOr(quotas, `${who.tenant}/team:${who.team}/${m}`, newQuotaMonth) : null,
  ];
  const forecast = (tenant: string, agent: string) => getOr(forecasts, `${tenant}/${agent}`, () => newForecastState(options.forecastWindow));
  return {
    trees,
    months,
    quotas,
    forecasts,
    read: (treeId, jobId) => Promise.resolve({ settings: trees.get(treeId)?.settings ?? null, jobAgent: trees.get(treeId)?.jobs.get(jobId)?.agent ?? "" }),
    init: (treeId, settings, auth, root) => {
      const t = trees.get(treeId);
      if (!t) {
        trees.set(treeId, newTreeState(settings));
        authoritative.set(treeId, auth);
      } else if (auth && authoritative.get(treeId) === false) {
        t.settings = settings;
        authoritative.set(treeId, true);
      }
      const now = tree(treeId);
      if (root) startRoot(now, root.jobId, root.agent, root.runId);
      return Promise.resolve(now.settings);
    },
    admitCall: (treeId, ask) => Promise.resolve(admitCall(tree(treeId), ask)),
    settleCall: (treeId, usage) => Promise.resolve(settleCall(tree(treeId), usage)),
    rewarm: (treeId, requestId, cost) => Promise.resolve(rewarm(tree(treeId), requestId, cost)),
    child: (treeId, phase, ask) => Promise.resolve(phase === "ask" ? askChild(tree(treeId), ask) : startChild(tree(treeId), ask)),
    endJob: (treeId, jobId) => {
      endJob(tree(treeId), jobId);
      return Promise.resolve();
    },
    wait: (treeId, eventId, jobId, kind, ts) => Promise.resolve(waitEvent(tree(treeId), eventId, jobId, kind, ts)),
    spent: (treeId) => Promise.resolve(trees.get(treeId)?.spent ?? null),

    tenantAsk: (tenant, m, a) => Promise.resolve(tenantAsk(month(tenant, m), { ...a, ...MEMORY_TENANT_TIMES })),
    tenantRelease: (tenant, m, requestId) => Promise.resolve(tenantRelease(month(tenant, m), requestId)),
    tenantSettle: (tenant, m, s) => Promise.resolve(tenantSettle(month(tenant, m), { ...s, ...MEMORY_TENANT_TIMES })),

    quotaAsk: (who, m, a) => Promise.resolve(quotaAsk(...quotaMonths(who, m), { ...a, ...MEMORY_TENANT_TIMES })),
    quotaRelease: (who, m, requestId) => Promise.resolve(quotaRelease(...quotaMonths(who, m), requestId)),
    quotaSettle: (who, m, s) => Promise.resolve(quotaSettle(...quotaMonths(who, m), { ...s, ...MEMORY_TENANT_TIMES })),

    treeOutcome: (treeId) => {
      const t = trees.get(treeId);
      return Promise.resolve(t ? { spent: t.spent, budget: t.settings.budget, hit: t.budgetHit } : null);
    },
    recordFinished: (tenant, agent, treeId, bucket) => Promise.resolve(recordTree(forecast(tenant, agent), treeId, bucket)),
    forecastStats: (tenant, agent) => Promise.resolve(statsOf(forecast(tenant, agent))),
    forecastOnce: (treeId, requestId, claim) => {
      const t = trees.get(treeId);
      if (!t) return Promise.resolve({ given: false, taken: false, chance: 0, spent: -1 });
      if (!holders.has(treeId) && claim) holders.set(treeId, { requestId, chance: Math.round(claim.chance * 1_000_000) / 1_000_000 });
      const holder = holders.get(treeId);
      const given = holder?.requestId === requestId;
      return Promise.resolve({ given, taken: holder !== undefined && !given, chance: given ? holder.chance : 0, spent: t.spent });
    },
  };
}
