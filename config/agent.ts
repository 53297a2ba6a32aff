/**
 * An agent's definition, as far as the guard rails read it: its tools, limits, loop and budget
 * behaviour, spend thresholds and offload threshold (seed 003). Values are as written; see
 * resolve.ts for what applies once the tenant's settings and the defaults are filled in.
 */
import type { Parsed } from "./errors.ts";
import {
  readChoice,
  readCount,
  readDuration,
  readIdList,
  readMoney,
  readWhole,
  withoutUndefined,
} from "./fields.ts";
import {
  readLoops,
  readOnLoop,
  readSpend,
  readTreeLimits,
  type LimitSetting,
  type LoopSettings,
  type OnLoop,
  type SpendSettings,
  type TreeLimitSettings,
} from "./limits.ts";
import { readName } from "./names.ts";
import { YamlFile, type KeyHints, type Value } from "./yaml-file.ts";

export const RESERVE = ["last_call", "strict"] as const;
/** Whether the last call that does not fit the budget goes through (LIM-7). */
export type Reserve = (typeof RESERVE)[number];

export const ON_BUDGET = ["wait", "fail"] as const;
export type OnBudget = (typeof ON_BUDGET)[number];

export const ON_UNKNOWN = ["wait", "fail"] as const;
export type OnUnknown = (typeof ON_UNKNOWN)[number];

/** `limits` of one job (LIM-1, LIM-7) and of the tree it is the root of (LIM-2..LIM-4). */
export interface JobLimits {
  /** Model calls per job. @default 50 */
  readonly max_steps?: number;
  /** Input plus output tokens per job. @default none */
  readonly max_tokens?: number;
  /** Wall-clock milliseconds, or `"none"`. @default none (sessions: 2h) */
  readonly timeout?: number | "none";
  /** The budget of the job and every job it delegates to, in US dollars. @default none */
  readonly max_cost_usd?: number;
  /** The most each model request may answer, and so what its budget reserves per call. @default none */
  readonly max_output_tokens?: number;
  /** @default "last_call" */
  readonly reserve?: Reserve;
  readonly tree: TreeLimitSettings;
}

/** `delegation` (LIM-6). */
export interface DelegationSettings {
  /** Agents this one may delegate to. @default [] */
  readonly allow: readonly string[];
  /** How deep a chain of delegations from this agent may go. @default 1 */
  readonly max_depth?: number;
  /** Delegations and flow tools per run, or `"none"`. @default none */
  readonly max_children?: LimitSetting;
}

export interface AgentDefinition {
  readonly name: string;
  /** Ids of the tools the agent may call. @default [] */
  readonly tools: readonly string[];
  readonly limits: JobLimits;
  readonly delegation: DelegationSettings;
  readonly loops: LoopSettings;
  /** @default the tenant's, else "wait" (harness sessions: "report") */
  readonly on_loop?: OnLoop;
  /** @default "wait" when a person started the tree, else "fail" */
  readonly on_budget?: OnBudget;
  /** @default "wait" when a person started the tree, else "fail" */
  readonly on_unknown?: OnUnknown;
  readonly spend: SpendSettings;
  /** Offload threshold in tokens, or `"off"` (OFF-13). @default the tenant's default */
  readonly offload?: number | "off";
  /**
   * OFF-9: the labels of stored results the agent may read back; a result with any other label
   * is withheld. @default every label (left out, nothing is withheld)
   */
  readonly clearance?: readonly string[];
}

const AGENT_KEYS = ["name", "tools", "limits", "delegation", "loops", "on_loop", "on_budget", "on_unknown", "spend", "offload", "clearance"] as const;
const LIMIT_KEYS = ["max_steps", "max_tokens", "timeout", "max_cost_usd", "max_output_tokens", "reserve", "tree"] as const;
const DELEGATION_KEYS = ["allow", "max_depth", "max_children"] as const;

const TREE_HINTS: KeyHints = {
  model_calls: "limits.tree",
  tokens: "limits.tree",
  children: "limits.tree",
  fan_out: "limits.tree",
  depth: "limits.tree",
  wait: "limits.tree",
};
const TOP_HINTS: KeyHints = {
  ...TREE_HINTS,
  ...Object.fromEntries(LIMIT_KEYS.filter((k) => k !== "tree").map((k) => [k, "limits"])),
  repeats: "loops",
  cycles: "loops",
  no_progress: "loops",
  allow: "delegation",
  max_depth: "delegation",
  max_children: "delegation",
  warn_share: "spend",
  soft_wall: "spend",
  forecast: "spend",
};

/** Parses `agents/<name>.yaml`. The name defaults to the file's; every error of the file is collected. */
export function parseAgent(yamlText: string, path: string): Parsed<AgentDefinition> {
  const file = new YamlFile(path, yamlText);
  if (!file.syntaxOk) return file.failed();
  const root = file.root();
  if (root.absent) {
    root.fail("the file is empty; an agent definition is a mapping with limits, loops, on_loop and the like");
    return file.failed();
  }
  const fields = root.mapping(AGENT_KEYS, TOP_HINTS);
  if (fields === undefined) return file.failed();

  const agent: AgentDefinition = withoutUndefined({
    name: readName(fields.get("name"), path),
    tools: readIdList(fields.get("tools"), "tool ids") ?? [],
    limits: readJobLimits(fields.get("limits")),
    delegation: readDelegation(fields.get("delegation")),
    loops: readLoops(fields.get("loops")) ?? {},
    on_loop: readOnLoop(fields.get("on_loop")),
    on_budget: readChoice(fields.get("on_budget"), ON_BUDGET),
    on_unknown: readChoice(fields.get("on_unknown"), ON_UNKNOWN),
    spend: readSpend(fields.get("spend")) ?? {},
    offload: readAgentOffload(fields.get("offload")),
    clearance: readClearance(fields.get("clearance")),
  });
  return file.finish(agent);
}

function readJobLimits(v: Value): JobLimits {
  const fields = v.mapping(LIMIT_KEYS, TREE_HINTS);
  if (fields === undefined) return { tree: {} };
  const maxTokens = readCount(fields.get("max_tokens"), { min: 1, what: "the tokens of a job" });
  const maxOutputValue = fields.get("max_output_tokens");
  const maxOutput = readCount(maxOutputValue, { min: 1, what: "the tokens a model request may answer" });
  if (maxTokens !== undefined && maxOutput !== undefined && maxOutput > maxTokens) {
    maxOutputValue.fail(`${maxOutput} is above max_tokens (${maxTokens}), so no request could use it`);
  }
  const timeout = fields.get("timeout");
  return withoutUndefined({
    max_steps: readWhole(fields.get("max_steps"), { min: 1, what: "the model calls of a job" }),
    max_tokens: maxTokens,
    timeout: timeout.scalar === "none" ? "none" : readDuration(timeout, { min: 1, what: "the wall-clock time of a job" }),
    max_cost_usd: readMoney(fields.get("max_cost_usd"), "the budget of the job tree in US dollars"),
    max_output_tokens: maxOutput,
    reserve: readChoice(fields.get("reserve"), RESERVE),
    tree: readTreeLimits(fields.get("tree"), "the tenant's") ?? {},
  });
}

function readDelegation(v: Value): DelegationSettings {
  const fields = v.mapping(DELEGATION_KEYS);
  if (fields === undefined) return { allow: [] };
  const maxChildren = fields.get("max_children");
  return withoutUndefined({
    allow: readIdList(fields.get("allow"), "agent names") ?? [],
    max_depth: readWhole(fields.get("max_depth"), { min: 0, what: "the depth of delegation" }),
    max_children:
      maxChildren.scalar === "none" || maxChildren.scalar === -1
        ? "none"
        : readWhole(maxChildren, { min: 0, what: "the delegations per run, or none" }),
  });
}

/** `clearance` (OFF-9): labels the agent may read back; left out (every label) stays undefined, unlike an empty list. */
function readClearance(v: Value): string[] | undefined {
  return v.absent ? undefined : readIdList(v, "labels");
}

/** `offload`: tokens above 0 (`12000`, `12k`) or `off`. */
function readAgentOffload(v: Value): number | "off" | undefined {
  if (v.absent) return undefined;
  if (v.scalar === "off") return "off";
  return readCount(v, { min: 1, what: "the offload threshold in tokens, or off" });
}
