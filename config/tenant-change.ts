/**
 * A change of a tenant's settings, as the audit log and the config table keep it. Every change
 * carries a reason (OFF-13: the settings are part of the tenant's tool policy, and a tool-policy
 * change takes --reason); a change without one is refused. Which fields loosen a guard rail is
 * worked out here, and an offload change never counts as a loosening (OFF-13).
 */
import { ConfigError, type Parsed } from "./errors.ts";
import { DEFAULT_LOOPS, DEFAULT_ON_LOOP, DEFAULT_SPEND, DEFAULT_TREE_LIMITS } from "./defaults.ts";
import { LOOP_KEYS, ON_LOOP, TREE_LIMIT_KEYS, type OnLoop } from "./limits.ts";
import type { TenantSettings } from "./tenant.ts";

export interface FieldChange {
  /** Dotted path as in the file: `limits.tree.fan_out`, `offload.ceiling`. */
  readonly field: string;
  /** As written; null when left out. */
  readonly from: unknown;
  readonly to: unknown;
  /** True when the change lets jobs do more than before (a limit raised or removed, a looser on_loop). */
  readonly loosening: boolean;
}

export interface TenantChange {
  readonly tenant: string;
  /** Why, in the words of whoever changed it. Never empty. */
  readonly reason: string;
  /** Who changed it. */
  readonly by: string;
  /** Epoch milliseconds. */
  readonly at: number;
  /** Null when the tenant had no settings before: then changes are measured against the defaults. */
  readonly before: TenantSettings | null;
  readonly after: TenantSettings;
  readonly changes: readonly FieldChange[];
  /** True when any change loosens. */
  readonly loosening: boolean;
}

export interface TenantChangeRequest {
  readonly before: TenantSettings | null;
  readonly after: TenantSettings;
  readonly reason?: string | null | undefined;
  readonly by: string;
  readonly at: number;
}

/** The change record, or the reasons it is refused (no reason, no author, another tenant's settings). */
export function tenantChange(request: TenantChangeRequest): Parsed<TenantChange> {
  const path = `tenant/${request.after.id}`;
  const errors: ConfigError[] = [];
  const reason = request.reason?.trim() ?? "";
  if (reason === "") {
    errors.push(
      new ConfigError({ path, field: "reason", reason: 'a change of tenant settings needs a reason (OFF-13): say why, such as "long pages fill the context"' }),
    );
  }
  if (request.by.trim() === "") errors.push(new ConfigError({ path, field: "by", reason: "a change of tenant settings needs who made it" }));
  if (request.before !== null && request.before.id !== request.after.id) {
    errors.push(new ConfigError({ path, field: "id", reason: `the settings before are tenant ${request.before.id}'s, not ${request.after.id}'s` }));
  }
  if (errors.length > 0) return { ok: false, errors, warnings: [] };

  const changes = diffTenant(request.before, request.after);
  return {
    ok: true,
    value: {
      tenant: request.after.id,
      reason,
      by: request.by,
      at: request.at,
      before: request.before,
      after: request.after,
      changes,
      loosening: changes.some((c) => c.loosening),
    },
    warnings: [],
  };
}

/** Every field whose written value differs, sorted by field. */
export function diffTenant(before: TenantSettings | null, after: TenantSettings): FieldChange[] {
  const was = flatten(before ?? {});
  const is = flatten(after);
  const fields = [...new Set([...was.keys(), ...is.keys()])].filter((f) => f !== "id").sort();
  const changes: FieldChange[] = [];
  for (const field of fields) {
    const from = was.get(field) ?? null;
    const to = is.get(field) ?? null;
    if (JSON.stringify(from) === JSON.stringify(to)) continue;
    changes.push({ field, from, to, loosening: loosens(field, from, to) });
  }
  return changes;
}

function flatten(value: object, prefix = "", out = new Map<string, unknown>()): Map<string, unknown> {
  for (const [key, v] of Object.entries(value)) {
    const field = prefix === "" ? key : `${prefix}.${key}`;
    if (v !== null && typeof v === "object" && !Array.isArray(v)) flatten(v as object, field, out);
    else if (v !== undefined) out.set(field, v);
  }
  return out;
}

/** How much a person is asked before a loop goes on: stop is the strictest, report the loosest. */
const ON_LOOP_STRICTNESS: Readonly<Record<OnLoop, number>> = { report: 0, wait: 1, stop: 2 };

function loosens(field: string, from: unknown, to: unknown): boolean {
  if (field.startsWith("offload.")) return false;
  const treeKey = TREE_LIMIT_KEYS.find((key) => field === `limits.tree.${key}`);
  if (treeKey !== undefined) return treeLimit(to, DEFAULT_TREE_LIMITS[treeKey]) > treeLimit(from, DEFAULT_TREE_LIMITS[treeKey]);
  const loopKey = LOOP_KEYS.find((key) => field === `loops.${key}`);
  if (loopKey !== undefined) return numberOr(to, DEFAULT_LOOPS[loopKey]) > numberOr(from, DEFAULT_LOOPS[loopKey]);
  if (field === "on_loop") return strictness(to) < strictness(from);
  if (field === "spend.warn_share") return numberOr(to, DEFAULT_SPEND.warn_share) > numberOr(from, DEFAULT_SPEND.warn_share);
  if (field === "spend.soft_wall") return numberOr(to, DEFAULT_SPEND.soft_wall) > numberOr(from, DEFAULT_SPEND.soft_wall);
  if (field === "monthly_budget_usd") return numberOr(to, Infinity) > numberOr(from, Infinity);
  if (field.startsWith("quotas.")) return numberOr(to, Infinity) > numberOr(from, Infinity);
  return false;
}

function strictness(written: unknown): number {
  const choice = (ON_LOOP as readonly unknown[]).includes(written) ? (written as OnLoop) : DEFAULT_ON_LOOP;
  return ON_LOOP_STRICTNESS[choice];
}

/** A tenant's tree limit as a number to compare: left out or 0 is the default, none is infinite. */
function treeLimit(written: unknown, fallback: number | null): number {
  if (written === "none" || written === -1) return Infinity;
  if (typeof written === "number" && written > 0) return written;
  return fallback ?? Infinity;
}

function numberOr(written: unknown, fallback: number): number {
  return typeof written === "number" ? written : fallback;
}
