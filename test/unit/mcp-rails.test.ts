/**
 * The rails `oz0 mcp` keeps itself: finish-only (LOOP-7, LIM-8's soft wall) withdraws
 * the server's tools, a dead-lettered input is answered at once (client/dead-letters.ts), and a
 * result carries its labels (OFF-9). The pure parts, and the gateway's handlers on fakes.
 */
import { describe, expect, it } from "vitest";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { answersOf, DEAD_LETTERED, deadLetterDecision, deadLetterDelivered, DeadLettered, originalEvent, originalSchema } from "../../client/dead-letters.ts";
import { deliveredAnswer, finishOnlyAnswer, finishOnlyOf, listedTools, noProgressOf, resultLabels, toolCallEvent, toolResultEvent, type ListedTool, type ToolAnswer } from "../../client/mcp/calls.ts";
import { McpGateway, type GatewayFiles } from "../../client/mcp/gateway.ts";
import { NoAnswer, type RuntimeClient } from "../../client/runtime-client.ts";
import { parsePlugin } from "../../config/plugin.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { DeadLetter, Decision, ResultDelivered, ToolCall, ToolResult } from "../../schemas/types.ts";
import { schemaViolations } from "../../schemas/catalog.ts";
import { errorsOf, valueOf } from "./config/helpers.ts";

const session = { tenant: "acme", tree_id: "t1", job_id: "j1", run_id: "j1-run", agent: "acme-reviewer" };
const target = { plugin: "docs", tool: "docs" };
const NO_PROGRESS = "No progress: the last 3 tool results added nothing new (empty, seen before, or the same error again). Every tool but the answer is withdrawn for the rest of this run: answer with what you have.";
const SOFT_WALL = "The job tree has spent 85% of its budget (spend.soft_wall): only the answer is left; report what you have.";

function decision(over: Partial<Decision>): Decision {
  return { id: "d1", input_id: "e1", processor: "loop-calls", tenant: "acme", tree_id: "t1", job_id: "j1", run_id: "j1-run", subject: "c1", verdict: "allow", reason_code: null, limit: null, numbers: {}, message: "", evidence: null, ts: 1, ...over };
}

function deadLetter(over: Partial<DeadLetter> = {}): DeadLetter {
  return { id: "dl-1", processor: "loop-calls", topic: "oz0.tool-calls.requested", partition: 2, offset: "41", key: null, value: Buffer.from("x"), reason: "Redis refused for good: WRONGTYPE Operation against a key holding the wrong kind of value on key oz0:loops:acme:run:calls", error: "failed", ts: 5, ...over };
}

describe("LOOP-7 LIM-8 finish-only in the gateway's pure half", () => {
  it("LOOP-7 a NoProgress refusal leaves only the answer for the run; LIM-8 a soft-wall report for the tree; other decisions do not", () => {
    expect(finishOnlyOf(decision({ verdict: "refuse", reason_code: "NoProgress", limit: "loops.no_progress", message: NO_PROGRESS }))).toEqual({ words: NO_PROGRESS, reason_code: "NoProgress", limit: "loops.no_progress", scope: "run" });
    expect(finishOnlyOf(decision({ processor: "limits-model-calls", verdict: "report", limit: "spend.soft_wall", message: SOFT_WALL }))).toMatchObject({ words: SOFT_WALL, scope: "tree" });
    expect(finishOnlyOf(decision({ verdict: "refuse", reason_code: "SoftWall", message: SOFT_WALL }))).toMatchObject({ reason_code: "SoftWall", scope: "tree" });
    // A refusal whose words say only the answer is left, whatever its code.
    expect(finishOnlyOf(decision({ verdict: "refuse", reason_code: "Other", message: "Only the answer is left." }))).toMatchObject({ scope: "run" });
    expect(finishOnlyOf(decision({ verdict: "refuse", reason_code: "KillSwitch", message: "switched off" }))).toBeNull();
    expect(finishOnlyOf(decision({ verdict: "report", limit: "spend.warn_share", message: "wrap up" }))).toBeNull();
    expect(finishOnlyOf(decision({ verdict: "stop", reason_code: "LoopDetected", message: "a loop" }))).toBeNull();
    expect(finishOnlyOf(decision({ verdict: "allow" }))).toBeNull();
  });

  it("LOOP-7 finish-only lists oz.read_result alone; a delivered result's no-progress words are read from its _meta", () => {
    const server: ListedTool[] = [{ name: "search", inputSchema: { type: "object" } }];
    expect(listedTools(server).map((t) => t.name)).toEqual(["search", "oz.read_result"]);
    expect(listedTools(server, true).map((t) => t.name)).toEqual(["oz.read_result"]);
    expect(noProgressOf({ content: [], _meta: { "oz0/no_progress": NO_PROGRESS } })).toMatchObject({ words: NO_PROGRESS, reason_code: "NoProgress" });
    expect(noProgressOf({ content: [], _meta: { "oz0/fit": {} } })).toBeNull();
    const refused = finishOnlyAnswer({ words: NO_PROGRESS, reason_code: "NoProgress", limit: "loops.no_progress", scope: "run" });
    expect(refused).toMatchObject({ isError: true, content: [{ type: "text", text: NO_PROGRESS }], _meta: { "oz0/decision": { verdict: "refuse", reason_code: "NoProgress" } } });
  });
});

describe("OFF-9 a result's labels in the gateway's pure half", () => {
  it("OFF-9 the manifest's labels and the result's _meta oz0/labels, each once, go on the published ToolResult", () => {
    const answer: ToolAnswer = { content: [{ type: "text", text: "salary" }], _meta: { "oz0/labels": ["payroll", "pii"] } };
    const got = resultLabels(["pii"], answer);
    expect(got).toEqual({ labels: ["pii", "payroll"] });
    const call = toolCallEvent(session, target, "get", {});
    const result = toolResultEvent(call, answer, { content: JSON.stringify(answer), size: 10 }, "labels" in got ? got.labels : []);
    expect(result.labels).toEqual(["pii", "payroll"]);
    expect(schemaViolations("ToolResult", result)).toEqual([]);
    expect(resultLabels([], { content: [] })).toEqual({ labels: [] });
    expect(resultLabels(["pii", "pii"], { content: [], _meta: { "oz0/labels": null } })).toEqual({ labels: ["pii"] });
  });

  it("OFF-9 a _meta oz0/labels that is not a list of names is an error, never read as no labels", () => {
    const errorOf = (meta: unknown): string => {
      const got = resultLabels([], { content: [], _meta: { "oz0/labels": meta } });
      return "error" in got ? got.error : "no error";
    };
    expect(errorOf("pii")).toContain('is "pii"; expected a list of label names');
    expect(errorOf(["pii", 3])).toContain("holds 3; expected a list of label names");
    expect(resultLabels([], { content: [], _meta: { "oz0/labels": [""] } })).toHaveProperty("error");
  });

  it("OFF-9 a manifest tool's labels: a list of names, each once", () => {
    const tool = (labels: string) => `name: hr\ntools:\n  - id: hr\n    mcp: ["hr-server"]\n    results: {fit: false}\n    labels: ${labels}\n`;
    expect(valueOf(parsePlugin(tool("[pii, payroll]"), "plugins/hr.yaml")).tools[0]?.labels).toEqual(["pii", "payroll"]);
    expect(valueOf(parsePlugin(tool("[]"), "plugins/hr.yaml")).tools[0]?.labels).toEqual([]);
    expect(valueOf(parsePlugin('name: hr\ntools:\n  - id: hr\n    mcp: ["hr-server"]\n', "plugins/hr.yaml")).tools[0]?.labels).toBeUndefined();
    const errors = errorsOf(parsePlugin(tool('[pii, pii, "no spaces"]'), "plugins/hr.yaml"));
    expect(errors.map((e) => e.message).join("\n")).toMatch(/"pii" is listed twice/);
    expect(errors.map((e) => e.message).join("\n")).toMatch(/"no spaces" is not a valid name/);
    expect(errorsOf(parsePlugin(tool("pii"), "plugins/hr.yaml")).map((e) => e.field)).toContain("tools[0].labels");
  });
});

describe("a dead-lettered input answered at once: the pure half", () => {
  const call: ToolCall = toolCallEvent(session, target, "search", { query: "x" });

  it("SYS-1 the original's schema comes from the topic it was read from; the answers it was awaited as, from what it is", () => {
    expect(originalSchema("oz0.tool-calls.requested")).toBe("ToolCall");
    expect(originalSchema("oz0.model-calls")).toBe("ModelCall");
    expect(originalSchema("bench.elsewhere")).toBeNull();
    expect(originalEvent({ id: "x" })).toBeNull();
    expect(originalEvent("not an event")).toBeNull();
    const e = originalEvent(call);
    expect(e).not.toBeNull();
    if (e === null) return;
    expect(answersOf("oz0.tool-calls.requested", e)).toEqual(["callDecision", "decidedCall"]);
    expect(answersOf("oz0.tool-calls.requested", { ...e, plugin: "oz", tool: "oz", function: "read_result" })).toEqual(["delivered"]);
    expect(answersOf("oz0.tool-results", e)).toEqual(["delivered"]);
    expect(answersOf("oz0.model-calls", { ...e, kind: "ask" })).toEqual(["admission"]);
    expect(answersOf("oz0.model-calls", { ...e, kind: "usage" })).toEqual([]);
    expect(answersOf("oz0.jobs", { ...e, kind: "child_ask" })).toEqual(["admission"]);
    expect(answersOf("oz0.jobs", { ...e, kind: "ended" })).toEqual([]);
    expect(answersOf("oz0.call-decisions", e)).toEqual([]);
  });

  it("SYS-1 a dead-lettered call is refused with the dead letter's reason; a result reads as a failed call; both fit their schemas", () => {
    const dl = deadLetter();
    const e = originalEvent(call);
    if (e === null) throw new Error("the call is an event");
    const d = deadLetterDecision(dl, e);
    expect(d).toMatchObject({ input_id: call.id, subject: call.call_id, run_id: call.run_id, verdict: "refuse", reason_code: DEAD_LETTERED });
    expect(d.message).toContain("could not decide this tool call");
    expect(d.message).toContain("WRONGTYPE Operation against a key");
    expect(d.message).toContain("oz0.dead-letter (dl-1)");
    expect(JSON.parse(d.evidence ?? "{}")).toMatchObject({ dead_letter: { id: "dl-1", processor: "loop-calls", partition: 2, offset: "41" } });
    expect(schemaViolations("Decision", d)).toEqual([]);

    const delivered: ResultDelivered = deadLetterDelivered({ ...dl, topic: "oz0.tool-results" }, e);
    expect(schemaViolations("ResultDelivered", delivered)).toEqual([]);
    const read = deliveredAnswer(delivered);
    expect(read.isError).toBe(true);
    expect(read.content[0]?.text).toContain("could not decide this tool result");
    expect(read._meta?.["oz0/decision"]).toMatchObject({ verdict: "refuse", reason_code: DEAD_LETTERED });
    expect(new DeadLettered(dl, e).message).toBe(d.message);
  });
});

/** The gateway on fakes: a runtime whose decisions and deliveries the test gives, and a server that counts its calls. */
function setup(answer: (call: ToolCall) => Decision, deliver: (r: ToolResult) => ToolAnswer = (r) => JSON.parse(r.content ?? "{}") as ToolAnswer, labels?: string[]) {
  const callListeners = new Set<(d: Decision) => void>();
  const admissionListeners = new Set<(d: Decision) => void>();
  const published: ToolResult[] = [];
  const served: string[] = [];
  let changed = 0;
  const runtime = {
    onCallDecision: (f: (d: Decision) => void) => (callListeners.add(f), () => callListeners.delete(f)),
    onAdmission: (f: (d: Decision) => void) => (admissionListeners.add(f), () => admissionListeners.delete(f)),
    awaitDecidedCall: (id: string) => (last ? Promise.resolve(last) : Promise.reject(new NoAnswer("decidedCall", id, 5))),
    requestToolCall: (call: ToolCall) => {
      last = call;
      return Promise.resolve(answer(call));
    },
    deliverToolResult: (r: ToolResult) => {
      published.push(r);
      const d: ResultDelivered = { id: `r-${r.id}`, input_id: r.id, processor: "fit-results", tenant: r.tenant, tree_id: r.tree_id, job_id: r.job_id, run_id: r.run_id, call_id: r.call_id, plugin: r.plugin, tool: r.tool, function: r.function, is_error: r.is_error, content: JSON.stringify(deliver(r)), truncated: false, fit: null, ts: 1 };
      return Promise.resolve(d);
    },
  };
  let last: ToolCall | undefined;
  const upstream = {
    listTools: () => Promise.resolve({ tools: [{ name: "search", inputSchema: { type: "object" } }] }),
    callTool: (p: { name: string }) => {
      served.push(p.name);
      return Promise.resolve({ content: [{ type: "text", text: "hits" }], _meta: { "oz0/labels": ["pii"] } });
    },
    setNotificationHandler: () => undefined,
  };
  const files: GatewayFiles = { store: () => Promise.reject(new Error("not stored")), read: () => Promise.reject(new Error("not read")), reader: (tenant, tree) => Promise.resolve({ tenant, tree }) };
  const gateway = new McpGateway({ runtime: runtime as unknown as RuntimeClient, upstream: upstream as unknown as Client, files, session, target, log: createLogger({}, () => {}), settings: { filesDir: "/nonexistent" }, ...(labels ? { labels } : {}) });
  const server = { setRequestHandler: () => undefined, sendToolListChanged: () => ((changed += 1), Promise.resolve()) };
  gateway.attach(server as unknown as Server);
  const extra = { signal: new AbortController().signal, sendNotification: () => Promise.resolve() };
  return {
    gateway,
    published,
    served,
    changed: () => changed,
    admit: (d: Decision) => admissionListeners.forEach((f) => f(d)),
    call: (name: string) => gateway.call(name, {}, undefined, extra),
  };
}

describe("LOOP-7 LIM-8 OFF-9 the gateway's handlers on fakes", () => {
  it("LOOP-7 a result delivered with the no-progress words withdraws the server's tools once, with list_changed; a later call reads the words and the server never sees it, even if allowed", async () => {
    const s = setup(
      (call) => decision({ input_id: call.id, subject: call.call_id, verdict: "allow" }),
      (r) => ({ ...(JSON.parse(r.content ?? "{}") as ToolAnswer), _meta: { "oz0/no_progress": NO_PROGRESS } }),
    );
    expect((await s.gateway.tools()).map((t) => t.name)).toEqual(["search", "oz.read_result"]);
    await s.call("search");
    expect(s.changed()).toBe(1);
    expect((await s.gateway.tools()).map((t) => t.name)).toEqual(["oz.read_result"]);
    const again = await s.call("search");
    expect(again).toMatchObject({ isError: true, content: [{ text: NO_PROGRESS }] });
    expect(s.served).toEqual(["search"]);
    expect(s.changed()).toBe(1);
  });

  it("LOOP-7 a NoProgress refusal withdraws the tools and reads the pipeline's words", async () => {
    const s = setup((call) => decision({ input_id: call.id, subject: call.call_id, verdict: "refuse", reason_code: "NoProgress", limit: "loops.no_progress", message: NO_PROGRESS }));
    const refused = await s.call("search");
    expect(refused).toMatchObject({ isError: true, content: [{ text: NO_PROGRESS }], _meta: { "oz0/decision": { reason_code: "NoProgress" } } });
    expect(s.changed()).toBe(1);
    expect(s.served).toEqual([]);
  });

  it("LIM-8 the soft wall reported for the session's tree withdraws the tools; one for another tree does not", async () => {
    const s = setup((call) => decision({ input_id: call.id, subject: call.call_id, verdict: "allow" }));
    s.admit(decision({ processor: "limits-model-calls", tree_id: "another", verdict: "report", limit: "spend.soft_wall", message: SOFT_WALL }));
    expect(s.changed()).toBe(0);
    s.admit(decision({ processor: "limits-model-calls", job_id: "a-child", run_id: "child-run", verdict: "report", limit: "spend.soft_wall", message: SOFT_WALL }));
    expect(s.changed()).toBe(1);
    expect((await s.gateway.tools()).map((t) => t.name)).toEqual(["oz.read_result"]);
    expect(await s.call("search")).toMatchObject({ isError: true, content: [{ text: SOFT_WALL }] });
    expect(s.served).toEqual([]);
  });

  it("OFF-9 the published result carries the manifest's labels and the result's own", async () => {
    const s = setup((call) => decision({ input_id: call.id, subject: call.call_id, verdict: "allow" }), undefined, ["hr"]);
    await s.call("search");
    expect(s.published[0]?.labels).toEqual(["hr", "pii"]);
  });

  it("SYS-1 a dead-lettered call's refusal reads as the tool error, without waiting for the call as decided", async () => {
    const s = setup((call) => {
      const e = originalEvent(call);
      if (e === null) throw new Error("an event");
      return deadLetterDecision(deadLetter(), e);
    });
    const answer = await s.call("search");
    expect(answer.isError).toBe(true);
    expect(answer.content[0]?.text).toContain("could not decide this tool call");
    expect(answer.content[0]?.text).toContain("WRONGTYPE");
    expect(s.served).toEqual([]);
    expect(s.changed()).toBe(0);
  });
});
