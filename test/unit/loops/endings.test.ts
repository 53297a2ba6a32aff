import { describe, expect, it } from "vitest";
import { loopCallsProcessor, type LoopEnv } from "../../../processors/loops/calls-processor.ts";
import { MemoryLoopStore } from "../../../processors/loops/memory-store.ts";
import { memoryStandingStore } from "../../../processors/limits/memory-store.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { Decision, ResultDelivered, ToolCall } from "../../../schemas/types.ts";
import { toolCall, uid } from "../../support/events.ts";

/** loop-calls over a standing store whose tree hash holds `fields` for job `job-root` of tenant acme. */
function setup(fields: Record<string, string>) {
  const standing = memoryStandingStore(new Map([["acme/job-root", new Map(Object.entries(fields))]]));
  const config = staticConfig([
    { kind: "agent", id: "stopper", value: { on_loop: "stop", tools: ["acme_docs"] } },
    { kind: "agent", id: "timed", value: { limits: { tree: {}, timeout: 60_000 } } },
  ]);
  const env: LoopEnv = { config, store: new MemoryLoopStore(), standing };
  return { standing, driver: new TestDriver(loopCallsProcessor, env) };
}

const run = uid("run");
const call = (over: Partial<ToolCall> = {}) => toolCall({ run_id: run, ts: 100_000, ...over });

async function decide(driver: TestDriver<ToolCall, LoopEnv>, c: ToolCall): Promise<{ decision: Decision; result?: ResultDelivered }> {
  const { emits } = await driver.pipe(c, { key: run });
  expect(driver.deadLetters).toEqual([]);
  const decision = emits.find((e) => e.to === "oz0.call-decisions")?.value as Decision;
  const result = emits.find((e) => e.to === "oz0.results-delivered")?.value as ResultDelivered | undefined;
  return { decision, result };
}

describe("loop-calls: endings bind", () => {
  it("LIM-1 every call of a job that ended is stopped with its ending, the answer too, and the model reads why; the call that ended it is decided as the first time", async () => {
    const ending = { code: "BudgetExceeded", limit: "limits.max_cost_usd", message: "The tree's budget is spent.", by: "evt-ender" };
    const { driver } = setup({ "job:job-root:end": JSON.stringify(ending) });
    const { decision, result } = await decide(driver, call());
    expect(decision).toMatchObject({ verdict: "stop", reason_code: "BudgetExceeded", limit: "limits.max_cost_usd" });
    expect(decision.message).toMatch(/^Job job-root has ended \(BudgetExceeded\): nothing more runs in it\. The tree's budget is spent\./);
    expect(result?.is_error).toBe(true);
    expect(result?.content).toContain("has ended (BudgetExceeded)");
    expect((await decide(driver, call({ plugin: "oz0", tool: "oz0", function: "answer" }))).decision.verdict).toBe("stop");
    expect((await decide(driver, call({ id: "evt-ender" }))).decision.verdict).toBe("allow");
  });

  it("LIM-1 limits.timeout is checked at every tool call against the call's time", async () => {
    const { driver } = setup({ "job:job-root:agent": "timed", "job:job-root:at": "1000", "job:job-root:tmo": "-1", "job:job-root:sess": "0" });
    expect((await decide(driver, call({ agent: "timed", ts: 61_000 }))).decision.verdict).toBe("allow");
    expect((await decide(driver, call({ agent: "timed", ts: 61_001 }))).decision).toMatchObject({ verdict: "stop", reason_code: "AgentTimeout", limit: "limits.timeout" });
  });

  it("LIM-8 past the soft wall every tool call but the answer is refused with its words; a person's call by hand is not held", async () => {
    const { driver } = setup({ "s:budget": "1000000", "s:wall": "850000", spent: "900000" });
    const { decision, result } = await decide(driver, call());
    expect(decision).toMatchObject({ verdict: "refuse", reason_code: "SoftWall", limit: "spend.soft_wall" });
    expect(result?.content).toContain("only the answer is left");
    expect((await decide(driver, call({ plugin: "oz0", tool: "oz0", function: "answer" }))).decision.verdict).toBe("allow");
    expect((await decide(driver, call({ origin: "person" }))).decision.verdict).toBe("allow");
  });

  it("LOOP-6 a loop that stops the job keeps its ending, so the job's model asks and reads are refused too", async () => {
    const { driver, standing } = setup({});
    const same = () => call({ agent: "stopper", function: "get_page", arguments: JSON.stringify({ path: "a.md" }) });
    const verdicts: string[] = [];
    for (let i = 0; i < 3; i++) verdicts.push((await decide(driver, same())).decision.verdict);
    expect(verdicts).toEqual(["allow", "allow", "stop"]);
    const kept = standing.hashes.get("acme/job-root")?.get("job:job-root:end");
    expect(JSON.parse(kept ?? "null")).toMatchObject({ code: "LoopDetected" });
  });
});
