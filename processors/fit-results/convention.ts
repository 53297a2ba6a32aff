/**
 * FIT-8, FIT-15: which functions adopt the fit convention, read from their tool's manifest. A
 * function adopts it when its tool's manifest says `results: {fit: true}` and its input schema
 * has an integer `budget` beside a `view` enum of the four views (`budgetFillInFunctions`).
 * Only such a function's `view`, `budget` and `query` are the convention's: the budget fill-in
 * fills in its budget, and fit-results fits its result. Any other function's arguments of those
 * names are its own (a search term, an amount of money), and a tool the pipeline has no
 * manifest for adopts nothing.
 */
import { budgetFillInFunctions, type PluginManifest } from "../../config/plugin.ts";
import type { ConfigView } from "../runner/config-table.ts";
import { builtinManifest } from "../read-result/tool.ts";

/** A plugin's manifest: a built-in's (`oz`), else the config table's `plugin` row, else undefined. */
export function manifestOf(config: ConfigView, plugin: string): PluginManifest | undefined {
  return builtinManifest(plugin) ?? (config.get("plugin", plugin) as PluginManifest | undefined);
}

/** Whether the call's function adopts the fit convention, by its tool's manifest. */
export function adoptsFitConvention(call: { readonly tool: string; readonly function: string }, manifest: PluginManifest | undefined): boolean {
  const tool = manifest?.tools.find((t) => t.id === call.tool);
  return tool !== undefined && budgetFillInFunctions(tool).includes(call.function);
}
