/**
 * Budget fill-in (FIT-15): for a tool whose manifest says `results: {fit: true}`, a budget the
 * model left out is filled in, only for functions whose input schema has an integer `budget`
 * beside a `view` enum of the four views, and only for a model's calls. It reads the calls
 * runtimes publish and writes the calls everything else sees, so policy, hooks, approvals and
 * the loop detector all see the budget. It also resolves file arguments (FILE-1), withholding a
 * file above the agent's clearance (OFF-9), which loop-calls then refuses the call for.
 */
import type { AgentDefinition } from "../../config/agent.ts";
import type { PluginManifest } from "../../config/plugin.ts";
import { resolveSpend } from "../../config/resolve.ts";
import type { TenantSettings } from "../../config/tenant.ts";
import type { ToolCall } from "../../schemas/types.ts";
import type { ConfigView } from "../runner/config-table.ts";
import { defineProcessor, type Outcome } from "../runner/processor.ts";
import { parseArguments } from "../call-arguments.ts";
import { adoptsFitConvention, manifestOf } from "../fit-results/convention.ts";
import { resolveFileArguments, type FileArgumentsEnv } from "../files/arguments.ts";
import { defaultBudget } from "./budget.ts";

export interface FillInEnv {
  config: ConfigView;
  /**
   * The tenant's tree's spend share from the budget state, or null while the budget processor
   * keeps none for it; then the share the runtime put on the event is used (FIT-16).
   */
  spendShare(tenant: string, treeId: string): Promise<number | null>;
  /**
   * FILE-1: resolves a call's file arguments to paths in `_meta["oz0/files"]` when the call's
   * tree may read them and their labels are within the agent's clearance (OFF-9,
   * `processors/files/arguments.ts`). Left out, file arguments pass as they
   * are: for runs of the budget rules alone.
   */
  files?: FileArgumentsEnv;
}

/** Whether this call's function takes a filled-in budget, from the tool's manifest. */
export function fillsIn(call: ToolCall, manifest: PluginManifest | undefined): boolean {
  return call.origin === "model" && adoptsFitConvention(call, manifest);
}

export const fillInProcessor = defineProcessor<ToolCall, FillInEnv>({
  name: "budget-fill-in",
  input: "oz0.tool-calls.requested",
  outputs: ["oz0.tool-calls"],
  validate(call) {
    const reasons: string[] = [];
    for (const field of ["id", "tenant", "tree_id", "job_id", "run_id", "call_id"] as const) {
      if (!call[field]) reasons.push(`${field} is empty`);
    }
    const args = parseArguments(call.arguments);
    if (typeof args === "string") reasons.push(args);
    if (call.context_used !== null && call.context_used < 0) reasons.push(`context_used is ${call.context_used}: it counts tokens, so it cannot be negative`);
    if (call.spend_share !== null && !(call.spend_share >= 0)) reasons.push(`spend_share is ${call.spend_share}: a share of a budget is 0 or more`);
    return reasons;
  },
  process(records, env) {
    // Each call is filled in on its own, all at once: their reads go to the stores together (a
    // tree's spend share read once a batch), not one call's after another's.
    const shares = new Map<string, Promise<number | null>>();
    const shareOf = (call: ToolCall): Promise<number | null> => {
      const key = `${call.tenant}\u0000${call.tree_id}`;
      let share = shares.get(key);
      if (!share) shares.set(key, (share = env.spendShare(call.tenant, call.tree_id)));
      return share;
    };
    return Promise.all(records.map(({ value: call }) => fillIn(call, env, shareOf)));
  },
});

async function fillIn(call: ToolCall, env: FillInEnv, shareOf: (call: ToolCall) => Promise<number | null>): Promise<Outcome> {
  let filled = call;
  // OFF-6: a built-in (oz.read_result) takes a filled-in budget as a fitted tool does.
  const manifest = manifestOf(env.config, call.plugin);
  if (fillsIn(call, manifest)) {
    const args = parseArguments(call.arguments) as Record<string, unknown>;
    if (args.budget === undefined || args.budget === null) {
      const agent = env.config.get("agent", call.agent) as AgentDefinition | undefined;
      const tenant = env.config.get("tenant", call.tenant) as TenantSettings | undefined;
      const share = (await shareOf(call)) ?? call.spend_share;
      const budget = defaultBudget({ contextUsed: call.context_used, spendShare: share, warnShare: resolveSpend(agent, tenant).warn_share });
      filled = { ...call, arguments: JSON.stringify({ ...args, budget }) };
    }
  }
  if (env.files) {
    // OFF-9: a file above the agent's clearance is withheld, and loop-calls refuses the call.
    const agent = env.config.get("agent", call.agent) as AgentDefinition | undefined;
    const resolved = await resolveFileArguments(call, parseArguments(filled.arguments) as Record<string, unknown>, env.files, agent);
    if (resolved !== null) filled = { ...filled, arguments: JSON.stringify(resolved) };
  }
  return { emits: [{ to: "oz0.tool-calls", key: call.run_id, value: filled }] };
}
