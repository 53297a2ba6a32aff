/**
 * TOOL-1: an agent calls only the tools it lists. Pure: `loop-calls` asks `toolNotAllowed` about
 * every call before it is made, and refuses a call of a tool the agent's definition does not list
 * (reason `ToolNotAllowed`) with words that name the tools it may call; the call is never made,
 * and the model reads the words as the call's failed result.
 *
 * Always allowed: the platform's own tools, which no agent lists as a plugin's: the answer and a
 * routine's output (plugin `oz0`, `watched.ts`) and `oz.read_result` (plugin `oz`, every
 * function of it). An agent the configuration table holds no definition for is not held to a
 * tool list: the runtime named an agent that was never published (a test, `oz0 mcp --agent X`
 * before publishing), and the guard rails have nothing to hold it to. A definition always has a
 * list once parsed (`tools: []` when left out: only the platform's own tools).
 */
import type { AgentDefinition } from "../../config/agent.ts";
import type { ToolCall } from "../../schemas/types.ts";
import type { ConfigView } from "../runner/config-table.ts";
import { READ_RESULT } from "../read-result/tool.ts";
import type { Emit } from "../runner/processor.ts";
import { decision, refusedResult, type DecisionParts } from "./outputs.ts";
import { isAnswer } from "./watched.ts";

export const TOOL_NOT_ALLOWED = "ToolNotAllowed";

/** The platform's own tools: callable whatever the agent lists. */
export function isPlatformTool(call: Pick<ToolCall, "plugin" | "function">): boolean {
  return isAnswer(call) || call.plugin === READ_RESULT.plugin;
}

/** The tool list an agent is held to, or null when it is held to none (no definition, or a row without one). */
export function toolListOf(config: ConfigView, agent: string): readonly string[] | null {
  const def = config.get("agent", agent) as Partial<AgentDefinition> | undefined;
  const tools: unknown = def?.tools;
  return Array.isArray(tools) ? tools.filter((t): t is string => typeof t === "string") : null;
}

/** Whether the agent's list names the call's tool: its tool id, as plugin manifests and agent definitions name tools. */
export function listsTool(tools: readonly string[], call: Pick<ToolCall, "tool">): boolean {
  return tools.includes(call.tool);
}

/** What the model reads when it calls a tool its agent does not list. */
export function notAllowedWords(call: Pick<ToolCall, "agent" | "plugin" | "tool" | "function">, tools: readonly string[]): string {
  const mayCall = tools.length === 0 ? "none of the plugins' tools (only the answer and oz.read_result)" : `only ${tools.join(", ")} (and the answer and oz.read_result)`;
  return `The agent ${call.agent} does not list the tool ${call.tool} (${call.plugin}/${call.tool}.${call.function}): it may call ${mayCall}. The call was not made; use one of those tools or answer with what you have.`;
}

/**
 * The refusal of a call of a tool the agent does not list: a `refuse` decision and the failed
 * result the model reads; null when the call may go on.
 */
export function toolNotAllowed(processor: string, config: ConfigView, call: ToolCall): Emit[] | null {
  if (isPlatformTool(call)) return null;
  const tools = toolListOf(config, call.agent);
  if (tools === null || listsTool(tools, call)) return null;
  return notAllowedOutputs(processor, call, tools);
}

export function notAllowedOutputs(processor: string, call: ToolCall, tools: readonly string[]): Emit[] {
  const message = notAllowedWords(call, tools);
  const parts: DecisionParts = { verdict: "refuse", reason_code: TOOL_NOT_ALLOWED, limit: "tools", message, evidence: { agent: call.agent, tool: call.tool, allowed: tools } };
  return [decision(processor, call, parts), refusedResult(processor, call, message)];
}
