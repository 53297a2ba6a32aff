import { describe, expect, it } from "vitest";
import { loadConfigDir, toTableRecords } from "../../../config/load.ts";
import { planPublish } from "../../../config/publish-plan.ts";

describe("publishing configuration", () => {
  it("publishes every row to an empty table, and nothing when the table already holds them", async () => {
    const rows = toTableRecords(await loadConfigDir("config/examples"));
    const first = planPublish(new Map(), rows);
    expect(first.upserts.map((r) => r.key)).toEqual(rows.map((r) => r.key));
    const table = new Map(rows.map((r) => [r.key, JSON.parse(JSON.stringify(r.value)) as unknown]));
    const again = planPublish(table, rows);
    expect(again.upserts).toEqual([]);
    expect(again.unchanged).toHaveLength(rows.length);
  });

  it("sees a changed value as a change whatever the order of its keys", () => {
    const row = { kind: "tenant" as const, id: "t1", key: "tenant/t1", source: "t1.yaml", value: { id: "t1", offload: { default: 6000, ceiling: 20000 } } as never };
    const reordered = new Map<string, unknown>([["tenant/t1", { offload: { ceiling: 20000, default: 6000 }, id: "t1" }]]);
    expect(planPublish(reordered, [row]).upserts).toEqual([]);
    const changed = new Map<string, unknown>([["tenant/t1", { id: "t1", offload: { default: 5000, ceiling: 20000 } }]]);
    expect(planPublish(changed, [row]).upserts).toEqual([row]);
  });

  it("removes rows whose file is gone only when asked to prune", () => {
    const table = new Map<string, unknown>([["agent/old", {}], ["tenant/kept", {}]]);
    expect(planPublish(table, []).deletes).toEqual([]);
    expect(planPublish(table, [], { prune: true }).deletes).toEqual(["agent/old", "tenant/kept"]);
    expect(planPublish(table, [], { prune: true, kinds: ["agent"] }).deletes).toEqual(["agent/old"]);
  });
});
