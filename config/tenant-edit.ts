/**
 * A tenant's settings changed from the command line (`oz0 tenant offload|spend`, `oz0 quota
 * set`): the row the configuration table holds, written back as a document (durations with
 * their units), the change applied to that document, and the result read by `parseTenant`, so
 * a change is held to every rule a tenant file is, with the same errors. Pure.
 */
import type { Parsed } from "./errors.ts";
import { parseTenant, type TenantSettings } from "./tenant.ts";
import { formatDuration } from "./units.ts";

type Doc = Record<string, unknown>;

const withUnit = (ms: unknown): unknown => (typeof ms === "number" && Number.isSafeInteger(ms) && ms >= 0 ? formatDuration(ms) : ms);

/** The settings as a tenant file would write them: what `parseTenant` reads back as the same settings. */
export function tenantDocument(t: TenantSettings): Doc {
  const doc = JSON.parse(JSON.stringify(t)) as Doc;
  const tree = (doc.limits as Doc | undefined)?.tree as Doc | undefined;
  if (tree && tree.wait !== undefined) tree.wait = withUnit(tree.wait);
  if (doc.loop_deadline !== undefined) doc.loop_deadline = withUnit(doc.loop_deadline);
  const approvals = doc.approvals as Doc | undefined;
  if (approvals) {
    if (approvals.deadline !== undefined) approvals.deadline = withUnit(approvals.deadline);
    if (Array.isArray(approvals.escalation)) approvals.escalation = (approvals.escalation as Doc[]).map((s) => ({ ...s, after: withUnit(s.after) }));
  }
  return doc;
}

/** A tenant's settings before any are written: what `parseTenant` gives for the id alone. */
export function newTenant(id: string): TenantSettings {
  const parsed = parseTenant(JSON.stringify({ id }), `tenants/${id}.yaml`);
  if (!parsed.ok) throw new Error(parsed.errors.map((e) => e.message).join("; "));
  return parsed.value;
}

/** A change: for each section, the fields to set (`null` takes one out, back to its default). */
export type TenantEdit = Readonly<Partial<Record<"offload" | "loops" | "spend" | "limits.tree" | "quotas" | `quotas.per_${"person" | "team"}` | `quotas.per_month.${string}.per_${"person" | "team"}`, Readonly<Record<string, unknown>>>>> & {
  readonly monthly_budget_usd?: number | null;
};

function section(doc: Doc, path: string): Doc {
  let at = doc;
  for (const part of path.split(".")) {
    const next = at[part];
    if (next === undefined || next === null || typeof next !== "object" || Array.isArray(next)) at[part] = {};
    at = at[part] as Doc;
  }
  return at;
}

/** The tenant's settings with the change applied, read as a tenant file is read (`tenants/<id>.yaml`). */
export function editTenant(current: TenantSettings, edit: TenantEdit): Parsed<TenantSettings> {
  const doc = tenantDocument(current);
  for (const [path, fields] of Object.entries(edit)) {
    if (path === "monthly_budget_usd") {
      if (fields === null) delete doc.monthly_budget_usd;
      else doc.monthly_budget_usd = fields;
      continue;
    }
    const at = section(doc, path);
    for (const [k, v] of Object.entries(fields as Record<string, unknown>)) {
      if (v === null) delete at[k];
      else at[k] = v;
    }
  }
  return parseTenant(JSON.stringify(doc), `tenants/${current.id}.yaml`);
}
