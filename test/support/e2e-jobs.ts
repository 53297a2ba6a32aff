/**
 * The jobs, calls and results a runtime publishes in the end-to-end cases, built alike on the
 * broker (`test/integration/e2e.test.ts`) and in memory (`test/unit/topology/app-test-driver.test.ts`):
 * a tree's root job and its children, their start and end events, a call of `get_page` of the
 * e2e configuration's plugin and the tool's answer to it. `label` prefixes every ID and names the
 * person who starts a root job; `now` stamps the events (the driver's virtual clock, or the wall's).
 */
import type { CallContext } from "../../client/runtime-client.ts";
import type { JobEvent, ToolCall, ToolResult } from "../../schemas/types.ts";
import { jobEvent as rootJobEvent, uid } from "./events.ts";

export const E2E_PLUGIN = "e2e_docs";

export interface Job extends CallContext {
  readonly parent: string | null;
  readonly depth: number;
}

export function e2eJobs(label: string, now: () => number = Date.now) {
  function rootJob(tenant: string, agent: string): Job {
    const tree = uid(`${label}-tree`);
    return { tenant, tree_id: tree, job_id: tree, run_id: `${tree}-run`, agent, parent: null, depth: 0 };
  }

  function childJob(parent: Job, n: number, agent: string): Job {
    const job = `${parent.job_id}-c${n}`;
    return { ...parent, job_id: job, run_id: `${job}-run`, agent, parent: parent.job_id, depth: parent.depth + 1 };
  }

  function jobEvent(j: Job, kind: JobEvent["kind"], over: Partial<JobEvent> = {}): JobEvent {
    const child = j.parent !== null;
    return rootJobEvent(j.job_id, kind, {
      id: uid(`${label}-job`),
      tenant: j.tenant,
      tree_id: j.tree_id,
      parent_job_id: j.parent,
      run_id: j.run_id,
      agent: j.agent,
      started_by: child ? "agent" : "app",
      delegation: child ? "delegation" : "none",
      depth: j.depth,
      principal: child ? null : `${label}-app`,
      ts: now(),
      ...over,
    });
  }

  function toolCall(j: Job, args: Record<string, unknown>): ToolCall {
    return {
      id: uid(`${label}-call`),
      tenant: j.tenant,
      tree_id: j.tree_id,
      job_id: j.job_id,
      run_id: j.run_id,
      call_id: uid("call"),
      agent: j.agent,
      plugin: E2E_PLUGIN,
      tool: E2E_PLUGIN,
      function: "get_page",
      arguments: JSON.stringify(args),
      origin: "model",
      context_used: null,
      spend_share: null,
      ts: now(),
    };
  }

  /** The tool's answer to a call, an MCP CallToolResult of one text item. */
  function resultOf(call: ToolCall, text: string): ToolResult {
    const content = JSON.stringify({ content: [{ type: "text", text }] });
    const { context_used: _c, spend_share: _s, ...rest } = call;
    return { ...rest, id: uid(`${label}-result`), is_error: false, content, content_ref: null, size_bytes: Buffer.byteLength(content), labels: [], ts: now() };
  }

  return { rootJob, childJob, jobEvent, toolCall, resultOf };
}
