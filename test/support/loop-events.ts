/** Builders of tool results and loop-test configuration, for the loop detector's tests. */
import type { ToolCall, ToolResult } from "../../schemas/types.ts";
import { uid } from "./events.ts";

/** A result answering a call, with MCP text content unless told otherwise. */
export function toolResult(call: ToolCall, over: Partial<ToolResult> & { text?: string } = {}): ToolResult {
  const { text, ...rest } = over;
  const content = JSON.stringify({ content: [{ type: "text", text: text ?? uid("new") }] });
  return {
    id: uid("evt"),
    tenant: call.tenant,
    tree_id: call.tree_id,
    job_id: call.job_id,
    run_id: call.run_id,
    call_id: call.call_id,
    agent: call.agent,
    plugin: call.plugin,
    tool: call.tool,
    function: call.function,
    arguments: call.arguments,
    origin: call.origin,
    is_error: false,
    content,
    content_ref: null,
    size_bytes: Buffer.byteLength(content),
    ts: call.ts,
    labels: [],
    ...rest,
  };
}

/** An MCP result with no content. */
export const EMPTY_RESULT = JSON.stringify({ content: [] });
