/** What the limits processors need from outside: the state store, the config table, the prices. */
import type { AgentDefinition } from "../../config/agent.ts";
import type { TenantSettings } from "../../config/tenant.ts";
import type { ConfigView } from "../runner/config-table.ts";
import type { PriceTable } from "./prices.ts";
import type { StandingStore, JobClock, LimitsStore, UnknownOutcomeStore } from "./store.ts";
import { resolveTreeSettings, type TreeSettings } from "./tree-settings.ts";

export interface LimitsEnv {
  readonly store: LimitsStore;
  readonly config: ConfigView;
  /** @default DEFAULT_PRICES */
  readonly prices: PriceTable;
  /**
   * How each job stands (standing.ts): an ended job's asks and children are refused with its
   * ending, and every ending these processors decide is kept. Left out, nothing is kept or
   * checked beyond the tree's own state (runs of the admission rules alone).
   */
  readonly standing?: StandingStore;
  /**
   * LIM-11: where an unknown outcome that waits for a person is kept as an approval of kind
   * unknown (unknown-outcomes.ts). Left out, the wait decision names no approval.
   */
  readonly unknown?: UnknownOutcomeStore;
}

export function agentOf(env: LimitsEnv, name: string): AgentDefinition | undefined {
  return name ? (env.config.get("agent", name) as AgentDefinition | undefined) : undefined;
}

export function tenantOf(env: LimitsEnv, id: string): TenantSettings | undefined {
  return env.config.get("tenant", id) as TenantSettings | undefined;
}

export function settingsFor(env: LimitsEnv, tenantId: string, rootAgent: string, startedByPerson: boolean, who: { principal?: string | null; team?: string | null; budgetUsd?: number | null } = {}): TreeSettings {
  return resolveTreeSettings({ tenantId, rootAgentName: rootAgent, root: agentOf(env, rootAgent), tenant: tenantOf(env, tenantId), startedByPerson, ...who });
}

/**
 * The tree's settings, set provisionally when it has none yet: from `rootGuess` (the agent of
 * the first model call, which can only be the root's while no child was admitted) and the
 * tenant. The root job's start later replaces them with the authoritative ones.
 */
export async function treeSettings(env: LimitsEnv, treeId: string, tenantId: string, jobId: string, rootGuess: string): Promise<{ settings: TreeSettings } & JobClock> {
  return settledSettings(env, treeId, tenantId, rootGuess, await env.store.read(tenantId, treeId, jobId));
}

/** `treeSettings` from a read already made: the read's settings, or the provisional ones set now. */
export async function settledSettings(env: LimitsEnv, treeId: string, tenantId: string, rootGuess: string, read: { settings: TreeSettings | null } & JobClock): Promise<{ settings: TreeSettings } & JobClock> {
  const { settings, ...job } = read;
  if (settings) return { settings, ...job };
  const provisional = settingsFor(env, tenantId, rootGuess, false);
  return { settings: await env.store.init(tenantId, treeId, provisional, false, null), ...job };
}
