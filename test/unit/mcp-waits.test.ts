/**
 * LIM-3 through `oz0 mcp`: a call that waits for a person (a loop's or a tool call's approval)
 * is reported on `oz0.jobs` as `wait_started` when it starts waiting and `wait_ended` once it
 * is settled, so it counts against the tree's `wait`. On fakes of the runtime client and the
 * server, as the gateway's other handler tests.
 */
import { describe, expect, it } from "vitest";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { McpGateway, type GatewayFiles } from "../../client/mcp/gateway.ts";
import type { RuntimeClient } from "../../client/runtime-client.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { Decision, JobEvent, ResultDelivered, ToolCall, ToolResult } from "../../schemas/types.ts";

const session = { tenant: "acme", tree_id: "t1", job_id: "j1", run_id: "j1-run", agent: "acme-reviewer" };

function decisionFor(call: ToolCall, over: Partial<Decision> = {}): Decision {
  return { id: `d-${call.id}`, input_id: call.id, processor: "loop-calls", tenant: call.tenant, tree_id: call.tree_id, job_id: call.job_id, run_id: call.run_id, subject: call.call_id, verdict: "allow", reason_code: null, limit: null, numbers: {}, message: "", evidence: null, ts: 1, ...over };
}

function setup(decide: (call: ToolCall) => Decision, options: { failPublish?: boolean } = {}) {
  const listeners = new Set<(d: Decision) => void>();
  const published: JobEvent[] = [];
  const order: string[] = [];
  let lastCall: ToolCall | undefined;
  const runtime = {
    onCallDecision: (f: (d: Decision) => void) => {
      listeners.add(f);
      return () => listeners.delete(f);
    },
    onAdmission: () => () => undefined,
    awaitDecidedCall: () => Promise.resolve().then(() => lastCall as ToolCall),
    requestToolCall: (call: ToolCall) => {
      lastCall = call;
      const d = decide(call);
      for (const f of listeners) f(d);
      return Promise.resolve(d);
    },
    deliverToolResult: (r: ToolResult): Promise<ResultDelivered> =>
      Promise.resolve({ id: `r-${r.id}`, input_id: r.id, processor: "fit-results", tenant: r.tenant, tree_id: r.tree_id, job_id: r.job_id, run_id: r.run_id, call_id: r.call_id, plugin: r.plugin, tool: r.tool, function: r.function, is_error: r.is_error, content: r.content ?? "", truncated: false, fit: null, ts: 1 }),
    publishJobEvents: (events: readonly JobEvent[]) => {
      if (options.failPublish) return Promise.reject(new Error("broker down"));
      published.push(...events);
      order.push(...events.map((e) => e.kind));
      return Promise.resolve();
    },
  };
  const upstream = {
    callTool: () => {
      order.push("server");
      return Promise.resolve({ content: [{ type: "text", text: "done" }] });
    },
  };
  const files: GatewayFiles = { store: () => Promise.reject(new Error("not stored")), read: () => Promise.reject(new Error("not read")), reader: (tenant, tree) => Promise.resolve({ tenant, tree }) };
  let n = 0;
  const gateway = new McpGateway({
    runtime: runtime as unknown as RuntimeClient,
    upstream: upstream as unknown as Client,
    files,
    session,
    target: { plugin: "docs", tool: "docs" },
    log: createLogger({}, () => {}),
    settings: { filesDir: "/nonexistent", progressEveryMs: 10 },
    waitEvent: (kind) => ({ id: `w-${(n += 1)}`, tenant: "acme", tree_id: "t1", job_id: "j1", parent_job_id: null, run_id: "j1-run", agent: "acme-reviewer", kind, started_by: "person", delegation: "none", depth: 0, outcome: null, principal: "mcp", team: null, permissions: [], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts: Date.now() }),
  });
  const emit = (d: Decision): void => {
    for (const f of listeners) f(d);
  };
  return { gateway, published, order, emit, call: () => lastCall as ToolCall };
}

const extra = () => ({ signal: new AbortController().signal, _meta: { progressToken: 1 }, sendNotification: () => Promise.resolve() });
const waits = (c: ToolCall) => decisionFor(c, { verdict: "wait", reason_code: "ToolApproval", numbers: { deadline: Date.now() + 60_000 }, evidence: JSON.stringify({ approval: { id: "t-1", kind: "tool" } }) });

describe("LIM-3 oz0 mcp reports a wait for a person as the job's wait", () => {
  it("LIM-3 TOOL-3 a call that waits publishes wait_started, and wait_ended once a person's answer settles it, before the server is called", async () => {
    const s = setup(waits);
    const pending = s.gateway.call("quote", { plan: "pro" }, undefined, extra());
    await new Promise((r) => setTimeout(r, 30));
    expect(s.order).toEqual(["wait_started"]);
    expect(s.published[0]).toMatchObject({ kind: "wait_started", tenant: "acme", tree_id: "t1", job_id: "j1" });
    s.emit(decisionFor(s.call(), { id: "y", input_id: "answer-1", processor: "loop-approvals", verdict: "allow", reason_code: "ToolApproved" }));
    await pending;
    expect(s.order).toEqual(["wait_started", "wait_ended", "server"]);
    expect(new Set(s.published.map((e) => e.id)).size).toBe(2);
  });

  it("LIM-3 LOOP-5 a wait denied ends the wait too; a call that does not wait reports none", async () => {
    const s = setup(waits);
    const pending = s.gateway.call("get_page", {}, undefined, extra());
    await new Promise((r) => setTimeout(r, 20));
    s.emit(decisionFor(s.call(), { id: "z", input_id: "answer-2", processor: "loop-approvals", verdict: "stop", reason_code: "LoopDetected", message: "denied" }));
    expect(await pending).toMatchObject({ isError: true });
    expect(s.order).toEqual(["wait_started", "wait_ended"]);

    const plain = setup((c) => decisionFor(c));
    await plain.gateway.call("get_page", {}, undefined, extra());
    expect(plain.published).toEqual([]);
  });

  it("LIM-3 a wait that cannot be reported is still decided: the call goes on as answered", async () => {
    const s = setup(waits, { failPublish: true });
    const pending = s.gateway.call("quote", {}, undefined, extra());
    await new Promise((r) => setTimeout(r, 20));
    s.emit(decisionFor(s.call(), { id: "y2", input_id: "answer-3", processor: "loop-approvals", verdict: "allow", reason_code: "ToolApproved" }));
    expect(await pending).toEqual({ content: [{ type: "text", text: "done" }] });
    expect(s.order).toEqual(["server"]);
  });
});
