/**
 * `oz.read_result` as a tool: the platform's built-in plugin `oz`, tool `oz`, function
 * `read_result` (OFF-6). Runtimes publish a call of it to `oz0.tool-calls.requested` like any
 * other; the budget fill-in reads its built-in manifest here, so a budget the model leaves out
 * is filled in as for a fitted tool (FIT-15, FIT-16), and the read-result processor answers it.
 */
import type { PluginManifest, PluginTool } from "../../config/plugin.ts";

/** How a call of oz.read_result is named on a ToolCall. */
export const READ_RESULT = { plugin: "oz", tool: "oz", function: "read_result" } as const;

/** `<tool>.<function>` as notes and the trace name it. */
export const READ_RESULT_NAME = "oz.read_result";

/** The input schema a runtime offers the model: the fit convention's view and budget, and what names the part. */
export const READ_RESULT_INPUT_SCHEMA = {
  type: "object",
  properties: {
    ref: { type: "string", description: "The ref an offloaded result's stub names: oz0-file:sha256:<hex>." },
    view: { enum: ["stub", "summary", "section", "full"] },
    section: { type: "string", description: "A heading, a top-level key or an item such as [3]." },
    range: { type: "string", description: "Lines of the result as read, such as 120-180." },
    query: { type: "string", description: "As the fit convention's query: a heading, a name, a path, a key or a line range." },
    budget: { type: "integer", description: "The most tokens the answer may take." },
  },
  required: ["ref"],
} as const;

const OZ_TOOL: PluginTool = {
  id: READ_RESULT.tool,
  mcp: "builtin:oz",
  results: { fit: true },
  functions: [{ name: READ_RESULT.function, description: "Reads parts of an offloaded result back.", input_schema: READ_RESULT_INPUT_SCHEMA }],
};

/** The built-in `oz` plugin's manifest, as far as the guard rails read it. */
export const OZ_MANIFEST: PluginManifest = { name: READ_RESULT.plugin, tools: [OZ_TOOL] };

/** A built-in plugin's manifest by name, or undefined: a built-in is never looked up in (nor shadowed by) the config table. */
export function builtinManifest(plugin: string): PluginManifest | undefined {
  return plugin === OZ_MANIFEST.name ? OZ_MANIFEST : undefined;
}

/** Whether a call is a call of oz.read_result. */
export function isReadResult(call: { readonly plugin: string; readonly tool: string; readonly function: string }): boolean {
  return call.plugin === READ_RESULT.plugin && call.tool === READ_RESULT.tool && call.function === READ_RESULT.function;
}

/** Tools of the platform itself (`oz`, `oz.board_read`), as agents list them: not plugin tools (OFF-7). */
export function isBuiltinTool(id: string): boolean {
  return id === READ_RESULT.plugin || id.startsWith(`${READ_RESULT.plugin}.`);
}
