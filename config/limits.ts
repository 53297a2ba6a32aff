/**
 * The settings an agent and a tenant both write: tree limits, loop detection, on_loop and
 * spend. Shapes are as written (not yet resolved): resolve.ts fills in the rest.
 */
import { readChoice, readShare, readWhole, withoutUndefined } from "./fields.ts";
import { tryParseCount, tryParseDuration } from "./units.ts";
import type { Value } from "./yaml-file.ts";

/**
 * One tree limit as written: a number, or `"none"` for no limit (written `-1` or `none`).
 * Left out, `0` or empty is stored as left out: it takes the next level's value (LIM-4).
 */
export type LimitSetting = number | "none";

/** `limits.tree` as written. Counts are whole numbers; `wait` is milliseconds. */
export interface TreeLimitSettings {
  /** Every model call of the tree. @default none */
  readonly model_calls?: LimitSetting;
  /** Input and output tokens of those calls. @default none */
  readonly tokens?: LimitSetting;
  /** Child jobs in all. @default 500 */
  readonly children?: LimitSetting;
  /** Child jobs running at once. @default 100 */
  readonly fan_out?: LimitSetting;
  /** How deep the tree may go. @default 10 */
  readonly depth?: LimitSetting;
  /** Milliseconds each job of the tree may wait for people, in all. @default none */
  readonly wait?: LimitSetting;
}

/** Tree limits once resolved (LIM-4): `null` is no limit; `wait` is milliseconds. */
export type EffectiveTreeLimits = { readonly [K in TreeLimitKey]: number | null };

export const TREE_LIMIT_KEYS = ["model_calls", "tokens", "children", "fan_out", "depth", "wait"] as const;
export type TreeLimitKey = (typeof TREE_LIMIT_KEYS)[number];

/** `loops` as written (LOOP-2..LOOP-4). */
export interface LoopSettings {
  /** The same function with the same arguments this many times. @default 3 */
  readonly repeats?: number;
  /** A sequence of two to four calls repeated this many times in a row. @default 2 */
  readonly cycles?: number;
  /** Results in a row that add nothing. @default 5 */
  readonly no_progress?: number;
}

/** Loop detection once resolved. */
export type EffectiveLoops = Required<LoopSettings>;

export const LOOP_KEYS = ["repeats", "cycles", "no_progress"] as const;

export const ON_LOOP = ["report", "wait", "stop"] as const;
/** What a repeat or a cycle does (LOOP-5, LOOP-6). */
export type OnLoop = (typeof ON_LOOP)[number];

/** `spend` as written; shares are fractions (80% is 0.8). */
export interface SpendSettings {
  /** The agent is told to wrap up. @default 0.8 */
  readonly warn_share?: number;
  /** Only the answer is left. @default 0.85 */
  readonly soft_wall?: number;
  readonly forecast?: {
    /** Ask for more budget before the wall at this chance of reaching it. @default 0.8 */
    readonly chance?: number;
    /** No forecast before the agent has this many finished trees. @default 20 */
    readonly min_runs?: number;
  };
}

/** Spend thresholds once resolved. */
export interface EffectiveSpend {
  readonly warn_share: number;
  readonly soft_wall: number;
  readonly forecast: { readonly chance: number; readonly min_runs: number };
}

export const SPEND_KEYS = ["warn_share", "soft_wall", "forecast"] as const;

/** Whose value a tree limit left out, or set to 0, takes: an agent's takes the tenant's, a tenant's the default. */
export type InheritFrom = "the tenant's" | "the default";

/** One count limit of `limits.tree`: a positive count, 0 or empty to inherit, -1 or none for no limit. */
function readTreeCount(v: Value, what: string, inherit: InheritFrom): LimitSetting | undefined {
  if (v.absent) return undefined;
  const raw = v.scalar;
  if (raw === "none" || raw === -1) return "none";
  if (raw === 0 || raw === "") return undefined;
  const rule = `0 to take ${inherit}, or -1 or none for no limit`;
  if (typeof raw === "number") {
    if (Number.isSafeInteger(raw) && raw > 0) return raw;
    return v.fail(`expected ${what} as a whole number such as 40 or 2M, ${rule}; got ${raw}`);
  }
  if (typeof raw === "string") {
    const parsed = tryParseCount(raw);
    if (!parsed.ok) return v.fail(`${parsed.reason}; or ${rule}`);
    return parsed.value === 0 ? undefined : parsed.value;
  }
  return v.fail(`expected ${what} as a whole number such as 40 or 2M, ${rule}; got ${v.describe()}`);
}

/** `limits.tree.wait`: a duration, 0 or empty to inherit, -1 or none for no limit. */
function readTreeWait(v: Value, inherit: InheritFrom): LimitSetting | undefined {
  if (v.absent) return undefined;
  const raw = v.scalar;
  if (raw === "none" || raw === -1) return "none";
  if (raw === 0 || raw === "") return undefined;
  const rule = `0 to take ${inherit}, or -1 or none for no limit`;
  if (typeof raw !== "string" && typeof raw !== "number") {
    return v.fail(`expected the time each job may wait for people, such as 8h, ${rule}; got ${v.describe()}`);
  }
  const parsed = tryParseDuration(String(raw));
  if (!parsed.ok) return v.fail(`${parsed.reason}; or ${rule}`);
  return parsed.value === 0 ? undefined : parsed.value;
}

const TREE_WHAT: Readonly<Record<Exclude<TreeLimitKey, "wait">, string>> = {
  model_calls: "the model calls of the tree",
  tokens: "the tokens of the tree",
  children: "the child jobs in all",
  fan_out: "the child jobs running at once",
  depth: "the depth of the tree",
};

export function readTreeLimits(v: Value, inherit: InheritFrom): TreeLimitSettings | undefined {
  const fields = v.mapping(TREE_LIMIT_KEYS);
  if (fields === undefined) return undefined;
  return withoutUndefined({
    model_calls: readTreeCount(fields.get("model_calls"), TREE_WHAT.model_calls, inherit),
    tokens: readTreeCount(fields.get("tokens"), TREE_WHAT.tokens, inherit),
    children: readTreeCount(fields.get("children"), TREE_WHAT.children, inherit),
    fan_out: readTreeCount(fields.get("fan_out"), TREE_WHAT.fan_out, inherit),
    depth: readTreeCount(fields.get("depth"), TREE_WHAT.depth, inherit),
    wait: readTreeWait(fields.get("wait"), inherit),
  });
}

export function readLoops(v: Value): LoopSettings | undefined {
  const fields = v.mapping(LOOP_KEYS, { on_loop: "the top level (on_loop: wait)" });
  if (fields === undefined) return undefined;
  return withoutUndefined({
    repeats: readWhole(fields.get("repeats"), { min: 2, what: "the number of same calls that make a loop" }),
    cycles: readWhole(fields.get("cycles"), { min: 2, what: "the number of repeated sequences that make a loop" }),
    no_progress: readWhole(fields.get("no_progress"), { min: 1, what: "the number of results in a row that add nothing" }),
  });
}

export function readOnLoop(v: Value): OnLoop | undefined {
  return readChoice(v, ON_LOOP);
}

export function readSpend(v: Value): SpendSettings | undefined {
  const fields = v.mapping(SPEND_KEYS, { chance: "spend.forecast", min_runs: "spend.forecast" });
  if (fields === undefined) return undefined;
  const warnShare = readShare(fields.get("warn_share"), "the share of the budget at which the agent is told to wrap up");
  const softWallValue = fields.get("soft_wall");
  const softWall = readShare(softWallValue, "the share of the budget after which only the answer is left");
  if (warnShare !== undefined && softWall !== undefined && softWall < warnShare) {
    softWallValue.fail(`must not be below warn_share (${percent(warnShare)}); got ${percent(softWall)}`);
  }
  const forecastFields = fields.get("forecast").mapping(["chance", "min_runs"]);
  const forecast =
    forecastFields === undefined
      ? undefined
      : withoutUndefined({
          chance: readShare(forecastFields.get("chance"), "the chance of reaching the wall that asks for more budget"),
          min_runs: readWhole(forecastFields.get("min_runs"), { min: 0, what: "the finished trees before a forecast" }),
        });
  return withoutUndefined({
    warn_share: warnShare,
    soft_wall: softWall,
    forecast: forecast === undefined || Object.keys(forecast).length === 0 ? undefined : forecast,
  });
}

function percent(share: number): string {
  return `${Math.round(share * 10_000) / 100}%`;
}
