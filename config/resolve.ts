/**
 * What applies to a job: the agent's settings over the tenant's over the platform's defaults.
 * Pure functions of the parsed settings; the runtime resolves once when a job starts and keeps
 * the answer for the whole job (OFF-13: "a job keeps the threshold it started with").
 *
 * They take structural shapes, so an AgentDefinition, a TenantSettings or a hand-built object
 * all do; in hand-built objects 0 still means "inherit" and -1 "no limit", as in the files.
 */
import type { AgentDefinition, OnBudget, OnUnknown, Reserve } from "./agent.ts";
import type { EscalationStep, TenantApprovals } from "./approvals.ts";
import {
  DEFAULT_DELEGATION_MAX_DEPTH,
  DEFAULT_LOOPS,
  DEFAULT_MAX_STEPS,
  DEFAULT_OFFLOAD_TOKENS,
  DEFAULT_ON_LOOP,
  DEFAULT_SPEND,
  DEFAULT_TREE_LIMITS,
  HARNESS_ON_LOOP,
  SESSION_TIMEOUT_MS,
} from "./defaults.ts";
import { LOOP_KEYS, TREE_LIMIT_KEYS, type EffectiveLoops, type EffectiveSpend, type EffectiveTreeLimits, type LimitSetting, type LoopSettings, type OnLoop, type SpendSettings, type TreeLimitKey, type TreeLimitSettings } from "./limits.ts";
import type { TenantOffload } from "./tenant.ts";

interface HasTreeLimits {
  readonly limits?: { readonly tree?: TreeLimitSettings };
}

/**
 * LIM-4: each tree limit is the root agent's, over the tenant's, over the default. Left out or
 * 0 takes the next level's; -1 (`none`) removes the limit, whatever the levels below say.
 */
export function resolveTreeLimits(root: HasTreeLimits | undefined, tenant: HasTreeLimits | undefined): EffectiveTreeLimits {
  const out: Partial<Record<TreeLimitKey, number | null>> = {};
  for (const key of TREE_LIMIT_KEYS) {
    out[key] = firstSet([root?.limits?.tree?.[key], tenant?.limits?.tree?.[key]], DEFAULT_TREE_LIMITS[key]);
  }
  return out as EffectiveTreeLimits;
}

function firstSet(levels: readonly (LimitSetting | undefined)[], fallback: number | null): number | null {
  for (const setting of levels) {
    if (setting === "none" || setting === -1) return null;
    if (typeof setting === "number" && setting > 0) return setting;
  }
  return fallback;
}

interface HasLoops {
  readonly loops?: LoopSettings;
  readonly on_loop?: OnLoop;
}

export interface EffectiveLoopSettings extends EffectiveLoops {
  readonly on_loop: OnLoop;
  /** Milliseconds a loop's approval waits for a decision; null leaves it to the approval's own default. */
  readonly loop_deadline: number | null;
  /** LOOP-5: the tenant's escalation ladder of an approval, in order; the caller drops steps at or past the deadline. */
  readonly escalation: readonly EscalationStep[];
}

/**
 * LOOP-2..LOOP-6: thresholds and on_loop are the agent's, over the tenant's, over the defaults
 * (repeats 3, cycles 2, no_progress 5, on_loop wait). LOOP-8: a harness session's loop is
 * reported unless the agent or the tenant sets on_loop.
 */
export function resolveLoopSettings(
  agent: HasLoops | undefined,
  tenant: (HasLoops & { readonly loop_deadline?: number; readonly approvals?: TenantApprovals }) | undefined,
  options: { readonly harness?: boolean } = {},
): EffectiveLoopSettings {
  const loops: Partial<Record<(typeof LOOP_KEYS)[number], number>> = {};
  for (const key of LOOP_KEYS) loops[key] = agent?.loops?.[key] ?? tenant?.loops?.[key] ?? DEFAULT_LOOPS[key];
  return {
    ...(loops as EffectiveLoops),
    on_loop: agent?.on_loop ?? tenant?.on_loop ?? (options.harness === true ? HARNESS_ON_LOOP : DEFAULT_ON_LOOP),
    loop_deadline: tenant?.approvals?.deadline ?? tenant?.loop_deadline ?? null,
    escalation: tenant?.approvals?.escalation ?? [],
  };
}

/** A threshold in tokens, or `"off"`: nothing is offloaded. */
export type OffloadThreshold = number | "off";

/**
 * OFF-13: the agent's offload within the tenant's ceiling, else the tenant's default, else
 * 10,000 tokens. Off, the agent's or the tenant default's, becomes the ceiling when there is one.
 */
export function resolveOffloadThreshold(
  agent: { readonly offload?: number | "off" } | undefined,
  tenant: { readonly offload?: TenantOffload } | undefined,
): OffloadThreshold {
  const ceiling = positive(tenant?.offload?.ceiling);
  const wanted = offOrTokens(agent?.offload) ?? offOrTokens(tenant?.offload?.default) ?? DEFAULT_OFFLOAD_TOKENS;
  if (wanted === "off") return ceiling ?? "off";
  return ceiling === undefined ? wanted : Math.min(wanted, ceiling);
}

function offOrTokens(setting: number | "off" | undefined): OffloadThreshold | undefined {
  if (setting === "off" || setting === -1) return "off";
  return positive(setting);
}

function positive(n: number | undefined): number | undefined {
  return n !== undefined && n > 0 ? n : undefined;
}

/** LIM-8: each spend threshold is the agent's, over the tenant's, over the default (80%, 85%, 80%, 20 runs). */
export function resolveSpend(agent: { readonly spend?: SpendSettings } | undefined, tenant: { readonly spend?: SpendSettings } | undefined): EffectiveSpend {
  const a = agent?.spend;
  const t = tenant?.spend;
  return {
    warn_share: a?.warn_share ?? t?.warn_share ?? DEFAULT_SPEND.warn_share,
    soft_wall: a?.soft_wall ?? t?.soft_wall ?? DEFAULT_SPEND.soft_wall,
    forecast: {
      chance: a?.forecast?.chance ?? t?.forecast?.chance ?? DEFAULT_SPEND.forecast.chance,
      min_runs: a?.forecast?.min_runs ?? t?.forecast?.min_runs ?? DEFAULT_SPEND.forecast.min_runs,
    },
  };
}

/** Limits of one job once resolved; null is no limit, durations are milliseconds. */
export interface EffectiveJobLimits {
  readonly max_steps: number;
  readonly max_tokens: number | null;
  readonly timeout: number | null;
  readonly max_cost_usd: number | null;
  readonly max_output_tokens: number | null;
  readonly reserve: Reserve;
}

/** LIM-1, LIM-7: the agent's job limits with the defaults (50 steps, reserve last_call, sessions time out after 2h). */
export function resolveJobLimits(agent: Pick<AgentDefinition, "limits"> | undefined, options: { readonly session?: boolean } = {}): EffectiveJobLimits {
  const limits = agent?.limits;
  const timeout = limits?.timeout;
  return {
    max_steps: limits?.max_steps ?? DEFAULT_MAX_STEPS,
    max_tokens: limits?.max_tokens ?? null,
    timeout: timeout === "none" ? null : (timeout ?? (options.session === true ? SESSION_TIMEOUT_MS : null)),
    max_cost_usd: limits?.max_cost_usd ?? null,
    max_output_tokens: limits?.max_output_tokens ?? null,
    reserve: limits?.reserve ?? "last_call",
  };
}

export interface EffectiveDelegation {
  readonly allow: readonly string[];
  readonly max_depth: number;
  /** Delegations and flow tools per run; null is no limit. */
  readonly max_children: number | null;
}

/** LIM-6: delegation.max_depth defaults to 1, max_children to none. */
export function resolveDelegation(agent: Pick<AgentDefinition, "delegation"> | undefined): EffectiveDelegation {
  const d = agent?.delegation;
  const maxChildren = d?.max_children;
  return {
    allow: d?.allow ?? [],
    max_depth: d?.max_depth ?? DEFAULT_DELEGATION_MAX_DEPTH,
    max_children: maxChildren === undefined || maxChildren === "none" || maxChildren < 0 ? null : maxChildren,
  };
}

/** Who started the job's tree decides what on_budget and on_unknown default to. */
export interface StartedBy {
  readonly startedByPerson: boolean;
}

/** LIM-7: the agent's on_budget, else wait when a person started the tree, else fail. */
export function resolveOnBudget(agent: { readonly on_budget?: OnBudget } | undefined, tree: StartedBy): OnBudget {
  return agent?.on_budget ?? (tree.startedByPerson ? "wait" : "fail");
}

/** LIM-11: the agent's on_unknown, else wait when a person started the tree, else fail. */
export function resolveOnUnknown(agent: { readonly on_unknown?: OnUnknown } | undefined, tree: StartedBy): OnUnknown {
  return agent?.on_unknown ?? (tree.startedByPerson ? "wait" : "fail");
}
