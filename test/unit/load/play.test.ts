import { describe, expect, it } from "vitest";
import { makePlan, type Tree } from "../../../bench/load/mix.ts";
import { planWaits } from "../../../bench/load/pace.ts";
import { playAgents, playTree, Recorder, type LoadTarget } from "../../../bench/load/play.ts";
import { NoAnswer } from "../../../client/runtime-client.ts";
import type { Decision, JobEvent, ModelCall, ResultDelivered, ToolCall, ToolResult } from "../../../schemas/types.ts";

const corpus = ["# Title\n\nsome text of a document\nline two\n", "another document, longer ".repeat(200)];

function decision(input: string, verdict: Decision["verdict"]): Decision {
  return { id: `d-${input}`, input_id: input, processor: "fake", tenant: "t", tree_id: "t", job_id: "j", run_id: null, subject: input, verdict, reason_code: null, limit: null, numbers: {}, message: "", evidence: null, ts: 0 };
}

function delivered(input: string, content: string): ResultDelivered {
  return { id: `r-${input}`, input_id: input, processor: "fake", tenant: "t", tree_id: "t", job_id: "j", run_id: "r", call_id: "c", plugin: "p", tool: "p", function: "f", is_error: false, content, truncated: false, fit: null, ts: 0 };
}

interface Script {
  ask?: (a: ModelCall) => Decision["verdict"];
  child?: (e: JobEvent) => Decision["verdict"];
  call?: (c: ToolCall) => Decision["verdict"];
  /** Publishing job events takes this long, and admissions never come. */
  publishDelayMs?: number;
  /** A model call's admission comes this late; none comes when the await ends first. */
  askDelayMs?: number;
}

/** A target that answers as told and keeps what it was sent, in order. */
class ScriptedTarget implements LoadTarget {
  readonly sent: Array<{ kind: string; id: string; body?: string; at?: number }> = [];
  private readonly answer: Script;
  constructor(answer: Script = {}) {
    this.answer = answer;
  }
  askModelCall(ask: ModelCall, timeoutMs = 1_000): Promise<Decision> {
    this.sent.push({ kind: "model_ask", id: ask.id });
    const delay = this.answer.askDelayMs;
    if (delay !== undefined) {
      return new Promise((resolve, reject) => {
        if (delay < timeoutMs) setTimeout(() => resolve(decision(ask.id, "allow")), delay);
        else setTimeout(() => reject(new NoAnswer("admission", ask.id, timeoutMs)), timeoutMs);
      });
    }
    return Promise.resolve(decision(ask.id, this.answer.ask?.(ask) ?? "allow"));
  }
  askChild(ask: JobEvent): Promise<Decision> {
    this.sent.push({ kind: "child_ask", id: ask.id });
    return Promise.resolve(decision(ask.id, this.answer.child?.(ask) ?? "allow"));
  }
  requestToolCall(call: ToolCall): Promise<Decision> {
    this.sent.push({ kind: "tool_call", id: call.id });
    return Promise.resolve(decision(call.id, this.answer.call?.(call) ?? "allow"));
  }
  deliverToolResult(result: ToolResult): Promise<ResultDelivered> {
    this.sent.push({ kind: "tool_result", id: result.id, at: Date.now() });
    const big = (result.content ?? "").length > 4_000;
    const content = big ? JSON.stringify({ content: [{ type: "text", text: "stub" }], _meta: { "oz0/offload": { ref: `oz0-file:sha256:${"a".repeat(64)}`, size: result.size_bytes } } }) : (result.content ?? "");
    return Promise.resolve(delivered(result.id, content));
  }
  readResult(call: ToolCall): Promise<ResultDelivered> {
    this.sent.push({ kind: "read_result", id: call.id, body: call.arguments });
    return Promise.resolve(delivered(call.id, "{}"));
  }
  awaitAdmission(eventId: string, timeoutMs = 1_000): Promise<Decision> {
    return new Promise((resolve, reject) => {
      if (this.answer.publishDelayMs === undefined) resolve(decision(eventId, "allow"));
      else setTimeout(() => reject(new NoAnswer("admission", eventId, timeoutMs)), timeoutMs);
    });
  }
  async publishModelCalls(calls: readonly ModelCall[]): Promise<void> {
    for (const c of calls) this.sent.push({ kind: "model_usage", id: c.id });
    await Promise.resolve();
  }
  async publishJobEvents(events: readonly JobEvent[]): Promise<void> {
    if (this.answer.publishDelayMs !== undefined) await new Promise((r) => setTimeout(r, this.answer.publishDelayMs));
    for (const e of events) this.sent.push({ kind: e.kind, id: e.id, body: e.outcome ?? "" });
  }
}

function first(kind: Tree["kind"], seed = 1): Tree {
  for (let s = seed; s < seed + 200; s++) {
    const t = makePlan({ seed: s, events: 200, tag: "p", corpus }).trees.find((x) => x.kind === kind && (kind !== "delegator" || x.steps.filter((st) => st.kind === "child_ask").length === 3));
    if (t) return t;
  }
  throw new Error(`no ${kind} tree`);
}

describe("the load's runtimes", () => {
  it("SYS-6 end a job whose model call is stopped by its budget, and make no more calls for it", async () => {
    const tree = first("spender");
    let asks = 0;
    const target = new ScriptedTarget({ ask: () => (++asks === 2 ? "stop" : "allow") });
    const rec = new Recorder();
    expect(await playTree(tree, target, rec, { deadline: Date.now() + 10_000 })).toBe(true);
    const kinds = target.sent.map((s) => s.kind);
    expect(kinds.filter((k) => k === "model_ask")).toHaveLength(2);
    expect(kinds[kinds.length - 1]).toBe("ended");
    expect(target.sent[target.sent.length - 1]?.body).toBe("failed");
    expect(rec.outcomes.get("model_ask:stop")).toBe(1);
    expect(rec.events).toBe(target.sent.length);
  });

  it("SYS-6 start no child refused at its ask, and give a refused call no result", async () => {
    const tree = first("delegator");
    let children = 0;
    const target = new ScriptedTarget({ child: () => (++children === 3 ? "refuse" : "allow"), call: () => "refuse" });
    const rec = new Recorder();
    await playTree(tree, target, rec, { deadline: Date.now() + 10_000 });
    const refused = tree.steps.filter((s) => s.kind === "child_ask")[2]?.event.job_id;
    const startedJobs = tree.steps.filter((s) => s.kind === "job_started" && target.sent.some((x) => x.id === s.event.id)).map((s) => s.event.job_id);
    expect(startedJobs).not.toContain(refused);
    expect(startedJobs).toHaveLength(3);
    expect(target.sent.filter((s) => s.kind === "tool_result")).toHaveLength(0);
    expect(target.sent.filter((s) => s.kind === "tool_call").length).toBeGreaterThan(0);
  });

  it("SYS-6 read an offloaded result back at the ref its stub named", async () => {
    const tree = first("reader");
    const target = new ScriptedTarget();
    const rec = new Recorder();
    await playTree(tree, target, rec, { deadline: Date.now() + 10_000 });
    const reads = target.sent.filter((s) => s.kind === "read_result");
    expect(reads.length).toBeGreaterThan(1);
    for (const r of reads) expect(JSON.parse(r.body ?? "{}")).toMatchObject({ ref: `oz0-file:sha256:${"a".repeat(64)}` });
    expect(rec.offloaded).toBe(1);
    expect(rec.offloadedBytes).toBeGreaterThan(16_000);
  });

  it("SYS-6 count an answer that did not come by the deadline, even while its publish is still under way", async () => {
    const tree = first("delegator");
    const target = new ScriptedTarget({ publishDelayMs: 150 });
    const rec = new Recorder();
    // The child's start awaits its admission for 50 ms while its publish takes 150 ms.
    const played = await playTree(tree, target, rec, { deadline: Date.now() + 10_000, answerTimeoutMs: 50 });
    expect(played).toBe(false);
    expect(rec.unanswered.child).toBe(1);
    await new Promise((r) => setTimeout(r, 200));
  });

  it("SYS-6 count as unanswered only the runtime client's NoAnswer; any other failure, whatever its name, is an error of the run", async () => {
    const tree = first("pager");
    class Failing extends ScriptedTarget {
      override askModelCall(ask: ModelCall): Promise<Decision> {
        this.sent.push({ kind: "model_ask", id: ask.id });
        return Promise.reject(Object.assign(new Error(`the broker refused ${ask.id}`), { name: "NoAnswer" }));
      }
    }
    const rec = new Recorder();
    expect(await playTree(tree, new Failing(), rec, { deadline: Date.now() + 10_000 })).toBe(false);
    expect(rec.unanswered.model_ask).toBe(0);
    expect(rec.errors).toEqual([expect.stringMatching(/^the broker refused /)]);
  });

  it("SYS-6 wait as agents do before a usage and a result, and never count the wait in a latency", async () => {
    const tree = first("pager");
    const waits = new Map([[tree, tree.steps.map((st) => (st.kind === "model_usage" ? 60 : st.kind === "tool_result" ? 40 : 0))]]);
    const target = new ScriptedTarget();
    const rec = new Recorder();
    const started = Date.now();
    expect(await playTree(tree, target, rec, { deadline: Date.now() + 10_000, waits })).toBe(true);
    const pages = tree.steps.filter((st) => st.kind === "model_usage").length;
    expect(Date.now() - started).toBeGreaterThanOrEqual(pages * 100 - 5);
    // The scripted target answers at once: no latency holds any of the waits.
    for (const l of Object.values(rec.latencies).flat()) expect(l).toBeLessThan(30);
    expect(rec.latencies.tool_result).toHaveLength(pages);
  });

  it("SYS-6 skip the wait of a step not played: a refused call's result, a stopped job's usage", async () => {
    const tree = first("pager");
    const waits = new Map([[tree, tree.steps.map((st) => (st.kind === "tool_result" ? 5_000 : 0))]]);
    const target = new ScriptedTarget({ call: () => "refuse" });
    const rec = new Recorder();
    const started = Date.now();
    expect(await playTree(tree, target, rec, { deadline: Date.now() + 10_000, waits })).toBe(true);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(target.sent.filter((x) => x.kind === "tool_result")).toHaveLength(0);
  });

  it("SYS-6 stop an agent that is waiting when the time is up, at the deadline", async () => {
    const tree = first("pager");
    const waits = new Map([[tree, tree.steps.map((st) => (st.kind === "model_usage" ? 60_000 : 0))]]);
    const target = new ScriptedTarget();
    const rec = new Recorder();
    const started = Date.now();
    expect(await playTree(tree, target, rec, { deadline: started + 150, waits })).toBe(false);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(140);
    expect(took).toBeLessThan(1_000);
    expect(target.sent.map((x) => x.kind)).toEqual(["started", "model_ask"]);
    expect(rec.errors).toEqual([]);
  });

  it("SYS-6 start each agent at its own time, and each plays trees of the plan one after another", async () => {
    const plan = makePlan({ seed: 9, events: 400, tag: "a", corpus });
    const waits = planWaits(plan, { seed: 9, thinkScale: 0.0005 });
    const target = new ScriptedTarget();
    const rec = new Recorder();
    const started = Date.now();
    await playAgents(plan, target, rec, { deadline: started + 20_000, waits, starts: [100, 200, 300] });
    // Three agents played the whole plan, none before its start.
    expect(rec.treesDone).toBe(plan.trees.length);
    expect(rec.treesCut).toBe(0);
    expect(rec.events).toBe(plan.events);
    const firstAt = (rec.firstAt ?? 0) - started;
    expect(firstAt).toBeGreaterThanOrEqual(95);
    expect(firstAt).toBeLessThan(190);
    // An agent whose start comes after the deadline plays nothing.
    const late = new Recorder();
    await playAgents(plan, new ScriptedTarget(), late, { deadline: Date.now() + 50, waits, starts: [1_000] });
    expect(late.events).toBe(0);
  });

  it("SYS-6 give an answer asked for before the time is up its grace, so an agent stopped by the time is not counted unanswered", async () => {
    const tree = first("pager");
    const late = new Recorder();
    expect(await playTree(tree, new ScriptedTarget({ askDelayMs: 120 }), late, { deadline: Date.now() + 50 })).toBe(false);
    expect(late.unanswered.model_ask).toBe(1);
    const graced = new Recorder();
    expect(await playTree(tree, new ScriptedTarget({ askDelayMs: 120 }), graced, { deadline: Date.now() + 50, graceMs: 1_000 })).toBe(false);
    expect(graced.unanswered.model_ask).toBe(0);
    expect(graced.latencies.model_ask).toHaveLength(1);
    // No step starts after the deadline, grace or not.
    expect(graced.events).toBe(2);
  });
});

