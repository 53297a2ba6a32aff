/** Builders of valid events for tests, with unique IDs unless told otherwise. */
import { randomUUID } from "node:crypto";
import type { JobEvent, ToolCall } from "../../schemas/types.ts";

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

/** A root job's event of `kind` in tree `job` (the job names its tree), started by an app. */
export function jobEvent(job: string, kind: JobEvent["kind"], over: Partial<JobEvent> = {}): JobEvent {
  return {
    id: uid("job-evt"),
    tenant: "acme",
    tree_id: job,
    job_id: job,
    parent_job_id: null,
    run_id: null,
    agent: "acme-reviewer",
    kind,
    started_by: "app",
    delegation: "none",
    depth: 0,
    outcome: null,
    principal: null,
    team: null,
    permissions: [],
    files: [],
    chosen_tree_id: false,
    conversation_id: null,
    previous_turn: null,
    ts: Date.now(),
    ...over,
  };
}
