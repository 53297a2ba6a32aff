import { describe, expect, it } from "vitest";
import { limitsTreeKey, memoryLimitsStore } from "../../../processors/limits/memory-store.ts";
import type { LimitsStore } from "../../../processors/limits/store.ts";
import { StoreRefused, TransientError } from "../../../processors/runner/errors.ts";
import type { InputRecord } from "../../../processors/runner/processor.ts";
import type { Decision, ModelCall } from "../../../schemas/types.ts";
import { uid } from "../../support/events.ts";
import { agent, jobEvent, modelCall, setup, tenantSettings, usageOf } from "./support.ts";

/** Interleaved asks and usages of several trees, each tree's budget running out part way. */
function interleaved(trees: string[], rounds: number): ModelCall[] {
  const out: ModelCall[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const tree of trees) {
      const ask = modelCall(tree, { id: `ask-${tree}-${r}`, request_id: `req-${tree}-${r}` });
      out.push(ask, usageOf({ ...ask, id: `use-${tree}-${r}` }, 800));
    }
  }
  return out;
}

describe("limits-model-calls decides a batch tree by tree", () => {
  const boss = agent("boss", { limits: { tree: {}, max_cost_usd: 0.06 } });

  it("LIM-7 a batch of many trees answers as one input at a time would: each tree in its order, the outcomes in input order", async () => {
    const trees = Array.from({ length: 5 }, () => uid("tree"));
    const calls = interleaved(trees, 6);
    const decide = async (batch: boolean) => {
      // One principal per tree: a quota shared by trees is decided in whichever order their steps reach it.
      const { calls: driver, jobs } = setup([boss], tenantSettings({ quotas: { person: 0.05 } }));
      await jobs.pipe(trees.map((t, i) => jobEvent(t, { principal: i % 2 === 0 ? `p${i}` : null })));
      if (batch) await driver.pipe(calls);
      else for (const c of calls) await driver.pipe(c);
      return driver.read<Decision>("oz0.admissions").map((d) => [d.input_id, d.verdict, d.limit]);
    };
    const one = await decide(false);
    expect(new Set(one.map((d) => d[1]))).toEqual(new Set(["allow", "report", "stop", "wait"]));
    expect(await decide(true)).toEqual(one);
  });

  it("LIM-7 when one tree's step fails, every other tree of the batch finishes before the batch is tried again, and the retry answers the same", async () => {
    const trees = Array.from({ length: 4 }, () => uid("tree"));
    const calls = interleaved(trees, 2);
    const memory = memoryLimitsStore();
    let fail = true;
    let inFlight = 0;
    let peak = 0;
    const step = async <T>(treeId: string, then: () => Promise<T>): Promise<T> => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setTimeout(r, treeId === trees[1] ? 1 : 20));
      inFlight--;
      if (fail && treeId === trees[1]) throw new TransientError("Redis went away");
      return then();
    };
    // A tree checked against nothing but itself sends its steps at once (treeSteps), others one by one (admitCall).
    const flaky: LimitsStore = {
      ...memory,
      admitCall: (tenant, treeId, ask) => step(treeId, () => memory.admitCall(tenant, treeId, ask)),
      treeSteps: (tenant, treeId, steps) => step(treeId, () => memory.treeSteps(tenant, treeId, steps)),
    };
    const { calls: driver, jobs } = setup([boss], tenantSettings(), memory);
    const env = { ...driver.env, store: flaky };
    await jobs.pipe(trees.map((t) => jobEvent(t)));
    const records: Array<InputRecord<ModelCall>> = calls.map((value, offset) => ({ value, key: value.tree_id, topic: "oz0.model-calls", partition: 0, offset: String(offset), timestamp: String(value.ts) }));
    await expect(driver.processor.process(records, env)).rejects.toThrow("Redis went away");
    expect(inFlight).toBe(0);
    expect(peak).toBeGreaterThan(1);
    fail = false;
    const again = await driver.processor.process(records, env);
    expect(again).toHaveLength(records.length);
    expect(memory.trees.get(limitsTreeKey("acme", trees[0] ?? ""))?.modelCalls).toBe(2);
  });

  it("LIM-7 a tree the store refuses for good dead-letters that tree's inputs with the store's words and key, and every other tree answers as in a batch without it", async () => {
    const trees = Array.from({ length: 4 }, () => uid("tree"));
    const poisoned = trees[2] ?? "";
    const calls = interleaved(trees, 3);
    const decide = async (refuse: boolean) => {
      const memory = memoryLimitsStore();
      const refusal = (treeId: string) => new StoreRefused(`Redis refused running limitsTreeSteps for tree ${treeId} on key oz0:{tree:acme/${treeId}}:limits: "WRONGTYPE Operation against a key holding the wrong kind of value"`, { dependency: "redis", key: `oz0:{tree:acme/${treeId}}:limits`, server: "WRONGTYPE Operation against a key holding the wrong kind of value" });
      const store: LimitsStore = {
        ...memory,
        read: (tenant, treeId, job) => (refuse && treeId === poisoned ? Promise.reject(refusal(treeId)) : memory.read(tenant, treeId, job)),
      };
      const { calls: driver, jobs } = setup([boss], tenantSettings(), memory);
      await jobs.pipe(trees.map((t) => jobEvent(t)));
      const env = { ...driver.env, store };
      const records: Array<InputRecord<ModelCall>> = calls.map((value, offset) => ({ value, key: value.tree_id, topic: "oz0.model-calls", partition: 0, offset: String(offset), timestamp: String(value.ts) }));
      return driver.processor.process(records, env);
    };
    const clean = await decide(false);
    const refused = await decide(true);
    calls.forEach((c, i) => {
      if (c.tree_id === poisoned) {
        expect(refused[i]).toEqual({ invalid: expect.stringContaining(`on key oz0:{tree:acme/${poisoned}}:limits: "WRONGTYPE`) as string, error: "failed" });
      } else expect(refused[i]).toEqual(clean[i]);
    });
  });
});
