/**
 * LOOP-9: the tools that looped in three or more tenants within a week, for the cluster's
 * admins, from the daily counts `countLoop` keeps (per day, tenant, plugin and tool; never
 * what was said), each with its risk class and whether its kill switch is thrown.
 */
import type { Redis } from "ioredis";
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

/** Groups days of `<tenant>|<plugin>|<tool>` counts into the tools with loops in at least `minTenants` tenants. */
export function toolsLoopingAcrossTenants(days: ReadonlyArray<Record<string, string | number>>, minTenants: number, facts: Partial<ToolFacts> = {}): LoopingTool[] {
  const { risk, killSwitch } = { ...NO_FACTS, ...facts };
  const tools = new Map<string, { tenants: Set<string>; loops: number }>();
  for (const counts of days) {
    for (const [field, n] of Object.entries(counts)) {
      const [tenant, plugin, tool] = field.split("|");
      if (tenant === undefined || plugin === undefined || tool === undefined) continue;
      const key = `${plugin}|${tool}`;
      const t = tools.get(key) ?? { tenants: new Set<string>(), loops: 0 };
      t.tenants.add(tenant);
      t.loops += Number(n);
      tools.set(key, t);
    }
  }
  return [...tools.entries()]
    .filter(([, t]) => t.tenants.size >= minTenants)
    .map(([key, t]) => {
      const [plugin = "", tool = ""] = key.split("|");
      return { plugin, tool, tenants: [...t.tenants].sort(), loops: t.loops, risk: risk(plugin, tool), kill_switch: killSwitch(plugin, tool) };
    })
    .sort((a, b) => b.tenants.length - a.tenants.length || b.loops - a.loops || a.plugin.localeCompare(b.plugin) || a.tool.localeCompare(b.tool));
}

/** The tools that looped in `minTenants` (3) or more tenants in the `days` (7) UTC days up to `until`. */
export async function loopReport(redis: Redis, keys: Keys, options: { until?: number; days?: number; minTenants?: number; config?: ConfigView } = {}): Promise<LoopingTool[]> {
  const until = options.until ?? Date.now();
  const days = Array.from({ length: options.days ?? 7 }, (_, i) => utcDay(until - i * DAY_MS));
  const pipe = redis.pipeline();
  for (const day of days) pipe.hgetall(keys.loopStats(day, "counts"));
  const replies = (await pipe.exec()) ?? [];
  const counts = replies.map(([err, value]) => {
    if (err) throw err;
    return value as Record<string, string>;
  });
  return toolsLoopingAcrossTenants(counts, options.minTenants ?? 3, options.config ? toolFacts(options.config) : {});
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
    const sw = t.kill_switch === null ? "kill switch: off (npm run config -- kill-switch " + killSwitchId(t.plugin, t.tool) + ' --reason "...")' : `kill switch: THROWN ${new Date(t.kill_switch.at).toISOString()} by ${t.kill_switch.by}: ${t.kill_switch.reason}`;
    return `  ${killSwitchId(t.plugin, t.tool)}  ${t.tenants.length} tenants (${t.tenants.join(", ")}), ${t.loops} loops, risk ${t.risk ?? "not declared"}, ${sw}`;
  });
  return [head, ...lines].join("\n");
}
