/**
 * A tenant's settings as far as the guard rails read them: the defaults it sets for tree limits,
 * loops and spend (the agent's win), its offload default and ceiling (OFF-13), the deadline of
 * a loop's approval and its monthly budget.
 */
import { readApprovals, type TenantApprovals } from "./approvals.ts";
import type { Parsed } from "./errors.ts";
import { readCount, readDuration, readMoney, withoutUndefined } from "./fields.ts";
import { readLoops, readOnLoop, readSpend, readTreeLimits, type LoopSettings, type OnLoop, type SpendSettings, type TreeLimitSettings } from "./limits.ts";
import { readName } from "./names.ts";
import { readQuotas, type TenantQuotas } from "./quotas.ts";
import { YamlFile, type Value } from "./yaml-file.ts";

/**
 * `offload` of a tenant, as the admin API carries it (`{"default": 6000, "ceiling": 20000}`).
 */
export interface TenantOffload {
  /**
   * The threshold of agents that set none: tokens, or `"off"` (written `off` or `-1`).
   * @default the platform's, 10,000 tokens (written `platform`, or left out)
   */
  readonly default?: number | "off";
  /** The most an agent may set; an agent's off becomes the ceiling. @default none */
  readonly ceiling?: number;
}

export interface TenantSettings {
  readonly id: string;
  readonly limits: { readonly tree: TreeLimitSettings };
  readonly loops: LoopSettings;
  readonly on_loop?: OnLoop;
  readonly spend: SpendSettings;
  readonly offload: TenantOffload;
  /** Milliseconds a loop's approval may wait for a decision. @default the platform's approval deadline */
  readonly loop_deadline?: number;
  /** How long an approval waits (the same deadline as `loop_deadline`) and its escalation ladder (LOOP-5). @default none */
  readonly approvals?: TenantApprovals;
  /** Once spent in a month, every call of the tenant fails (LIM-10). @default none */
  readonly monthly_budget_usd?: number;
  /** Monthly quotas per person and team: past one, the job waits for a budget request (LIM-10). @default none */
  readonly quotas?: TenantQuotas;
}

const TENANT_KEYS = ["id", "limits", "loops", "on_loop", "spend", "offload", "loop_deadline", "approvals", "monthly_budget_usd", "quotas"] as const;
const TREE_HINTS = { model_calls: "limits.tree", tokens: "limits.tree", children: "limits.tree", fan_out: "limits.tree", depth: "limits.tree", wait: "limits.tree" };

/** Parses `tenants/<id>.yaml` (or the admin API's JSON, which is YAML too). The id defaults to the file's name. */
export function parseTenant(yamlText: string, path: string): Parsed<TenantSettings> {
  const file = new YamlFile(path, yamlText);
  if (!file.syntaxOk) return file.failed();
  const root = file.root();
  if (root.absent) {
    root.fail("the file is empty; tenant settings are a mapping with limits, loops, offload and the like");
    return file.failed();
  }
  const fields = root.mapping(TENANT_KEYS, { ...TREE_HINTS, repeats: "loops", cycles: "loops", no_progress: "loops", tree: "limits" });
  if (fields === undefined) return file.failed();

  const limits = fields.get("limits").mapping(["tree"], TREE_HINTS);
  const loopDeadline = readDuration(fields.get("loop_deadline"), { min: 1, what: "the deadline of a loop's approval" });
  const tenant: TenantSettings = withoutUndefined({
    id: readName(fields.get("id"), path),
    limits: { tree: (limits && readTreeLimits(limits.get("tree"), "the default")) ?? {} },
    loops: readLoops(fields.get("loops")) ?? {},
    on_loop: readOnLoop(fields.get("on_loop")),
    spend: readSpend(fields.get("spend")) ?? {},
    offload: readTenantOffload(fields.get("offload")),
    loop_deadline: loopDeadline,
    approvals: readApprovals(fields.get("approvals"), { written: !fields.get("loop_deadline").absent, ms: loopDeadline }),
    monthly_budget_usd: readMonthlyBudget(fields.get("monthly_budget_usd")),
    quotas: readQuotas(fields.get("quotas")),
  });
  return file.finish(tenant);
}

function readMonthlyBudget(v: Value): number | undefined {
  if (v.scalar === "none") return undefined;
  return readMoney(v, "the tenant's monthly budget in US dollars, or none,");
}

function readTenantOffload(v: Value): TenantOffload {
  const fields = v.mapping(["default", "ceiling"]);
  if (fields === undefined) return {};
  const defaultValue = fields.get("default");
  const ceilingValue = fields.get("ceiling");
  let threshold: number | "off" | undefined;
  if (defaultValue.scalar === "off" || defaultValue.scalar === -1) threshold = "off";
  else if (defaultValue.scalar === "platform") threshold = undefined;
  else threshold = readCount(defaultValue, { min: 1, what: "the threshold of agents that set none, in tokens, or off, or platform" });

  let ceiling: number | undefined;
  if (ceilingValue.scalar === "none" || ceilingValue.scalar === -1) ceiling = undefined;
  else ceiling = readCount(ceilingValue, { min: 1, what: "the most an agent may set, in tokens, or none" });

  if (typeof threshold === "number" && ceiling !== undefined && threshold > ceiling) {
    defaultValue.fail(`${threshold} is above the ceiling (${ceiling}); the default must be within the ceiling`);
  }
  return withoutUndefined({ default: threshold, ceiling });
}
