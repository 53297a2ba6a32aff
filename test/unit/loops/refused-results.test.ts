import { beforeEach, describe, expect, it } from "vitest";
import { loopApprovalsProcessor } from "../../../processors/loops/approvals-processor.ts";
import { loopCallsProcessor, type LoopEnv } from "../../../processors/loops/calls-processor.ts";
import { MemoryLoopStore, runKey } from "../../../processors/loops/memory-store.ts";
import { loopResultsProcessor } from "../../../processors/loops/results-processor.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import type { Emit } from "../../../processors/runner/processor.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { Decision, ResultDelivered, ToolCall } from "../../../schemas/types.ts";
import { toolCall, uid } from "../../support/events.ts";
import { EMPTY_RESULT, toolResult } from "../../support/loop-events.ts";

const T0 = Date.UTC(2026, 10, 30, 12);
let env: LoopEnv;
let calls: TestDriver<ToolCall, LoopEnv>;
let run: string;

beforeEach(() => {
  env = { config: staticConfig([{ kind: "agent", id: "stopper", value: { on_loop: "stop" } }]), store: new MemoryLoopStore() };
  calls = new TestDriver(loopCallsProcessor, env);
  run = uid("run");
});

const call = (over: Partial<ToolCall> = {}) => toolCall({ run_id: run, ts: T0, ...over });
const of = <T>(emits: readonly Emit[], to: Emit["to"]) => emits.filter((e) => e.to === to).map((e) => e.value as T);
/** The text the model reads from a delivered result. */
const words = (r: ResultDelivered | undefined) => (JSON.parse(r?.content ?? "null") as { content: Array<{ text: string }> }).content[0]?.text;

describe("LOOP-7 the words of a refusal reach what the model reads", () => {
  it("LOOP-7 after no progress every later call but the answer gets a failed result with the same words, as fit-results delivers results", async () => {
    const results = new TestDriver(loopResultsProcessor, env);
    const searches = Array.from({ length: 5 }, (_, i) => call({ function: "search", arguments: JSON.stringify({ q: i }) }));
    await calls.pipe(searches, { key: run });
    const crossed = of<Decision>((await results.pipe(searches.map((c) => toolResult(c, { content: EMPTY_RESULT })), { key: run })).emits, "oz0.call-decisions");
    expect(crossed).toEqual([expect.objectContaining({ verdict: "refuse", reason_code: "NoProgress" })]);

    const later = [call({ function: "search", arguments: '{"q":"new"}' }), call({ plugin: "oz0", tool: "oz0", function: "answer", arguments: '{"text":"done"}' }), call({ function: "get_page", origin: "harness" })];
    const { emits } = await calls.pipe(later, { key: run });
    expect(of<Decision>(emits, "oz0.call-decisions").map((d) => d.verdict)).toEqual(["refuse", "allow", "refuse"]);
    const delivered = of<ResultDelivered>(emits, "oz0.results-delivered");
    expect(delivered.map((r) => r.call_id)).toEqual([later[0]?.call_id, later[2]?.call_id]);
    for (const r of delivered) {
      expect(r).toMatchObject({ processor: "loop-calls", is_error: true, truncated: false, fit: null, run_id: run, plugin: "acme_docs", tool: "acme_docs" });
      expect(words(r)).toBe(crossed[0]?.message);
    }
    expect(delivered[0]?.function).toBe("search");
    expect(JSON.parse(delivered[0]?.content ?? "null")).toMatchObject({ isError: true });
  });

  it("LOOP-6 on_loop stop: the call that completes the loop and every later call get a failed result with the LoopDetected words", async () => {
    const { emits } = await calls.pipe([1, 2, 3, 4].map((i) => call({ agent: "stopper", arguments: i === 4 ? '{"path":"b.md"}' : '{"path":"a.md"}' })), { key: run });
    const decisions = of<Decision>(emits, "oz0.call-decisions");
    expect(decisions.map((d) => d.verdict)).toEqual(["allow", "allow", "stop", "stop"]);
    const delivered = of<ResultDelivered>(emits, "oz0.results-delivered");
    expect(delivered.map((r) => r.call_id)).toEqual([decisions[2]?.subject, decisions[3]?.subject]);
    expect(delivered.map(words)).toEqual([decisions[2]?.message, decisions[2]?.message]);
  });

  it("LOOP-6 a stopped job's calls are refused batch after batch, and its run keeps the memos of its last batch only", async () => {
    const store = env.store as MemoryLoopStore;
    const first = [1, 2, 3].map(() => call({ agent: "stopper", arguments: '{"path":"a.md"}' }));
    expect(of<Decision>((await calls.pipe(first, { key: run })).emits, "oz0.call-decisions").map((d) => d.verdict)).toEqual(["allow", "allow", "stop"]);
    const memos = (): string[] => [...(store.lanes.get(`calls|${runKey({ tenant: first[0]?.tenant ?? "", run })}`)?.keys() ?? [])].filter((f) => f.startsWith("memo:")).sort();
    expect(memos()).toEqual(["memo:oz0.tool-calls:0:2"]);
    for (let batch = 0; batch < 3; batch++) {
      const later = [1, 2].map((i) => call({ agent: "stopper", arguments: JSON.stringify({ path: `b${batch}-${i}.md` }) }));
      const { emits } = await calls.pipe(later, { key: run });
      expect(of<Decision>(emits, "oz0.call-decisions").map((d) => d.verdict)).toEqual(["stop", "stop"]);
      // Offsets before this batch's first were committed: their memos went.
      const base = 3 + 2 * batch;
      expect(memos()).toEqual([`memo:oz0.tool-calls:0:${base}`, `memo:oz0.tool-calls:0:${base + 1}`]);
    }
  });

  it("LOOP-6 a batch tried input by input after a failure keeps every memo of the batch: only offsets before the batch's start were committed", async () => {
    let fail = true;
    class FailingOnce extends MemoryLoopStore {
      override write(...args: Parameters<MemoryLoopStore["write"]>): Promise<void> {
        if (fail) {
          fail = false;
          return Promise.reject(new Error("write refused once"));
        }
        return super.write(...args);
      }
    }
    const store = new FailingOnce();
    const driver = new TestDriver(loopCallsProcessor, { ...env, store });
    const batch = [1, 2, 3, 4].map((i) => call({ agent: "stopper", arguments: i <= 3 ? '{"path":"a.md"}' : '{"path":"b.md"}' }));
    const { emits } = await driver.pipe(batch, { key: run });
    expect(of<Decision>(emits, "oz0.call-decisions").map((d) => d.verdict)).toEqual(["allow", "allow", "stop", "stop"]);
    const lane = store.lanes.get(`calls|${runKey({ tenant: batch[0]?.tenant ?? "", run })}`);
    expect([...(lane?.keys() ?? [])].filter((f) => f.startsWith("memo:")).sort()).toEqual(["memo:oz0.tool-calls:0:2", "memo:oz0.tool-calls:0:3"]);
  });

  it("LOOP-5 a denied loop: the held call gets a failed result naming its function; a call that waits gets none yet", async () => {
    const answers = new TestDriver(loopApprovalsProcessor, env);
    const held = call({ function: "get_page", arguments: '{"path":"a.md"}' });
    const { emits } = await calls.pipe([call({ arguments: '{"path":"a.md"}' }), call({ arguments: '{"path":"a.md"}' }), held], { key: run });
    expect(of(emits, "oz0.results-delivered")).toEqual([]);
    const approval = (JSON.parse(of<Decision>(emits, "oz0.call-decisions")[2]?.evidence ?? "null") as { approval: { id: string } }).approval.id;
    const deny: Decision = { id: uid("ans"), input_id: approval, processor: "person", tenant: "acme", tree_id: "job-root", job_id: "job-root", run_id: run, subject: approval, verdict: "stop", reason_code: null, limit: null, numbers: {}, message: "spins", evidence: null, ts: T0 + 1000 };
    const out = await answers.pipe(deny, { key: run });
    const [stop] = of<Decision>(out.emits, "oz0.call-decisions");
    expect(of<ResultDelivered>(out.emits, "oz0.results-delivered")).toEqual([
      expect.objectContaining({ processor: "loop-approvals", input_id: held.id, call_id: held.call_id, plugin: "acme_docs", tool: "acme_docs", function: "get_page", is_error: true }),
    ]);
    expect(words(of<ResultDelivered>(out.emits, "oz0.results-delivered")[0])).toBe(stop?.message);
  });
});
