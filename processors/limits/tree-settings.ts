/**
 * What a tree is held to, resolved once when the tree starts (from its root agent and its
 * tenant) and kept with the tree's state, so a change of configuration never moves a running
 * tree's limits. Counts use -1 for "no limit", as Redis keeps them.
 */
import type { AgentDefinition, OnBudget, Reserve } from "../../config/agent.ts";
import { resolveJobLimits, resolveOnBudget, resolveSpend, resolveTreeLimits } from "../../config/resolve.ts";
import type { TenantSettings } from "../../config/tenant.ts";
import { usdToMicros } from "./money.ts";

export const NO_LIMIT = -1;

export interface TreeSettings {
  readonly tenant: string;
  /** The root agent, or "" when nobody said (then only the tenant's limits and no budget apply). */
  readonly rootAgent: string;
  readonly startedByPerson: boolean;
  /** LIM-10: the person or app that started the tree (its root's `principal`); left out when nobody said. */
  readonly principal?: string;
  /** LIM-10: the principal's team; left out when it has none. */
  readonly team?: string;
  /** The tree's budget (the root's `max_cost_usd`) in micro-dollars, or -1. */
  readonly budget: number;
  readonly reserve: Reserve;
  readonly onBudget: OnBudget;
  readonly modelCalls: number;
  readonly tokens: number;
  readonly children: number;
  readonly fanOut: number;
  readonly depth: number;
  /** Milliseconds each job may wait for people, or -1. */
  readonly wait: number;
  /** Spend shares in parts per million (80% is 800,000). */
  readonly warnShare: number;
  readonly softWall: number;
}

function orNone(n: number | null): number {
  return n === null ? NO_LIMIT : n;
}

const budgetOf = (usd: number | null): number => (usd === null ? NO_LIMIT : usdToMicros(usd));

/** LIM-4, LIM-7, LIM-8: the tree's settings from its root agent and tenant. */
export function resolveTreeSettings(input: {
  tenantId: string;
  rootAgentName: string;
  root: AgentDefinition | undefined;
  tenant: TenantSettings | undefined;
  startedByPerson: boolean;
  principal?: string | null;
  team?: string | null;
  /** LIM-1: run --budget on the root's start, US dollars: the tree's budget instead of the root agent's max_cost_usd. */
  budgetUsd?: number | null;
}): TreeSettings {
  const tree = resolveTreeLimits(input.root, input.tenant);
  const job = resolveJobLimits(input.root);
  const spend = resolveSpend(input.root, input.tenant);
  return {
    tenant: input.tenantId,
    rootAgent: input.rootAgentName,
    startedByPerson: input.startedByPerson,
    budget: budgetOf(input.budgetUsd ?? job.max_cost_usd),
    reserve: job.reserve,
    onBudget: resolveOnBudget(input.root, { startedByPerson: input.startedByPerson }),
    modelCalls: orNone(tree.model_calls),
    tokens: orNone(tree.tokens),
    children: orNone(tree.children),
    fanOut: orNone(tree.fan_out),
    depth: orNone(tree.depth),
    wait: orNone(tree.wait),
    warnShare: Math.round(spend.warn_share * 1_000_000),
    softWall: Math.round(spend.soft_wall * 1_000_000),
    // A team without a principal spends against no quota: only the principal's trees are counted.
    ...(input.principal ? { principal: input.principal, ...(input.team ? { team: input.team } : {}) } : {}),
  };
}
