/** Builders of valid events for tests, with unique IDs unless told otherwise. */
import { randomUUID } from "node:crypto";
import type { ToolCall } from "../../schemas/types.ts";

export function uid(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 12)}`;
}

export function toolCall(over: Partial<ToolCall> = {}): ToolCall {
  return {
    id: uid("evt"),
    tenant: "acme",
    tree_id: "job-root",
    job_id: "job-root",
    run_id: "run-1",
    call_id: uid("call"),
    agent: "acme-reviewer",
    plugin: "acme_docs",
    tool: "acme_docs",
    function: "get_page",
    arguments: JSON.stringify({ path: "README.md" }),
    origin: "model",
    context_used: null,
    spend_share: null,
    ts: Date.now(),
    ...over,
  };
}
