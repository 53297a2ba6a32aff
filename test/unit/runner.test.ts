import { describe, expect, it } from "vitest";
import type { Decision, ToolCall } from "../../schemas/types.ts";
import { runBatch } from "../../processors/runner/batch.ts";
import { InvalidInput, TransientError } from "../../processors/runner/errors.ts";
import { defineProcessor, TopologyError, type InputRecord } from "../../processors/runner/processor.ts";
import { TestDriver } from "../../processors/runner/test-driver.ts";
import { chunks } from "../../processors/runner/transport.ts";
import { memoryTally, tallyProcessor } from "../support/tally-processor.ts";
import { toolCall } from "../support/events.ts";

function record(value: ToolCall, offset: number): InputRecord<ToolCall> {
  return { topic: "oz0.tool-calls", partition: 0, offset: String(offset), key: value.run_id, value, timestamp: "0" };
}

describe("processor runner core (in memory)", () => {
  it("pipes valid calls through the core and shows its outputs", async () => {
    const env = memoryTally();
    const driver = new TestDriver(tallyProcessor, env);
    await driver.pipe([toolCall({ run_id: "r1" }), toolCall({ run_id: "r1" }), toolCall({ run_id: "r2" })], { key: "r1" });
    const decisions = driver.read<Decision>("oz0.call-decisions");
    expect(decisions.map((d) => [d.run_id, d.numbers.calls])).toEqual([
      ["r1", 1],
      ["r1", 2],
      ["r2", 1],
    ]);
    expect(driver.deadLetters).toEqual([]);
  });

  it("sends an invalid input to the dead letters with its reason and keeps going", async () => {
    const driver = new TestDriver(tallyProcessor, memoryTally());
    const { emits, rejected } = await driver.pipe([toolCall({ arguments: "{not json" }), toolCall()]);
    expect(emits).toHaveLength(1);
    expect(rejected).toHaveLength(1);
    expect(rejected[0]?.error).toBe("invalid");
    expect(rejected[0]?.reason).toMatch(/arguments are not JSON/);
  });

  it("gives outputs deterministic IDs, so a replayed input yields the same decision ID", async () => {
    const call = toolCall();
    const a = new TestDriver(tallyProcessor, memoryTally());
    const b = new TestDriver(tallyProcessor, memoryTally());
    await a.pipe(call);
    await b.pipe(call);
    expect(a.read<Decision>("oz0.call-decisions")[0]?.id).toBe(b.read<Decision>("oz0.call-decisions")[0]?.id);
  });

  it("does not count an input offset twice when it is replayed", async () => {
    const env = memoryTally();
    const call = toolCall({ run_id: "again" });
    await runBatch(tallyProcessor, [record(call, 7)], env);
    await runBatch(tallyProcessor, [record(call, 7)], env);
    expect(env.counts.get("again")).toBe(1);
  });

  it("dead-letters only the record that breaks a batch, not its neighbours", async () => {
    const p = defineProcessor<ToolCall>({
      name: "picky",
      input: "oz0.tool-calls",
      outputs: ["oz0.call-decisions"],
      process(records) {
        if (records.some((r) => r.value.function === "boom")) throw new TypeError("cannot read properties of undefined");
        return records.map(() => ({ emits: [] }));
      },
    });
    const res = await runBatch(p, [record(toolCall(), 0), record(toolCall({ function: "boom" }), 1), record(toolCall(), 2)], undefined);
    expect(res.rejected.map((r) => [r.offset, r.error])).toEqual([["1", "failed"]]);
    expect(res.rejected[0]?.reason).toMatch(/processing failed: cannot read properties/);
  });

  it("turns an InvalidInput thrown for a lone record into a dead letter with its words", async () => {
    const p = defineProcessor<ToolCall>({
      name: "strict",
      input: "oz0.tool-calls",
      outputs: [],
      process() {
        throw new InvalidInput("tenant acme is unknown: publish its settings first");
      },
    });
    const res = await runBatch(p, [record(toolCall(), 0)], undefined);
    expect(res.rejected[0]?.reason).toMatch(/tenant acme is unknown/);
  });

  it("retries a retriable failure instead of dead-lettering, and leaves the batch to the caller when retries stop", async () => {
    let calls = 0;
    const p = defineProcessor<ToolCall>({
      name: "flaky",
      input: "oz0.tool-calls",
      outputs: [],
      process(records) {
        calls++;
        if (calls < 3) throw new TransientError("redis is down");
        return records.map(() => ({ emits: [] }));
      },
    });
    const retried: number[] = [];
    const res = await runBatch(p, [record(toolCall(), 0)], undefined, { onRetry: (_e, n) => Promise.resolve(void retried.push(n)) });
    expect(res.rejected).toEqual([]);
    expect(retried).toEqual([1, 2]);
    await expect(runBatch(p, [record(toolCall(), 1)], undefined)).resolves.toBeDefined();
    calls = 0;
    await expect(runBatch(p, [record(toolCall(), 2)], undefined)).rejects.toThrow(/redis is down/);
  });

  it("rejects an output that does not fit its topic's schema", async () => {
    const p = defineProcessor<ToolCall>({
      name: "sloppy",
      input: "oz0.tool-calls",
      outputs: ["oz0.call-decisions"],
      process(records) {
        return records.map(() => ({ emits: [{ to: "oz0.call-decisions" as const, key: "k", value: { id: 1 } }] }));
      },
    });
    const res = await runBatch(p, [record(toolCall(), 0)], undefined);
    expect(res.emits).toEqual([]);
    expect(res.rejected[0]?.reason).toMatch(/does not fit its schema/);
  });

  it("refuses wiring to an undeclared topic when the processor is defined", () => {
    expect(() =>
      defineProcessor({ name: "lost", input: "oz0.nowhere" as "oz0.tool-calls", outputs: [], process: () => [] }),
    ).toThrow(TopologyError);
  });
});

describe("sending outputs", () => {
  it("splits a batch's outputs into sends under the byte cap, in order, with an oversized record alone", () => {
    const m = (n: number, bytes: number) => ({ topic: "t", key: `k${n}`, value: Buffer.alloc(bytes) });
    const out = [m(1, 400), m(2, 400), m(3, 400), m(4, 2000), m(5, 10)];
    const split = chunks(out, 1000);
    expect(split.map((c) => c.map((x) => x.key))).toEqual([["k1", "k2"], ["k3"], ["k4"], ["k5"]]);
    expect(split.flat()).toEqual(out);
    expect(chunks([], 1000)).toEqual([]);
  });
});
