/**
 * The gateway's handlers on fakes of the runtime client and the server, for what the real
 * stack cannot be made to do on cue: a pipeline that never answers, a server that throws, a
 * wait settled by a decision that names the call by its call ID.
 */
import { describe, expect, it } from "vitest";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { McpGateway, type GatewayFiles } from "../../client/mcp/gateway.ts";
import { NoAnswer, type RuntimeClient } from "../../client/runtime-client.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { Decision, ResultDelivered, ToolCall, ToolResult } from "../../schemas/types.ts";

const session = { tenant: "acme", tree_id: "t1", job_id: "j1", run_id: "j1-run", agent: "acme-reviewer" };

interface Fake {
  decide?: (call: ToolCall) => Decision | null;
  decided?: (call: ToolCall) => ToolCall;
  deliver?: (r: ToolResult) => ResultDelivered | null;
}

function decisionFor(call: ToolCall, over: Partial<Decision> = {}): Decision {
  return { id: `d-${call.id}`, input_id: call.id, processor: "loop-calls", tenant: call.tenant, tree_id: call.tree_id, job_id: call.job_id, run_id: call.run_id, subject: call.call_id, verdict: "allow", reason_code: null, limit: null, numbers: {}, message: "", evidence: null, ts: 1, ...over };
}

function deliveredFor(r: ToolResult): ResultDelivered {
  return { id: `r-${r.id}`, input_id: r.id, processor: "fit-results", tenant: r.tenant, tree_id: r.tree_id, job_id: r.job_id, run_id: r.run_id, call_id: r.call_id, plugin: r.plugin, tool: r.tool, function: r.function, is_error: r.is_error, content: r.content ?? "", truncated: false, fit: null, ts: 1 };
}

function setup(fake: Fake, server: (name: string, args: unknown, meta: unknown) => unknown = () => ({ content: [{ type: "text", text: "done" }] })) {
  const listeners = new Set<(d: Decision) => void>();
  const published: ToolResult[] = [];
  const serverCalls: Array<{ name: string; args: unknown; meta: unknown }> = [];
  const never = (kind: "callDecision" | "decidedCall" | "delivered", id: string) => Promise.reject(new NoAnswer(kind, id, 5));
  const runtime = {
    onCallDecision: (f: (d: Decision) => void) => {
      listeners.add(f);
      return () => listeners.delete(f);
    },
    onAdmission: () => () => undefined,
    awaitDecidedCall: (id: string) => Promise.resolve().then(() => (lastCall && fake.decided ? fake.decided(lastCall) : (lastCall ?? never("decidedCall", id)))),
    requestToolCall: (call: ToolCall) => {
      lastCall = call;
      const d = fake.decide?.(call) ?? null;
      if (d === null) return never("callDecision", call.id);
      for (const f of listeners) f(d);
      return Promise.resolve(d);
    },
    deliverToolResult: (r: ToolResult) => {
      published.push(r);
      const d = fake.deliver ? fake.deliver(r) : deliveredFor(r);
      return d === null ? never("delivered", r.id) : Promise.resolve(d);
    },
  };
  let lastCall: ToolCall | undefined;
  const upstream = {
    callTool: (params: { name: string; arguments?: unknown; _meta?: unknown }) => {
      serverCalls.push({ name: params.name, args: params.arguments, meta: params._meta });
      return Promise.resolve().then(() => server(params.name, params.arguments, params._meta));
    },
  };
  const files: GatewayFiles = { store: () => Promise.reject(new Error("not stored")), read: () => Promise.reject(new Error("not read")), reader: (tenant, tree) => Promise.resolve({ tenant, tree }) };
  const gateway = new McpGateway({
    runtime: runtime as unknown as RuntimeClient,
    upstream: upstream as unknown as Client,
    files,
    session,
    target: { plugin: "docs", tool: "docs" },
    log: createLogger({}, () => {}),
    settings: { filesDir: "/nonexistent", progressEveryMs: 10 },
  });
  const emit = (d: Decision): void => {
    for (const f of listeners) f(d);
  };
  return { gateway, published, serverCalls, emit, call: () => lastCall };
}

const extra = (progress: string[] = []) => ({
  signal: new AbortController().signal,
  _meta: { progressToken: 1 },
  sendNotification: (n: { params: { message?: string } }) => {
    progress.push(n.params.message ?? "");
    return Promise.resolve();
  },
});

describe("the MCP gateway's handlers", () => {
  it("no decision in time: the agent gets an error saying what to check, and the server is never called", async () => {
    const { gateway, serverCalls, published } = setup({ decide: () => null });
    const answer = await gateway.call("get_page", { path: "a.md" }, undefined, extra());
    expect(answer.isError).toBe(true);
    expect(answer.content[0]?.text).toMatch(/was not made: the guard rails did not decide it\. no answer: a call decision .* GET \/health\/ready/);
    expect(serverCalls).toEqual([]);
    expect(published).toEqual([]);
  });

  it("FIT-15 allow: the server is called with the arguments as decided, and its result is published with the decided call's arguments", async () => {
    const { gateway, serverCalls, published } = setup({
      decide: (c) => decisionFor(c),
      decided: (c) => ({ ...c, arguments: JSON.stringify({ path: "a.md", view: "summary", budget: 2000 }) }),
    });
    const answer = await gateway.call("get_page", { path: "a.md", view: "summary" }, undefined, extra());
    expect(answer).toEqual({ content: [{ type: "text", text: "done" }] });
    expect(serverCalls).toEqual([{ name: "get_page", args: { path: "a.md", view: "summary", budget: 2000 }, meta: undefined }]);
    expect(JSON.parse(published[0]?.arguments ?? "{}")).toEqual({ path: "a.md", view: "summary", budget: 2000 });
  });

  it("a server that throws: its error is published as the call's failed result, and the agent reads what was delivered", async () => {
    const { gateway, published } = setup({ decide: (c) => decisionFor(c) }, () => {
      throw new Error("MCP error -32602: Invalid arguments");
    });
    const answer = await gateway.call("get_page", {}, undefined, extra());
    expect(published[0]?.is_error).toBe(true);
    expect(answer.isError).toBe(true);
    expect(answer.content[0]?.text).toContain("The tool get_page failed: MCP error -32602: Invalid arguments");
  });

  it("a result published but not delivered in time: the agent is told the call was made; the result stays published", async () => {
    const { gateway, published } = setup({ decide: (c) => decisionFor(c), deliver: () => null });
    const answer = await gateway.call("get_page", {}, undefined, extra());
    expect(published).toHaveLength(1);
    expect(answer.isError).toBe(true);
    expect(answer.content[0]?.text).toMatch(/was made, but the guard rails did not deliver its result in time/);
  });

  it("LOOP-5 a wait tells the agent how to answer, and the decision that names the call by its call ID settles it", async () => {
    const wait = (c: ToolCall) => decisionFor(c, { verdict: "wait", message: "A loop waits.", numbers: { deadline: Date.now() + 60_000 }, evidence: JSON.stringify({ approval: { id: "a-7", kind: "loop" } }) });
    const progress: string[] = [];
    const s = setup({ decide: wait });
    const pending = s.gateway.call("get_page", { path: "a.md" }, undefined, extra(progress));
    await new Promise((r) => setTimeout(r, 30));
    expect(s.serverCalls).toEqual([]);
    const call = s.call() as ToolCall;
    // Another run's decision of the same call ID, then the approval's: only the latter counts.
    s.emit({ ...decisionFor(call, { id: "x", input_id: "answer-1", processor: "loop-approvals", verdict: "stop" }), run_id: "another-run" });
    s.emit(decisionFor(call, { id: "y", input_id: "answer-1", processor: "loop-approvals", verdict: "allow", reason_code: "LoopApproved" }));
    const answer = await pending;
    expect(answer).toEqual({ content: [{ type: "text", text: "done" }] });
    expect(s.serverCalls).toHaveLength(1);
    expect(progress[0]).toBe("A loop waits. Answer with: oz0 approval approve j1 a-7 (or deny).");
  });

  it("LOOP-5 a wait denied: the stop words as a tool error, and the server is never called", async () => {
    const s = setup({ decide: (c) => decisionFor(c, { verdict: "wait", message: "waits", numbers: { deadline: Date.now() + 60_000 } }) });
    const pending = s.gateway.call("get_page", {}, undefined, extra());
    await new Promise((r) => setTimeout(r, 20));
    s.emit(decisionFor(s.call() as ToolCall, { id: "z", input_id: "answer-2", processor: "loop-approvals", verdict: "stop", reason_code: "LoopDetected", message: "A person denied the loop." }));
    const answer = await pending;
    expect(answer).toMatchObject({ isError: true, content: [{ type: "text", text: "A person denied the loop." }] });
    expect(s.serverCalls).toEqual([]);
  });
});
