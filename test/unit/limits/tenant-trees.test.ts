import { describe, expect, it } from "vitest";
import { limitsJobsProcessor } from "../../../processors/limits/jobs-processor.ts";
import { limitsTreeKey, memoryLimitsStore } from "../../../processors/limits/memory-store.ts";
import { limitsModelCallsProcessor } from "../../../processors/limits/model-calls-processor.ts";
import { DEFAULT_PRICES } from "../../../processors/limits/prices.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { Decision } from "../../../schemas/types.ts";
import { Keys } from "../../../store/redis/keys.ts";
import { uid } from "../../support/events.ts";
import { agent, jobEvent, modelCall, tenantSettings } from "./support.ts";

describe("limits state is kept per tenant and tree", () => {
  it("LIM-2 two tenants' trees of the same ID never share limits: one's model calls neither count toward nor show in the other's", async () => {
    const boss = agent("boss", { limits: { tree: { model_calls: 1 } } });
    const config = staticConfig([
      { kind: "tenant", id: "acme", value: tenantSettings() },
      { kind: "tenant", id: "globex", value: tenantSettings({ id: "globex" }) },
      { kind: "agent", id: "boss", value: boss },
    ]);
    const store = memoryLimitsStore();
    const env = { store, config, prices: DEFAULT_PRICES };
    const calls = new TestDriver(limitsModelCallsProcessor, env);
    const jobs = new TestDriver(limitsJobsProcessor, env);
    const tree = uid("tree");
    await jobs.pipe([jobEvent(tree), jobEvent(tree, { tenant: "globex" })], { key: tree });
    await calls.pipe([modelCall(tree)], { key: tree });
    // acme's tree has spent its one model call; globex's tree of the same ID has spent none.
    await calls.pipe([modelCall(tree, { tenant: "globex" })], { key: tree });
    await calls.pipe([modelCall(tree)], { key: tree });
    expect(calls.read<Decision>("oz0.admissions").map((d) => [d.tenant, d.verdict])).toEqual([
      ["acme", "allow"],
      ["globex", "allow"],
      ["acme", "refuse"],
    ]);
    expect(store.trees.get(limitsTreeKey("acme", tree))?.modelCalls).toBe(1);
    expect(store.trees.get(limitsTreeKey("globex", tree))?.modelCalls).toBe(1);
  });

  it("LIM-2 a tree's limits key names its tenant", () => {
    const k = new Keys();
    expect(k.limits("acme", "t1")).toBe("oz0:{tree:acme/t1}:limits");
    expect(k.limits("acme", "t1")).not.toBe(k.limits("globex", "t1"));
  });
});
