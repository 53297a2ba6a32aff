/**
 * Plugin manifests for tests. fit-results fits a result only when its function adopts the fit
 * convention (FIT-8): the tool's manifest says `results: {fit: true}` and the function takes an
 * integer `budget` beside a `view` enum of the four views.
 */
import type { PluginManifest } from "../../config/plugin.ts";
import { staticConfig, type ConfigView } from "../../processors/runner/config-table.ts";

/** The input schema of a function that adopts the fit convention (as the example get_page). */
export const FIT_CONVENTION_SCHEMA = {
  type: "object",
  properties: { path: { type: "string" }, view: { enum: ["stub", "summary", "section", "full"] }, budget: { type: "integer" }, query: { type: "string" } },
} as const;

/** A plugin of one tool of the plugin's name whose functions all adopt the fit convention. */
export function fittedManifest(plugin: string, functions: readonly string[] = ["get_page"]): PluginManifest {
  return { name: plugin, tools: [{ id: plugin, mcp: [plugin], results: { fit: true }, functions: functions.map((name) => ({ name, input_schema: FIT_CONVENTION_SCHEMA })) }] };
}

/** A configuration view holding those plugins' manifests and nothing else. */
export function fittedConfig(...manifests: PluginManifest[]): ConfigView {
  return staticConfig(manifests.map((m) => ({ kind: "plugin" as const, id: m.name, value: m })));
}
