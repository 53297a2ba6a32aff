/**
 * LIM-8 forecast in the processors: at an ask of a tree with a budget and `on_budget: wait`,
 * once its root agent has `spend.forecast.min_runs` finished trees, the tree gets one `wait`
 * (budget_forecast) when the chance it will need more than its budget reaches
 * `spend.forecast.chance`; and when a root job ends, its tree is recorded for its agent.
 * The thresholds are read from the configuration at the ask, not kept with the tree.
 */
import { resolveSpend } from "../../config/resolve.ts";
import { agentOf, tenantOf, type LimitsEnv } from "./env.ts";
import { bucketOf, forecastFires, overChance } from "./forecast.ts";
import { NO_LIMIT, type TreeSettings } from "./tree-settings.ts";

export interface ForecastGiven {
  readonly chance: number;
  readonly threshold: number;
  readonly spent: number;
}

/** Whether an ask of a tree with these settings may get a forecast at all (without it, `forecastAt` reads nothing). */
export function forecastApplies(s: TreeSettings): boolean {
  return s.budget !== NO_LIMIT && s.onBudget === "wait" && s.rootAgent !== "";
}

/** The forecast this ask gets, or null. The first request that gets it keeps it; a replay of it gets it again. */
export async function forecastAt(env: LimitsEnv, treeId: string, requestId: string, s: TreeSettings): Promise<ForecastGiven | null> {
  if (!forecastApplies(s)) return null;
  const { forecast } = resolveSpend(agentOf(env, s.rootAgent), tenantOf(env, s.tenant));
  const held = await env.store.forecastOnce(s.tenant, treeId, requestId, null);
  if (held.given) return { chance: held.chance, threshold: forecast.chance, spent: held.spent };
  if (held.taken || held.spent < 0) return null;
  const stats = await env.store.forecastStats(s.tenant, s.rootAgent);
  const input = { stats, spent: held.spent, budget: s.budget, chance: forecast.chance, minRuns: forecast.min_runs };
  if (!forecastFires(input)) return null;
  const chance = overChance(stats, held.spent, s.budget);
  const claimed = await env.store.forecastOnce(s.tenant, treeId, requestId, { chance });
  return claimed.given ? { chance: claimed.chance, threshold: forecast.chance, spent: held.spent } : null;
}

/** A root job ended: its tree joins its agent's finished trees (only trees with a budget count). */
export async function recordFinishedTree(env: LimitsEnv, treeId: string, s: TreeSettings): Promise<void> {
  if (!s.rootAgent || s.budget === NO_LIMIT || s.budget <= 0) return;
  const outcome = await env.store.treeOutcome(s.tenant, treeId);
  if (!outcome || outcome.budget <= 0) return;
  await env.store.recordFinished(s.tenant, s.rootAgent, treeId, bucketOf(outcome.spent, outcome.budget, outcome.hit));
}
