import { beforeEach, describe, expect, it } from "vitest";
import type { Decision, ToolCall, ToolResult, TraceEntry } from "../../../schemas/types.ts";
import { loopCallsProcessor, type LoopEnv } from "../../../processors/loops/calls-processor.ts";
import { MemoryLoopStore, runKey } from "../../../processors/loops/memory-store.ts";
import { loopResultsProcessor } from "../../../processors/loops/results-processor.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import type { InputRecord } from "../../../processors/runner/processor.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import { toolCall, uid } from "../../support/events.ts";
import { EMPTY_RESULT, toolResult } from "../../support/loop-events.ts";

let store: MemoryLoopStore;
let config: ReturnType<typeof staticConfig>;
let env: LoopEnv;
let calls: TestDriver<ToolCall, LoopEnv>;
let results: TestDriver<ToolResult, LoopEnv>;
let run: string;

beforeEach(() => {
  store = new MemoryLoopStore();
  config = staticConfig([
    { kind: "agent", id: "stopper", value: { on_loop: "stop" } },
    { kind: "agent", id: "reporter", value: { on_loop: "report", loops: { repeats: 4 } } },
    { kind: "tenant", id: "strict", value: { on_loop: "stop", loops: {} } },
    { kind: "tenant", id: "quick", value: { loop_deadline: 60_000, loops: { no_progress: 3 } } },
  ]);
  env = { config, store };
  calls = new TestDriver(loopCallsProcessor, env);
  results = new TestDriver(loopResultsProcessor, env);
  run = uid("run");
});

const call = (over: Partial<ToolCall> = {}) => toolCall({ run_id: run, ts: Date.UTC(2026, 10, 30, 12), ...over });
const read = (path: string, over: Partial<ToolCall> = {}) => call({ function: "get_page", arguments: JSON.stringify({ path }), ...over });
const search = (q: string, over: Partial<ToolCall> = {}) => call({ function: "search", arguments: JSON.stringify({ q }), ...over });

async function decide(...cs: ToolCall[]): Promise<Decision[]> {
  const { emits } = await calls.pipe(cs, { key: run });
  expect(calls.deadLetters).toEqual([]);
  return emits.filter((e) => e.to === "oz0.call-decisions").map((e) => e.value as Decision);
}

const verdicts = (ds: Decision[]) => ds.map((d) => d.verdict);

describe("loop-calls decides each call before it is made", () => {
  it("LOOP-2 allows every call of a paging agent", async () => {
    const ds = await decide(...Array.from({ length: 12 }, (_, i) => call({ function: "get_page", arguments: JSON.stringify({ path: "a.md", page: i }) })));
    expect(verdicts(ds)).toEqual(Array<string>(12).fill("allow"));
  });

  it("LOOP-5 the call that completes a repeat waits for a person, with the detector, the calls and the repeated arguments", async () => {
    const ds = await decide(read("a.md"), read("b.md"), call({ function: "get_page", arguments: '{ "path" : "a.md" }' }), read("a.md"));
    expect(verdicts(ds)).toEqual(["allow", "allow", "allow", "wait"]);
    const wait = ds[3] as Decision;
    expect(wait).toMatchObject({ reason_code: "LoopDetected", limit: "loops.repeats", numbers: { count: 3, threshold: 3 }, processor: "loop-calls" });
    const evidence = JSON.parse(wait.evidence ?? "null") as { detector: string; calls: Array<{ function: string }>; arguments: unknown; approval: { id: string; kind: string } };
    expect(evidence.detector).toBe("repeats");
    expect(evidence.calls.map((c) => c.function)).toEqual(Array<string>(3).fill("acme_docs/acme_docs/get_page"));
    expect(evidence.arguments).toEqual({ path: "a.md" });
    expect(evidence.approval.kind).toBe("loop");
    expect(wait.message).toContain(evidence.approval.id);
    expect([...store.deadlines.values()]).toEqual([expect.objectContaining({ approval: evidence.approval.id, run_id: run, call_id: ds[3]?.subject, at: (ds[3] as Decision).ts + 24 * 3600_000 })]);
  });

  it("LOOP-5 the deadline is the tenant's loop_deadline", async () => {
    const ds = await decide(...[1, 2, 3].map(() => read("a.md", { tenant: "quick" })));
    expect(ds[2]?.numbers.deadline).toBe((ds[2] as Decision).ts + 60_000);
  });

  it("LOOP-3 search, read, search, read waits as a cycle", async () => {
    const ds = await decide(search("q"), read("a.md"), search("q"), read("a.md"));
    expect(verdicts(ds)).toEqual(["allow", "allow", "allow", "wait"]);
    expect(ds[3]?.limit).toBe("loops.cycles");
    expect(JSON.parse(ds[3]?.evidence ?? "null")).toMatchObject({ detector: "cycles", count: 2 });
  });

  it("LOOP-5 while a loop waits every call of the run waits; once approved the counters start again and the call goes", async () => {
    const first = await decide(read("a.md"), read("a.md"), read("a.md"), search("other"));
    expect(verdicts(first)).toEqual(["allow", "allow", "wait", "wait"]);
    const approval = (JSON.parse(first[2]?.evidence ?? "null") as { approval: { id: string } }).approval.id;
    store.flags.set(runKey({ tenant: "acme", run }), new Map([[`approved:${approval}`, "1"]]));
    const after = await decide(read("a.md"), read("a.md"), read("a.md"));
    expect(verdicts(after)).toEqual(["allow", "allow", "wait"]);
    expect(after[2]?.evidence).not.toContain(approval);
  });

  it("LOOP-6 on_loop stop ends the job with LoopDetected and the evidence; later calls are stopped too", async () => {
    const ds = await decide(...[1, 2, 3, 4].map(() => read("a.md", { agent: "stopper" })), search("x", { agent: "stopper" }));
    expect(verdicts(ds)).toEqual(["allow", "allow", "stop", "stop", "stop"]);
    expect(ds[2]).toMatchObject({ reason_code: "LoopDetected", limit: "loops.repeats" });
    expect(JSON.parse(ds[2]?.evidence ?? "null")).toMatchObject({ detector: "repeats", arguments: { path: "a.md" } });
    expect(ds[4]?.message).toBe(ds[2]?.message);
  });

  it("LOOP-6 on_loop report lets the job go on and the trace shows a possible_loop finding, never content", async () => {
    const ds = await decide(...[1, 2, 3, 4, 5].map(() => read("secret.md", { agent: "reporter" })));
    expect(verdicts(ds)).toEqual(["allow", "allow", "allow", "report", "allow"]);
    const [trace] = calls.read<TraceEntry>("oz0.trace");
    expect(trace).toMatchObject({ section: "Loop findings", facts: { finding: "possible_loop", detector: "repeats" }, numbers: { count: 4, threshold: 4 } });
    expect(JSON.stringify(trace)).not.toContain("secret.md");
  });

  it("LOOP-8 a harness session's repeat in a row is reported by default", async () => {
    const ds = await decide(...[1, 2, 3].map(() => call({ origin: "harness", plugin: "shell", tool: "shell", function: "run", arguments: '{"cmd":"npm test"}' })));
    expect(verdicts(ds)).toEqual(["allow", "allow", "report"]);
    expect(JSON.parse(ds[2]?.evidence ?? "null")).toMatchObject({ detector: "harness_repeats" });
  });

  it("LOOP-8 a harness session's edit, test, edit, test is no loop", async () => {
    const h = (fn: string, args: object) => call({ origin: "harness", plugin: "shell", tool: "shell", function: fn, arguments: JSON.stringify(args) });
    const ds = await decide(...Array.from({ length: 8 }, (_, i) => [h("edit", { file: "a.ts", n: i % 2 }), h("run", { cmd: "npm test" })]).flat());
    expect(verdicts(ds).every((v) => v === "allow")).toBe(true);
  });

  it("LOOP-8 the tenant's on_loop wins over report for a harness session", async () => {
    const ds = await decide(...[1, 2, 3].map(() => call({ tenant: "strict", origin: "harness", function: "run", arguments: '{"cmd":"make"}' })));
    expect(verdicts(ds)).toEqual(["allow", "allow", "stop"]);
  });

  it("LOOP-1 a person's calls by hand are not watched", async () => {
    expect(verdicts(await decide(...[1, 2, 3, 4].map(() => read("a.md", { origin: "person" }))))).toEqual(["allow", "allow", "allow", "allow"]);
  });

  it("LOOP-1 a call whose arguments are not a JSON object goes to the dead letters with the reason", async () => {
    await calls.pipe([call({ arguments: "[1]" })]);
    expect(calls.deadLetters.map((d) => d.reason)).toEqual([expect.stringMatching(/JSON object/)]);
  });
});

describe("loop-results watches results after the call", () => {
  async function answer(c: ToolCall, over: Parameters<typeof toolResult>[1] = {}) {
    await decide(c);
    await results.pipe(toolResult(c, over), { key: run });
    expect(results.deadLetters).toEqual([]);
  }

  it("LOOP-7 five empty results leave only the answer: the fifth says why, and later calls are refused with the same words", async () => {
    for (let i = 0; i < 5; i++) await answer(search(`q${i}`), { content: EMPTY_RESULT });
    const [refused] = results.read<Decision>("oz0.call-decisions");
    expect(refused).toMatchObject({ verdict: "refuse", reason_code: "NoProgress", limit: "loops.no_progress", numbers: { results: 5, threshold: 5 } });
    expect(refused?.message).toMatch(/Every tool but the answer is withdrawn/);
    const later = await decide(search("fresh"), call({ plugin: "oz0", tool: "oz0", function: "answer", arguments: '{"text":"done"}' }), call({ plugin: "oz0", tool: "oz0", function: "output", arguments: "{}" }));
    expect(verdicts(later)).toEqual(["refuse", "allow", "allow"]);
    expect(later[0]?.message).toBe(refused?.message);
    expect(store.counts.get("2026-11-30|acme|acme_docs|acme_docs")).toBe(1);
  });

  it("LOOP-7 every result goes on to fit-results as it came; the one that crossed the line carries the words the decision says", async () => {
    const cs = Array.from({ length: 5 }, (_, i) => search(`q${i}`));
    for (const c of cs) await answer(c, { content: EMPTY_RESULT });
    const forwarded = results.read<ToolResult>("oz0.tool-results.watched");
    expect(forwarded.map((r) => r.call_id)).toEqual(cs.map((c) => c.call_id));
    expect(forwarded.slice(0, 4).map((r) => r.no_progress)).toEqual([null, null, null, null]);
    const [refused] = results.read<Decision>("oz0.call-decisions");
    expect(forwarded[4]?.no_progress).toBe(refused?.message);
    // Apart from the words, each is the result as the runtime published it.
    const { no_progress: _w, ...rest } = forwarded[4] as ToolResult;
    expect(rest.content).toBe(EMPTY_RESULT);
    // A result the detector does not watch (read_result's own) and one past the line go on without words.
    await answer(call({ plugin: "oz0", tool: "oz0", function: "read_result", arguments: '{"ref":"x"}' }), { content: EMPTY_RESULT });
    expect(results.read<ToolResult>("oz0.tool-results.watched").slice(5).map((r) => r.no_progress)).toEqual([null]);
  });

  it("LOOP-4 the same error five times crosses the line at the tenant's no_progress", async () => {
    for (let i = 0; i < 4; i++) await answer(search(`q${i}`, { tenant: "quick" }), { is_error: true, text: "503 upstream down" });
    expect(verdicts(results.read<Decision>("oz0.call-decisions"))).toEqual(["refuse"]);
  });

  it("LOOP-4 results that each add something never cross", async () => {
    for (let i = 0; i < 12; i++) await answer(read(`p${i}.md`));
    expect(results.read("oz0.call-decisions")).toEqual([]);
  });

  it("LOOP-7 a harness session's further calls are refused with the same words", async () => {
    const h = (n: number) => call({ origin: "harness", function: "run", arguments: JSON.stringify({ cmd: `ls ${n}` }) });
    for (let i = 0; i < 5; i++) await answer(h(i), { content: EMPTY_RESULT });
    expect(verdicts(await decide(h(99)))).toEqual(["refuse"]);
  });
});

describe("loop state is idempotent by input offset", () => {
  function records(cs: ToolCall[]): InputRecord<ToolCall>[] {
    return cs.map((value, i) => ({ topic: "oz0.tool-calls", partition: 3, offset: String(100 + i), key: run, value, timestamp: "0" }));
  }

  it("LOOP-2 replaying the same offsets emits the same decisions and changes no state", async () => {
    const values = [read("a.md"), read("a.md"), search("x"), read("a.md"), read("b.md"), read("c.md")];
    const batch = records(values.slice(0, 5));
    const first = await loopCallsProcessor.process(batch, env);
    const state = structuredClone([...store.lanes.entries()]);
    const again = await loopCallsProcessor.process(batch, env);
    expect(again).toEqual(first);
    expect([...store.lanes.entries()]).toEqual(state);
    // A retried batch may be cut differently: a prefix replayed with new records behind it.
    const longer = records(values);
    const third = await loopCallsProcessor.process(longer, env);
    expect(third.slice(0, 5)).toEqual(first);
    expect(third[5]).toMatchObject({ emits: [{ value: { verdict: "wait" } }] });
  });

  it("LOOP-6 a call that stops a job, and the calls refused after it, are remembered by the loop and the words, and replayed the same", async () => {
    const stopped = records([1, 2, 3, 4, 5].map((page) => read("a.md", { agent: "stopper", arguments: JSON.stringify({ path: page > 3 ? `p${page}` : "a.md" }) })));
    const first = await loopCallsProcessor.process(stopped, env);
    const decisions = first.map((o) => ("emits" in o ? (o.emits[0]?.value as Decision) : null));
    expect(decisions.map((d) => d?.verdict)).toEqual(["allow", "allow", "stop", "stop", "stop"]);
    const memo = (offset: number): unknown => JSON.parse(store.lanes.get(`calls|${runKey({ tenant: "acme", run })}`)?.get(`memo:oz0.tool-calls:3:${offset}`) ?? "null");
    // The loop as found (a repeat: its calls are the call itself), and the words of the refusals after it.
    expect(memo(102)).toEqual({ recall: { acted: { detector: "repeats", count: 3, threshold: 3, on_loop: "stop" } } });
    expect(memo(103)).toEqual({ recall: { stopped: decisions[3]?.message } });
    expect(await loopCallsProcessor.process(stopped, env)).toEqual(first);
  });

  it("LOOP-5 a call that waits for a person, and the calls held behind it, are replayed the same from what was remembered", async () => {
    const held = records([read("a.md"), search("x"), read("a.md"), search("x"), read("a.md"), read("b.md")]);
    const waits = await loopCallsProcessor.process(held, env);
    const decisions = waits.map((o) => ("emits" in o ? (o.emits[0]?.value as Decision) : null));
    expect(decisions.map((d) => d?.verdict)).toEqual(["allow", "allow", "allow", "wait", "wait", "wait"]);
    const memo = (offset: number): { recall?: { acted?: { detector: string; calls?: string[]; deadline?: number }; held?: string } } =>
      JSON.parse(store.lanes.get(`calls|${runKey({ tenant: "acme", run })}`)?.get(`memo:oz0.tool-calls:3:${offset}`) ?? "{}") as never;
    // A cycle keeps its calls; the wait keeps its deadline.
    expect(memo(103).recall?.acted).toMatchObject({ detector: "cycles", deadline: decisions[3]?.numbers.deadline });
    expect(memo(103).recall?.acted?.calls).toHaveLength(4);
    expect(memo(104).recall?.held).toMatch(/\S/);
    expect(await loopCallsProcessor.process(held, env)).toEqual(waits);
  });

  it("LOOP-7 a replayed batch passes the same results on, the crossing one with the same words, from a recall of a few numbers", async () => {
    const batch = Array.from({ length: 6 }, (_, i) => search(`q${i}`)).map((c, i): InputRecord<ToolResult> => ({ topic: "oz0.tool-results", partition: 3, offset: String(200 + i), key: run, value: toolResult(c, { content: EMPTY_RESULT }), timestamp: "0" }));
    const first = await loopResultsProcessor.process(batch, env);
    const words = first.map((o) => ("emits" in o ? (o.emits.find((e) => e.to === "oz0.tool-results.watched")?.value as ToolResult).no_progress : "invalid"));
    expect(words.map((w) => w === null)).toEqual([true, true, true, true, false, true]);
    const memo = JSON.parse(store.lanes.get(`results|${runKey({ tenant: "acme", run })}`)?.get("memo:oz0.tool-results:3:204") ?? "null") as { recall?: { results: number; threshold: number; last: unknown } };
    expect(memo.recall).toMatchObject({ results: 5, threshold: 5 });
    expect(Object.keys(memo)).toEqual(["recall"]);
    expect(await loopResultsProcessor.process(batch, env)).toEqual(first);
  });

  it("LOOP-9 a replayed loop is counted once", async () => {
    const batch = records([1, 2, 3].map(() => read("a.md", { agent: "stopper" })));
    await loopCallsProcessor.process(batch, env);
    await loopCallsProcessor.process(batch, env);
    expect([...store.counts]).toEqual([["2026-11-30|acme|acme_docs|acme_docs", 1]]);
  });
});
