/**
 * `oz0 tenant offload|spend|tool-policy` and `oz0 quota set`: a tenant's settings changed from
 * the command line through the path `config publish` takes. The row the configuration table
 * holds is read, the change applied and held to every rule a tenant file is
 * (`config/tenant-edit.ts`), and the row published to `oz0.config` with its reason, which the
 * audit log keeps (`tenant.changed`, the source naming the command and who ran it).
 */
import kafkajs from "kafkajs";
import { toConfigRecords } from "../config/load.ts";
import { MONTH } from "../config/quotas.ts";
import { diffTenant } from "../config/tenant-change.ts";
import { editTenant, newTenant, type TenantEdit } from "../config/tenant-edit.ts";
import type { TenantSettings } from "../config/tenant.ts";
import { ConfigTable, publishConfig } from "../processors/runner/config-table.ts";
import { kafkaConfig } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import { Serde } from "../schemas/serde.ts";
import { Exit, parse, person, usage } from "./cli.ts";
import { servicesForCommand } from "../topology/services.ts";

export const TENANT_HELP: Record<string, string> = {
  "tenant offload": `oz0 tenant offload <tenant> [--default N|off|platform] [--ceiling N|none] --reason R [--as NAME] [--json]

The tenant's offload threshold for agents that set none (--default: tokens, off, or platform
for the platform's 10,000) and the most an agent may set (--ceiling: tokens, or none). Part of
the tenant's tool policy, so a change takes --reason; audited with who made it.

Example:
  oz0 tenant offload acme --default 6000 --ceiling 20000 --reason "long pages fill the context"
`,
  "tenant spend": `oz0 tenant spend <tenant> [--tree-fan-out N] [--tree-children N] [--tree-depth N] [--tree-model-calls N]
    [--tree-tokens N] [--tree-wait D] [--repeats N] [--cycles N] [--no-progress N] [--warn-share X]
    [--soft-wall X] [--monthly-budget USD] --reason R [--as NAME] [--json]

The tenant's defaults under limits.tree, loops and spend, and its monthly budget; an agent's own
settings win over them. A count of 0 takes the platform's default back, none (or -1) no limit.
Takes --reason; audited with who made it.

Example:
  oz0 tenant spend acme --tree-fan-out 5 --warn-share 0.7 --reason "a runaway tree last week"
`,
  "tenant tool-policy": `oz0 tenant tool-policy <tenant> [--json]

The tenant's settings as the pipeline holds them (the configuration table): offload, tree
limits, loops, spend, approvals, budget and quotas. Change them with oz0 tenant offload,
oz0 tenant spend and oz0 quota set, or by publishing tenant files (npm run config -- publish).

Example:
  oz0 tenant tool-policy acme
`,
  "quota set": `oz0 quota set <person|team> <id> <usd|none> --tenant T --reason R [--month YYYY-MM] [--as NAME] [--json]

A person's or a team's own monthly quota in the tenant (LIM-10), over the tenant's quotas.person
or quotas.team; none takes it out. Past it, a job waits for a budget request, and no child of
its tree starts. --month sets it for that month only (UTC), over every other quota of the
person or team in that month (quotas.per_month).

Examples:
  oz0 quota set person alice 200 --tenant acme --reason "leads the migration"
  oz0 quota set team research 5000 --month 2026-12 --tenant acme --reason "the year-end evaluation runs"
`,
};

const CHANGE_OPTIONS = { reason: { type: "string" }, as: { type: "string" }, json: { type: "boolean", default: false }, help: { type: "boolean", default: false } } as const;

/** A count, or its keyword, as a tenant file writes it. */
function written(flag: string, v: string | undefined, words: readonly string[]): unknown {
  if (v === undefined) return undefined;
  if (words.includes(v)) return v;
  const n = Number(v);
  if (v.trim() === "" || !Number.isFinite(n)) throw usage(`--${flag} ${v}: give a number${words.length ? ` or ${words.join(", ")}` : ""}\n`);
  return n;
}

function only(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

interface Change {
  readonly tenant: string;
  readonly edit: TenantEdit;
  readonly reason: string | undefined;
  readonly as: string | undefined;
  readonly json: boolean;
  readonly command: string;
}

async function withTable<T>(use: (table: ConfigTable, kafka: kafkajs.Kafka, serde: Serde) => Promise<T>): Promise<T> {
  const endpoints = await servicesForCommand();
  const log = createLogger({ component: "oz0" }, () => {});
  const kafka = new kafkajs.Kafka(kafkaConfig("oz0-tenant", endpoints, process.env, log));
  const serde = new Serde({ registryUrl: endpoints.registryUrl });
  await serde.registerAll();
  const table = await ConfigTable.start(kafka, serde, log);
  try {
    return await use(table, kafka, serde);
  } finally {
    await table.stop();
  }
}

const message = (m: string): string => m.replace(/^tenants\/[^:]+\.yaml:\d+: /, "");

async function applyChange(c: Change): Promise<string> {
  const by = person(c.as);
  if (!c.reason || c.reason.trim() === "") throw usage(`${c.command} changes the tenant's tool policy: give --reason "why" (OFF-13)\n`);
  const nothing = !("monthly_budget_usd" in c.edit) && Object.values(c.edit).every((f) => f !== null && typeof f === "object" && Object.keys(f).length === 0);
  if (nothing) throw usage(`${c.command}: nothing to change; give at least one setting\n\n${TENANT_HELP[c.command] ?? ""}`);
  return withTable(async (table, kafka, serde) => {
    const before = table.get("tenant", c.tenant) as TenantSettings | undefined;
    const edited = editTenant(before ?? newTenant(c.tenant), c.edit);
    if (!edited.ok) throw new Exit(1, `not changed: ${edited.errors.map((e) => message(e.message)).join("; ")}\n`);
    const changed = diffTenant(before ?? null, edited.value);
    if (before && changed.length === 0) return c.json ? `${JSON.stringify({ tenant: c.tenant, changes: [] })}\n` : `tenant ${c.tenant}: nothing changed\n`;
    const source = `${c.command} (person:${by})`;
    const records = toConfigRecords([{ kind: "tenant", id: c.tenant, key: `tenant/${c.tenant}`, source, value: edited.value }], { ts: Date.now(), reason: c.reason });
    if (!records.ok) throw new Exit(1, `not changed: ${records.errors.map((e) => e.message).join("; ")}\n`);
    await publishConfig(kafka, serde, records.value);
    if (c.json) return `${JSON.stringify({ tenant: c.tenant, by, reason: c.reason, changes: changed })}\n`;
    const lines = changed.map((f) => `  ${f.field}: ${JSON.stringify(f.from ?? "(default)")} -> ${JSON.stringify(f.to ?? "(default)")}${f.loosening ? "  (loosens)" : ""}`);
    return `tenant ${c.tenant} changed by ${by}: ${c.reason}\n${lines.join("\n")}\n`;
  });
}

export async function tenantOffload(args: string[]): Promise<string> {
  const help = TENANT_HELP["tenant offload"] ?? "";
  const { values, positionals } = parse(help, args, { ...CHANGE_OPTIONS, default: { type: "string" }, ceiling: { type: "string" } });
  if (values.help) return help;
  const [tenant, ...rest] = positionals;
  if (!tenant || rest.length > 0) throw usage(`tenant offload takes one tenant\n\n${help}`);
  const edit = { offload: only({ default: written("default", values.default, ["off", "platform"]), ceiling: written("ceiling", values.ceiling, ["none"]) }) };
  return applyChange({ tenant, edit, reason: values.reason, as: values.as, json: values.json, command: "tenant offload" });
}

const TREE_FLAGS = { "tree-fan-out": "fan_out", "tree-children": "children", "tree-depth": "depth", "tree-model-calls": "model_calls", "tree-tokens": "tokens" } as const;

export async function tenantSpend(args: string[]): Promise<string> {
  const help = TENANT_HELP["tenant spend"] ?? "";
  const counts = Object.fromEntries([...Object.keys(TREE_FLAGS), "tree-wait", "repeats", "cycles", "no-progress", "warn-share", "soft-wall", "monthly-budget"].map((f) => [f, { type: "string" as const }]));
  const { values, positionals } = parse(help, args, { ...CHANGE_OPTIONS, ...counts });
  if (values.help) return help;
  const [tenant, ...rest] = positionals;
  if (!tenant || rest.length > 0) throw usage(`tenant spend takes one tenant\n\n${help}`);
  const v = values as unknown as Record<string, string | undefined>;
  const tree = only({
    ...Object.fromEntries(Object.entries(TREE_FLAGS).map(([flag, field]) => [field, written(flag, v[flag], ["none"])])),
    wait: v["tree-wait"],
  });
  const loops = only({ repeats: written("repeats", v.repeats, []), cycles: written("cycles", v.cycles, []), no_progress: written("no-progress", v["no-progress"], []) });
  const spend = only({ warn_share: written("warn-share", v["warn-share"], []), soft_wall: written("soft-wall", v["soft-wall"], []) });
  const budget = written("monthly-budget", v["monthly-budget"], ["none"]);
  const edit: TenantEdit = { "limits.tree": tree, loops, spend, ...(budget === undefined ? {} : { monthly_budget_usd: budget === "none" ? null : (budget as number) }) };
  return applyChange({ tenant, edit, reason: values.reason, as: values.as, json: values.json, command: "tenant spend" });
}

export async function tenantToolPolicy(args: string[]): Promise<string> {
  const help = TENANT_HELP["tenant tool-policy"] ?? "";
  const { values, positionals } = parse(help, args, { json: { type: "boolean", default: false }, help: { type: "boolean", default: false } });
  if (values.help) return help;
  const [tenant, ...rest] = positionals;
  if (!tenant || rest.length > 0) throw usage(`tenant tool-policy takes one tenant\n\n${help}`);
  const t = await withTable((table) => Promise.resolve(table.get("tenant", tenant) as TenantSettings | undefined));
  if (!t) throw new Exit(1, `tenant ${tenant} has no settings in the configuration table: the platform's defaults apply (publish some with oz0 tenant offload|spend or npm run config -- publish)\n`);
  return values.json ? `${JSON.stringify(t, null, 2)}\n` : `tenant ${tenant}\n${JSON.stringify(t, null, 2)}\n`;
}

export async function quotaSet(args: string[]): Promise<string> {
  const help = TENANT_HELP["quota set"] ?? "";
  const { values, positionals } = parse(help, args, { ...CHANGE_OPTIONS, tenant: { type: "string" }, month: { type: "string" } });
  if (values.help) return help;
  const [kind, id, usd, ...rest] = positionals;
  if ((kind !== "person" && kind !== "team") || !id || usd === undefined || rest.length > 0) throw usage(`quota set takes person or team, an id and an amount in USD (or none)\n\n${help}`);
  if (!values.tenant) throw usage(`quota set: give the tenant the quota is in (--tenant T)\n\n${help}`);
  const amount = written("usd", usd, ["none"]);
  if (values.month !== undefined && !MONTH.test(values.month)) throw usage(`--month ${values.month}: give the month as YYYY-MM (UTC), such as 2026-12\n`);
  const section = `${values.month === undefined ? "quotas" : `quotas.per_month.${values.month}`}.per_${kind}` as const;
  const edit: TenantEdit = { [section]: { [id]: amount === "none" ? null : amount } };
  return applyChange({ tenant: values.tenant, edit, reason: values.reason, as: values.as, json: values.json, command: "quota set" });
}
