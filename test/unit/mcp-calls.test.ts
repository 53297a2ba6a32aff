import { describe, expect, it } from "vitest";
import {
  approvalOf,
  callArguments,
  deliveredAnswer,
  listedTools,
  refusedAnswer,
  requestOf,
  toolCallEvent,
  toolResultEvent,
  waitingMessage,
  waitUntil,
  type ListedTool,
} from "../../client/mcp/calls.ts";
import { listenAddress, pickTool, stopWithinMs } from "../../bin/oz0-mcp.ts";
import type { PluginManifest } from "../../config/plugin.ts";
import type { Decision, ResultDelivered } from "../../schemas/types.ts";

const ctx = { tenant: "acme", tree_id: "t1", job_id: "j1", run_id: "j1-run", agent: "acme-reviewer" };
const target = { plugin: "acme_docs", tool: "acme_docs" };

function decisionOf(over: Partial<Decision>): Decision {
  return { id: "d1", input_id: "e1", processor: "loop-calls", tenant: "acme", tree_id: "t1", job_id: "j1", run_id: "j1-run", subject: "c1", verdict: "allow", reason_code: null, limit: null, numbers: {}, message: "", evidence: null, ts: 1, ...over };
}

function deliveredOf(content: string, is_error = false): ResultDelivered {
  return { id: "r1", input_id: "e2", processor: "fit-results", tenant: "acme", tree_id: "t1", job_id: "j1", run_id: "j1-run", call_id: "c1", plugin: "p", tool: "p", function: "f", is_error, content, truncated: false, fit: null, ts: 1 };
}

describe("the MCP gateway's pure half", () => {
  it("OFF-7 lists the server's tools with their input schemas untouched, without output schemas, and oz.read_result once, last", () => {
    const server: ListedTool[] = [
      { name: "read_text_file", inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }, outputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
      { name: "oz.read_result", inputSchema: { type: "object" } },
    ];
    const listed = listedTools(server);
    expect(listed.map((t) => t.name)).toEqual(["read_text_file", "oz.read_result"]);
    expect(listed[0]).toEqual({ name: "read_text_file", inputSchema: server[0]?.inputSchema, annotations: { readOnlyHint: true } });
    expect(listed[1]?.inputSchema).toMatchObject({ required: ["ref"] });
  });

  it("FILE-1 a request's _meta travels inside the arguments, without the gateway's progress token, and is split back out for the server", () => {
    const args = callArguments({ path: "a.md" }, { progressToken: 7, trace: "x" });
    expect(args).toEqual({ path: "a.md", _meta: { trace: "x" } });
    expect(callArguments({ path: "a.md" }, { progressToken: 7 })).toEqual({ path: "a.md" });
    expect(requestOf({ path: "a.md", _meta: { "oz0/files": { path: "/oz0/files/ab" } } })).toEqual({ arguments: { path: "a.md" }, _meta: { "oz0/files": { path: "/oz0/files/ab" } } });
    expect(requestOf({ path: "a.md", _meta: {} })).toEqual({ arguments: { path: "a.md" } });
  });

  it("a call names the manifest's plugin and tool and the server's function; its result keeps the call's IDs, inline or by ref", () => {
    const call = toolCallEvent(ctx, target, "get_page", { path: "a.md" }, 5);
    expect(call).toMatchObject({ tenant: "acme", tree_id: "t1", job_id: "j1", run_id: "j1-run", plugin: "acme_docs", tool: "acme_docs", function: "get_page", arguments: '{"path":"a.md"}', origin: "model", ts: 5 });
    const answer = { content: [{ type: "text", text: "hi" }], isError: true };
    const inline = toolResultEvent(call, answer, { content: JSON.stringify(answer), size: Buffer.byteLength(JSON.stringify(answer)) });
    expect(inline).toMatchObject({ call_id: call.call_id, is_error: true, content: JSON.stringify(answer), content_ref: null, size_bytes: JSON.stringify(answer).length });
    const byRef = toolResultEvent(call, { content: [] }, { ref: "oz0-file:sha256:ab", size: 900_000 });
    expect(byRef).toMatchObject({ is_error: false, content: null, content_ref: "oz0-file:sha256:ab", size_bytes: 900_000 });
    expect(byRef.id).not.toBe(call.id);
  });

  it("LOOP-6 stop and refuse give the pipeline's words as a tool error with the verdict in _meta", () => {
    const stop = refusedAnswer(decisionOf({ verdict: "stop", reason_code: "LoopDetected", message: "read_text_file was called 3 times with the same arguments: a loop." }));
    expect(stop).toEqual({
      content: [{ type: "text", text: "read_text_file was called 3 times with the same arguments: a loop." }],
      isError: true,
      _meta: { "oz0/decision": { verdict: "stop", reason_code: "LoopDetected", limit: null, processor: "loop-calls" } },
    });
    expect(refusedAnswer(decisionOf({ verdict: "refuse", reason_code: "KillSwitch" })).content[0]?.text).toContain("refuse, KillSwitch");
  });

  it("LOOP-5 a wait names its approval and how to answer it, and lasts until its deadline", () => {
    const wait = decisionOf({ verdict: "wait", message: "It waits for a person.", numbers: { deadline: 9_000 }, evidence: JSON.stringify({ approval: { id: "a-1", kind: "loop" } }) });
    expect(approvalOf(wait)).toBe("a-1");
    expect(waitingMessage(wait)).toBe("It waits for a person. Answer with: oz0 approval approve j1 a-1 (or deny).");
    expect(waitUntil(wait, 1_000, 50)).toBe(9_000);
    expect(waitUntil(decisionOf({ verdict: "wait" }), 1_000, 50)).toBe(1_050);
    expect(approvalOf(decisionOf({ evidence: "not json" }))).toBeNull();
  });

  it("OFF-1 a delivered result is the pipeline's CallToolResult, failed when it says so; text that is not JSON is a failed call naming the fault", () => {
    const fitted = { content: [{ type: "text", text: "{}" }], structuredContent: { content: "x", truncated: true }, _meta: { "oz0/fit": { view: "summary" } } };
    expect(deliveredAnswer(deliveredOf(JSON.stringify(fitted)))).toEqual(fitted);
    expect(deliveredAnswer(deliveredOf(JSON.stringify({ content: [{ type: "text", text: "too big" }] }), true))).toMatchObject({ isError: true });
    expect(deliveredAnswer(deliveredOf("{nope"))).toMatchObject({ isError: true, content: [{ type: "text", text: expect.stringContaining("not JSON") as string }] });
  });

  it("--listen takes [HOST:]PORT, loopback unless a host is named, and says what it expects otherwise", () => {
    expect(listenAddress("8930")).toEqual({ host: "127.0.0.1", port: 8930 });
    expect(listenAddress("0.0.0.0:8930")).toEqual({ host: "0.0.0.0", port: 8930 });
    expect(listenAddress("[::1]:8930")).toEqual({ host: "::1", port: 8930 });
    expect(() => listenAddress("127.0.0.1:http")).toThrow(/expected \[HOST:\]PORT/);
    expect(() => listenAddress("70000")).toThrow(/expected \[HOST:\]PORT/);
  });

  it("--listen has 10 s to stop once signalled, or OZ0_MCP_STOP_MS, a whole number above 0", () => {
    expect(stopWithinMs({})).toBe(10_000);
    expect(stopWithinMs({ OZ0_MCP_STOP_MS: " 2500 " })).toBe(2500);
    expect(() => stopWithinMs({ OZ0_MCP_STOP_MS: "0" })).toThrow(/OZ0_MCP_STOP_MS=0: expected a whole number of milliseconds above 0/);
    expect(() => stopWithinMs({ OZ0_MCP_STOP_MS: "soon" })).toThrow(/OZ0_MCP_STOP_MS=soon/);
  });

  it("the session's tool is the one named, else the manifest's only one; otherwise the error lists the tools", () => {
    const tool = (id: string) => ({ id, mcp: ["python", "-m", id], results: { fit: false }, functions: [] });
    const one: PluginManifest = { name: "docs", tools: [tool("docs")] };
    const two: PluginManifest = { name: "docs", tools: [tool("docs"), tool("search")] };
    expect(pickTool(one, undefined, "p.yaml").id).toBe("docs");
    expect(pickTool(two, "search", "p.yaml").id).toBe("search");
    expect(() => pickTool(two, undefined, "p.yaml")).toThrow(/2 tools \(docs, search\): name one with --tool/);
    expect(() => pickTool(two, "nope", "p.yaml")).toThrow(/no such tool; its tools are docs, search/);
  });
});
