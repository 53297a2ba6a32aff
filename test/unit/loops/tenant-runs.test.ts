import { describe, expect, it } from "vitest";
import { loopCallsProcessor, type LoopEnv } from "../../../processors/loops/calls-processor.ts";
import { MemoryLoopStore } from "../../../processors/loops/memory-store.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { Decision, ToolCall } from "../../../schemas/types.ts";
import { Keys } from "../../../store/redis/keys.ts";
import { toolCall } from "../../support/events.ts";

describe("loop state is kept per tenant and run", () => {
  it("LOOP-2 two tenants' runs of the same run ID never share loop state: one's repeats neither count toward nor show in the other's", async () => {
    const store = new MemoryLoopStore();
    const calls = new TestDriver<ToolCall, LoopEnv>(loopCallsProcessor, { config: staticConfig([]), store });
    const read = (tenant: string) => toolCall({ tenant, run_id: "run-shared", function: "get_page", arguments: JSON.stringify({ path: "a.md" }), ts: Date.UTC(2026, 10, 30, 12) });
    const decide = async (...cs: ToolCall[]) => (await calls.pipe(cs, { key: "run-shared" })).emits.filter((e) => e.to === "oz0.call-decisions").map((e) => (e.value as Decision).verdict);
    expect(await decide(read("acme"), read("acme"))).toEqual(["allow", "allow"]);
    // A third read of the same page in the same run would be a repeat; globex's is its first.
    expect(await decide(read("globex"), read("globex"))).toEqual(["allow", "allow"]);
    expect(await decide(read("acme"))).toEqual(["wait"]);
    expect(await decide(read("globex"))).toEqual(["wait"]);
    expect(calls.deadLetters).toEqual([]);
  });

  it("LOOP-2 a run's loop keys name its tenant", () => {
    const k = new Keys();
    expect(k.loopLane("acme", "r", "calls")).not.toBe(k.loopLane("globex", "r", "calls"));
    expect(k.loopFlags("acme", "r")).not.toBe(k.loopFlags("globex", "r"));
    expect(k.loopFlags("a/b", "c")).not.toBe(k.loopFlags("a", "b/c"));
    expect(() => k.loopFlags("", "r")).toThrow(/empty tenant/);
  });
});
