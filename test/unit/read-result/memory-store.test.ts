import { describe, expect, it } from "vitest";
import { MemoryJobLabelsStore } from "../../../processors/read-result/memory-store.ts";

describe("the labels jobs join, in memory", () => {
  it("OFF-9 joining labels adds each once and answers how many the job holds; joining none answers the count", async () => {
    const store = new MemoryJobLabelsStore();
    const job = { tenant: "acme", tree: "tree-1", job: "job-1" };
    expect(await store.join(job, ["pii"])).toBe(1);
    expect(await store.join(job, ["pii", "finance"])).toBe(2);
    expect(await store.join(job, [])).toBe(2);
    expect(await store.labels(job)).toEqual(["finance", "pii"]);
  });

  it("OFF-9 a job that joined nothing holds nothing, and keeps no record", async () => {
    const store = new MemoryJobLabelsStore();
    expect(await store.join({ tenant: "acme", tree: "tree-1", job: "job-1" }, [])).toBe(0);
    expect(await store.labels({ tenant: "acme", tree: "tree-1", job: "job-1" })).toEqual([]);
    expect(store.joined.size).toBe(0);
  });

  it("FILE-5 labels are kept per tenant, tree and job: the same IDs in another tenant or tree hold their own", async () => {
    const store = new MemoryJobLabelsStore();
    await store.join({ tenant: "acme", tree: "tree-1", job: "job-1" }, ["pii"]);
    expect(await store.labels({ tenant: "globex", tree: "tree-1", job: "job-1" })).toEqual([]);
    expect(await store.labels({ tenant: "acme", tree: "tree-2", job: "job-1" })).toEqual([]);
    expect(await store.labels({ tenant: "acme", tree: "tree-1", job: "job-2" })).toEqual([]);
    expect(await store.join({ tenant: "globex", tree: "tree-1", job: "job-1" }, ["finance"])).toBe(1);
    expect(await store.labels({ tenant: "acme", tree: "tree-1", job: "job-1" })).toEqual(["pii"]);
  });
});
