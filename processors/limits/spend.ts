/**
 * LIM-8: the spend thresholds of a tree's budget. Settled spend only grows, and each
 * settlement is one atomic step, so exactly one settlement crosses each line: the one with
 * `before < line <= after`. Its report is derived from that input and repeats on a replay.
 */
import type { RedisClient } from "../../store/redis/client.ts";
import type { Keys } from "../../store/redis/keys.ts";
import type { Judgement } from "./decisions.ts";
import { NO_LIMIT, type TreeSettings } from "./tree-settings.ts";

/** A line crossed as a share of the budget, in parts per million. */
function crossed(budget: number, partsPerMillion: number, before: number, after: number): boolean {
  const line = (BigInt(budget) * BigInt(partsPerMillion) + 999_999n) / 1_000_000n;
  return BigInt(before) < line && line <= BigInt(after);
}

export function spendCrossings(s: TreeSettings, before: number, after: number): Judgement[] {
  if (s.budget === NO_LIMIT || s.budget <= 0) return [];
  const out: Judgement[] = [];
  if (crossed(s.budget, s.warnShare, before, after)) {
    out.push({ verdict: "report", reason_code: null, limit: "spend.warn_share", message: `The job tree has spent ${s.warnShare / 10_000}% of its budget: wrap up and answer soon.` });
  }
  if (crossed(s.budget, s.softWall, before, after)) {
    out.push({ verdict: "report", reason_code: null, limit: "spend.soft_wall", message: `The job tree has spent ${s.softWall / 10_000}% of its budget (spend.soft_wall): only the answer is left; report what you have.` });
  }
  return out;
}

/**
 * FIT-16: the share of its budget a tenant's tree has spent, from its limits state; null while
 * the state keeps no budget for it (no state yet, or no max_cost_usd).
 */
export async function spendShare(redis: RedisClient, keys: Keys, tenant: string, treeId: string): Promise<number | null> {
  const [budget, spent] = await redis.hmget(keys.limits(tenant, treeId), "s:budget", "spent");
  if (budget === null) return null;
  const b = Number(budget);
  if (b === NO_LIMIT || b <= 0) return null;
  return Number(spent ?? 0) / b;
}
