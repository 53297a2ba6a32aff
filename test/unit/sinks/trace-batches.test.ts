import { describe, expect, it } from "vitest";
import { Keys } from "../../../store/redis/keys.ts";
import { hashTag } from "../../../store/redis/slots.ts";
import { batchesByTenant, batchName, isBatchName, parseBatch, parseStored, partName, partsByJob, type BatchRange } from "../../../store/trace-parts.ts";
import { heldCopyName } from "../../../store/tree-data.ts";
import { jobEvent } from "../../support/events.ts";

const range: BatchRange = { topic: "oz0.jobs", partition: 3, first: "7", last: "12" };

describe("trace objects of format 3 (one per tenant per batch)", () => {
  it("SYS-5 a batch's records become one object per tenant, each job's records apart in input order, named by the tenant and the batch", () => {
    const items = [
      { job: jobEvent("j1", "started", { tenant: "acme" }) },
      { job: jobEvent("j3", "started", { tenant: "globex" }) },
      { job: jobEvent("j2", "started", { tenant: "acme" }) },
      { job: jobEvent("j1", "ended", { tenant: "acme" }) },
    ];
    const batches = batchesByTenant(partsByJob(items).values());
    expect([...batches.keys()]).toEqual(["acme", "globex"]);
    expect(batches.get("acme")?.jobs.map((j) => [j.job_id, j.jobs.map((e) => e.kind)])).toEqual([
      ["j1", ["started", "ended"]],
      ["j2", ["started"]],
    ]);
    expect(batchName("acme", range)).toBe("tenants/YWNtZQ/batches/oz0.jobs/3/00000000000000000007-00000000000000000012.json");
    expect(isBatchName(batchName("acme", range))).toBe(true);
    expect(isBatchName(partName("acme", "j1", range))).toBe(false);
  });

  it("SYS-5 a stored object reads back as its jobs' parts whatever its format; anything else is refused", () => {
    const batch = batchesByTenant(partsByJob([{ job: jobEvent("j1", "started", { tenant: "acme" }) }, { job: jobEvent("j2", "started", { tenant: "acme" }) }]).values()).get("acme");
    const parts = parseStored(JSON.stringify(batch), "x");
    expect(parts.map((p) => [p.v, p.tenant, p.job_id, p.jobs.length])).toEqual([
      [2, "acme", "j1", 1],
      [2, "acme", "j2", 1],
    ]);
    const v2 = { v: 2, tenant: "acme", job_id: "j1", entries: [], decisions: [], jobs: [] };
    expect(parseStored(JSON.stringify(v2), "y")).toEqual([v2]);
    expect(() => parseBatch(JSON.stringify(v2), "y")).toThrow(/not a trace object of format 3/);
    expect(() => parseStored(JSON.stringify({ v: 3, tenant: "acme", jobs: [{ job_id: "j1" }] }), "z")).toThrow(/not a trace object of format 3/);
    expect(() => parseStored("{", "w")).toThrow(/not JSON/);
  });

  it("OFF-10 a held copy of one job's records of an object is named as that job's part of format 2 of the batch", () => {
    expect(heldCopyName(batchName("acme", range), "job/1")).toBe(partName("acme", "job/1", range));
  });

  it("SYS-5 a job's trace index is one slot per tenant and job, no pair reading as another, and the tenant's pattern matches only its keys", () => {
    const keys = new Keys();
    expect(keys.traceJob("acme", "j1")).toBe("oz0:{trace:acme/j1}:objects");
    expect(hashTag(keys.traceJob("a/b", "c"))).not.toBe(hashTag(keys.traceJob("a", "b/c")));
    expect(keys.traceJob("acme", "j{1}")).toBe("oz0:{trace:acme/j%7B1%7D}:objects");
    const glob = new RegExp(`^${keys.traceJobsPattern("acme").replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`);
    expect(glob.test(keys.traceJob("acme", "j1"))).toBe(true);
    expect(glob.test(keys.traceJob("acme2", "j1"))).toBe(false);
    expect(() => keys.traceJob("", "j1")).toThrow(/empty tenant/);
  });
});
