/**
 * LOOP-9: the tools that looped in three or more tenants within a week, for the cluster's
 * admins, from the daily counts `countLoops` keeps (per day, tenant, plugin and tool; never
 * what was said), each with its risk class and whether its kill switch is thrown.
 */
import type { RedisClient } from "../../store/redis/client.ts";
import { asKillSwitch, killSwitchId, type KillSwitch } from "../../config/kill-switch.ts";
import type { PluginManifest } from "../../config/plugin.ts";
import type { Keys } from "../../store/redis/keys.ts";
import type { ConfigView } from "../runner/config-table.ts";
import { utcDay } from "./store.ts";

export interface LoopingTool {
  readonly plugin: string;
  readonly tool: string;
  /** The tenants it looped in, sorted. */
  readonly tenants: readonly string[];
  /** Loops acted on in those days, in all tenants. */
  readonly loops: number;
  /** The tool's risk class, when its manifest declares one. */
  readonly risk: string | null;
  /** The tool's kill switch, when one is thrown (`npm run config -- kill-switch`). */
  readonly kill_switch: KillSwitch | null;
}

/** What the report knows of a tool besides its counts. */
export interface ToolFacts {
  risk(plugin: string, tool: string): string | null;
  killSwitch(plugin: string, tool: string): KillSwitch | null;
}

const NO_FACTS: ToolFacts = { risk: () => null, killSwitch: () => null };

const DAY_MS = 86_400_000;

/** Loops acted on by one tenant with one tool, over some days: what either source of the report gives. */
export interface TenantToolLoops {
  readonly tenant: string;
  readonly plugin: string;
  readonly tool: string;
  readonly loops: number;
}

/** Groups days of `<tenant>|<plugin>|<tool>` counts into the tools with loops in at least `minTenants` tenants. */
export function toolsLoopingAcrossTenants(days: ReadonlyArray<Record<string, string | number>>, minTenants: number, facts: Partial<ToolFacts> = {}): LoopingTool[] {
  const rows: TenantToolLoops[] = [];
  for (const counts of days) {
    for (const [field, n] of Object.entries(counts)) {
      const [tenant, plugin, tool] = field.split("|");
      if (tenant === undefined || plugin === undefined || tool === undefined) continue;
      rows.push({ tenant, plugin, tool, loops: Number(n) });
    }
  }
  return toolsLoopingInTenants(rows, minTenants, facts);
}

/**
 * The tools with loops in at least `minTenants` tenants, from counts per tenant and tool (the
 * daily counts in Redis, or the audit log's `loop.acted` entries), with their risk class and
 * kill switch, most tenants first.
 */
export function toolsLoopingInTenants(rows: Iterable<TenantToolLoops>, minTenants: number, facts: Partial<ToolFacts> = {}): LoopingTool[] {
  const { risk, killSwitch } = { ...NO_FACTS, ...facts };
  const tools = new Map<string, { plugin: string; tool: string; tenants: Set<string>; loops: number }>();
  for (const row of rows) {
    const key = JSON.stringify([row.plugin, row.tool]);
    const t = tools.get(key) ?? { plugin: row.plugin, tool: row.tool, tenants: new Set<string>(), loops: 0 };
    t.tenants.add(row.tenant);
    t.loops += row.loops;
    tools.set(key, t);
  }
  return [...tools.values()]
    .filter((t) => t.tenants.size >= minTenants)
    .map(({ plugin, tool, tenants, loops }) => ({ plugin, tool, tenants: [...tenants].sort(), loops, risk: risk(plugin, tool), kill_switch: killSwitch(plugin, tool) }))
    .sort((a, b) => b.tenants.length - a.tenants.length || b.loops - a.loops || a.plugin.localeCompare(b.plugin) || a.tool.localeCompare(b.tool));
}

/** The tools that looped in `minTenants` (3) or more tenants in the `days` (7) UTC days up to `until`. */
export async function loopReport(redis: RedisClient, keys: Keys, options: { until?: number; days?: number; minTenants?: number; config?: ConfigView } = {}): Promise<LoopingTool[]> {
  const days = reportDays(options.until ?? Date.now(), options.days ?? 7);
  const pipe = redis.pipeline();
  for (const day of days) pipe.hgetall(keys.loopStats(day, "counts"));
  const replies = (await pipe.exec()) ?? [];
  const counts = replies.map(([err, value]) => {
    if (err) throw err;
    return value as Record<string, string>;
  });
  return toolsLoopingAcrossTenants(counts, options.minTenants ?? 3, options.config ? toolFacts(options.config) : {});
}

/** The `days` UTC days (`YYYY-MM-DD`) up to and including the day of `until`, newest first: the report's window. */
export function reportDays(until: number, days: number): string[] {
  return Array.from({ length: days }, (_, i) => utcDay(until - i * DAY_MS));
}

/** Risk classes from the plugins' manifests and kill switches, from the configuration table. */
export function toolFacts(config: ConfigView): ToolFacts {
  return {
    risk: (plugin, tool) => {
      const manifest = config.get("plugin", plugin) as PluginManifest | undefined;
      return manifest?.tools.find((t) => t.id === tool)?.risk ?? null;
    },
    killSwitch: (plugin, tool) => asKillSwitch(config.get("kill_switch", killSwitchId(plugin, tool))),
  };
}

/** The report as a person reads it: one tool a line, with its tenants, loops, risk class and kill switch. */
export function formatLoopReport(tools: readonly LoopingTool[], window: { days: number; minTenants: number }): string {
  const head = `Tools that looped in ${window.minTenants} or more tenants in the last ${window.days} days:`;
  if (tools.length === 0) return `${head} none.`;
  const lines = tools.map((t) => {
    const sw = t.kill_switch === null ? "kill switch: off (oz0 config kill-switch " + killSwitchId(t.plugin, t.tool) + ' --reason "...")' : `kill switch: THROWN ${new Date(t.kill_switch.at).toISOString()} by ${t.kill_switch.by}: ${t.kill_switch.reason}`;
    return `  ${killSwitchId(t.plugin, t.tool)}  ${t.tenants.length} tenants (${t.tenants.join(", ")}), ${t.loops} loops, risk ${t.risk ?? "not declared"}, ${sw}`;
  });
  return [head, ...lines].join("\n");
}
