/**
 * The limits state in memory, over the pure logic of admission.ts, tenant-budget.ts and
 * forecast.ts, and the two smaller ports (jobs' standings, unknown outcomes): for unit tests.
 */
import { admitCall, askChild, endJob, newTreeState, rewarm, settleCall, startChild, startRoot, waitEvent, type TreeState } from "./admission.ts";
import { newForecastState, recordTree, statsOf, type ForecastState } from "./forecast.ts";
import { newQuotaMonth, quotaAsk, quotaCheck, quotaRelease, quotaSettle, type QuotaMonth } from "./quota.ts";
import { standingFields, type LimitsStore, type QuotaHolder, type StandingStore, type TreeStepAnswer, type UnknownOutcomeStore } from "./store.ts";
import { newTenantMonth, tenantAsk, tenantRelease, tenantSettle, type TenantMonth } from "./tenant-budget.ts";
import type { BudgetAnswer, BudgetRequest } from "./budget-requests.ts";
import { NO_LIMIT } from "./tree-settings.ts";
import type { UnknownOutcomeAnswer, UnknownOutcomeRequest } from "./unknown-outcomes.ts";

/** Held worst cases and kept answers of the tenant's month, as in Redis by default. */
export const MEMORY_TENANT_TIMES = { holdMs: 3600_000, keepMs: 24 * 3600_000 } as const;

export interface MemoryLimitsStore extends LimitsStore {
  /** By `limitsTreeKey(tenant, tree)`. */
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

/** The memory store's key of a tenant's tree: the tenant URI-encoded, as `Keys.limits` names it. */
export function limitsTreeKey(tenant: string, treeId: string): string {
  return `${encodeURIComponent(tenant)}/${treeId}`;
}

export function memoryLimitsStore(options: { forecastWindow?: number } = {}): MemoryLimitsStore {
  const trees = new Map<string, TreeState>();
  const months = new Map<string, TenantMonth>();
  const forecasts = new Map<string, ForecastState>();
  const quotas = new Map<string, QuotaMonth>();
  const holders = new Map<string, { requestId: string; chance: number }>();
  const authoritative = new Map<string, boolean>();
  const tree = (tenant: string, id: string): TreeState => {
    const t = trees.get(limitsTreeKey(tenant, id));
    if (!t) throw new Error(`tree ${id} of tenant ${tenant} has no settings: init it first`);
    return t;
  };
  const month = (tenant: string, m: string) => getOr(months, `${tenant}/${m}`, newTenantMonth);
  const quotaMonths = (who: QuotaHolder, m: string): [QuotaMonth, QuotaMonth | null] => [
    getOr(quotas, `${who.tenant}/person:${who.principal}/${m}`, newQuotaMonth),
    who.team ? getOr(quotas, `${who.tenant}/team:${who.team}/${m}`, newQuotaMonth) : null,
  ];
  const forecast = (tenant: string, agent: string) => getOr(forecasts, `${tenant}/${agent}`, () => newForecastState(options.forecastWindow));
  const requests = new Map<string, { request: BudgetRequest; answered: BudgetAnswer | null }>();
  return {
    trees,
    months,
    quotas,
    forecasts,
    read: (tenant, treeId, jobId) => {
      const t = trees.get(limitsTreeKey(tenant, treeId));
      const j = t?.jobs.get(jobId);
      return Promise.resolve({ settings: t?.settings ?? null, jobAgent: j?.agent ?? "", jobStart: j?.at ?? -1, jobTimeout: j?.timeout ?? -1, jobSession: j?.session ?? false });
    },
    init: (tenant, treeId, settings, auth, root) => {
      const key = limitsTreeKey(tenant, treeId);
      const t = trees.get(key);
      if (!t) {
        trees.set(key, newTreeState(settings));
        authoritative.set(key, auth);
      } else if (auth && authoritative.get(key) === false) {
        t.settings = settings;
        authoritative.set(key, true);
      }
      const now = tree(tenant, treeId);
      if (root) startRoot(now, root.jobId, root.agent, root.runId, root.at, root.timeout, root.session);
      return Promise.resolve(now.settings);
    },
    admitCall: (tenant, treeId, ask) => Promise.resolve(admitCall(tree(tenant, treeId), ask)),
    settleCall: (tenant, treeId, usage) => Promise.resolve(settleCall(tree(tenant, treeId), usage)),
    rewarm: (tenant, treeId, requestId, cost) => Promise.resolve(rewarm(tree(tenant, treeId), requestId, cost)),
    treeSteps: (tenant, treeId, steps) => {
      const t = tree(tenant, treeId);
      return Promise.resolve(
        steps.map((s): TreeStepAnswer => {
          if (s.kind === "ask") return { kind: "ask", answer: admitCall(t, s.ask) };
          if (s.kind === "usage") return { kind: "usage", answer: settleCall(t, s.usage) };
          return { kind: "rewarm", answer: rewarm(t, s.requestId, s.cost) };
        }),
      );
    },
    child: (tenant, treeId, phase, ask) => Promise.resolve(phase === "ask" ? askChild(tree(tenant, treeId), ask) : startChild(tree(tenant, treeId), ask)),
    endJob: (tenant, treeId, jobId) => {
      endJob(tree(tenant, treeId), jobId);
      return Promise.resolve();
    },
    wait: (tenant, treeId, eventId, jobId, kind, ts) => Promise.resolve(waitEvent(tree(tenant, treeId), eventId, jobId, kind, ts)),
    spent: (tenant, treeId) => Promise.resolve(trees.get(limitsTreeKey(tenant, treeId))?.spent ?? null),

    tenantAsk: (tenant, m, a) => Promise.resolve(tenantAsk(month(tenant, m), { ...a, ...MEMORY_TENANT_TIMES })),
    tenantRelease: (tenant, m, requestId) => Promise.resolve(tenantRelease(month(tenant, m), requestId)),
    tenantSettle: (tenant, m, s) => Promise.resolve(tenantSettle(month(tenant, m), { ...s, ...MEMORY_TENANT_TIMES })),
    tenantSpends: (tenant, m, spends) => Promise.resolve(spends.map((s) => tenantSettle(month(tenant, m), { ...s, ...MEMORY_TENANT_TIMES }))),

    quotaAsk: (who, m, a) => Promise.resolve(quotaAsk(...quotaMonths(who, m), { ...a, ...MEMORY_TENANT_TIMES })),
    quotaCheck: (who, m, c) => Promise.resolve(quotaCheck(...quotaMonths(who, m), { ...c, ...MEMORY_TENANT_TIMES })),
    quotaRelease: (who, m, requestId) => Promise.resolve(quotaRelease(...quotaMonths(who, m), requestId)),
    quotaSettle: (who, m, s) => Promise.resolve(quotaSettle(...quotaMonths(who, m), { ...s, ...MEMORY_TENANT_TIMES })),

    treeOutcome: (tenant, treeId) => {
      const t = trees.get(limitsTreeKey(tenant, treeId));
      return Promise.resolve(t ? { spent: t.spent, budget: t.settings.budget, hit: t.budgetHit } : null);
    },
    recordFinished: (tenant, agent, treeId, bucket) => Promise.resolve(recordTree(forecast(tenant, agent), treeId, bucket)),
    forecastStats: (tenant, agent) => Promise.resolve(statsOf(forecast(tenant, agent))),
    putBudgetRequest: (r) => {
      if (!requests.has(r.approval)) requests.set(r.approval, { request: r, answered: null });
      return Promise.resolve();
    },
    budgetRequests: () =>
      Promise.resolve(
        [...requests.values()]
          .filter((x) => x.answered === null)
          .map((x) => x.request)
          .sort((a, b) => a.asked_at - b.asked_at),
      ),
    budgetRequest: (approval) => {
      const x = requests.get(approval);
      if (!x) return Promise.resolve(null);
      const t = trees.get(limitsTreeKey(x.request.tenant, x.request.tree_id));
      return Promise.resolve({ ...x, treeBudget: t?.settings.budget ?? NO_LIMIT });
    },
    answerBudgetRequest: (r, a) => {
      const x = requests.get(r.approval);
      if (!x) return Promise.reject(new Error(`no budget request ${r.approval} is kept`));
      if (x.answered) return Promise.resolve(x.answered);
      const t = trees.get(limitsTreeKey(r.tenant, r.tree_id));
      if (t && a.budget >= 0 && (t.settings.budget === NO_LIMIT ? false : a.budget > t.settings.budget)) t.settings = { ...t.settings, budget: a.budget };
      x.answered = a;
      return Promise.resolve(a);
    },
    forecastOnce: (tenant, treeId, requestId, claim) => {
      const key = limitsTreeKey(tenant, treeId);
      const t = trees.get(key);
      if (!t) return Promise.resolve({ given: false, taken: false, chance: 0, spent: -1 });
      if (!holders.has(key) && claim) holders.set(key, { requestId, chance: Math.round(claim.chance * 1_000_000) / 1_000_000 });
      const holder = holders.get(key);
      const given = holder?.requestId === requestId;
      return Promise.resolve({ given, taken: holder !== undefined && !given, chance: given ? holder.chance : 0, spent: t.spent });
    },
  };
}

/** Jobs' standings in memory, for the in-memory driver and unit tests: hashes by `<tenant>/<tree>`, as the limits hash holds them. */
export function memoryStandingStore(hashes: Map<string, Map<string, string>> = new Map<string, Map<string, string>>()): StandingStore & { hashes: Map<string, Map<string, string>> } {
  const hash = (tenant: string, tree: string) => {
    const k = `${encodeURIComponent(tenant)}/${tree}`;
    let h = hashes.get(k);
    if (!h) hashes.set(k, (h = new Map<string, string>()));
    return h;
  };
  return {
    hashes,
    read: (jobs) => Promise.resolve(jobs.map(({ tenant, tree, job }) => standingFields(job).map((f) => hash(tenant, tree).get(f) ?? null))),
    record: (endings) => {
      for (const { tenant, tree, job, ending } of endings) {
        const h = hash(tenant, tree);
        if (!h.has(`job:${job}:end`)) h.set(`job:${job}:end`, JSON.stringify(ending));
      }
      return Promise.resolve();
    },
  };
}

/** LIM-11: unknown outcomes in memory, for the test driver and unit tests. */
export function memoryUnknownOutcomeStore(): UnknownOutcomeStore & { kept: Map<string, { request: UnknownOutcomeRequest; answered: UnknownOutcomeAnswer | null }> } {
  const kept = new Map<string, { request: UnknownOutcomeRequest; answered: UnknownOutcomeAnswer | null }>();
  const index = new Set<string>();
  const open = () => [...kept.values()].filter((x) => x.answered === null && index.has(x.request.approval)).map((x) => x.request).sort((a, b) => a.deadline - b.deadline);
  return {
    kept,
    put: (r) => {
      if (!kept.has(r.approval)) {
        kept.set(r.approval, { request: r, answered: null });
        index.add(r.approval);
      }
      return Promise.resolve();
    },
    waiting: () => Promise.resolve(open()),
    due: (now, limit) =>
      Promise.resolve(
        [...kept.values()]
          .filter((x) => index.has(x.request.approval) && x.request.deadline <= now)
          .sort((a, b) => a.request.deadline - b.request.deadline)
          .slice(0, limit)
          .map((x) => ({ ...x })),
      ),
    get: (approval) => Promise.resolve(kept.get(approval) ?? null),
    answer: (approval, a, leave) => {
      const x = kept.get(approval);
      if (!x) return Promise.resolve(null);
      if (leave) index.delete(approval);
      if (!x.answered) x.answered = a;
      return Promise.resolve(x.answered);
    },
    done: (approval) => Promise.resolve(void index.delete(approval)),
  };
}
