import { describe, expect, it } from "vitest";
import { keptThreshold } from "../../../processors/files/env.ts";
import { MemoryFilesStore } from "../../../processors/files/memory-store.ts";
import { filesJobsProcessor, type FilesJobsEnv } from "../../../processors/files-jobs/processor.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { JobEvent } from "../../../schemas/types.ts";
import { FileNotFound } from "../../../store/file-errors.ts";
import { Keys } from "../../../store/redis/keys.ts";
import { uid } from "../../support/events.ts";

function job(tenant: string, tree: string, over: Partial<JobEvent> = {}): JobEvent {
  return {
    id: uid("evt"), tenant, tree_id: tree, job_id: tree, parent_job_id: null, run_id: "run-1", agent: "fixer", kind: "started", started_by: "agent", delegation: "none", depth: 0, outcome: null,
    principal: null, team: null, permissions: [], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts: Date.now(), ...over,
  };
}

/** A file store in memory, per tenant and tree, as the real one keeps them. */
class TenantFiles {
  readonly held = new Map<string, Set<string>>();
  put(tenant: string, tree: string, ref: string): void {
    const key = `${tenant}/${tree}`;
    this.held.set(key, (this.held.get(key) ?? new Set()).add(ref));
  }
  holdsFiles(tenant: string, tree: string): Promise<boolean> {
    return Promise.resolve((this.held.get(`${tenant}/${tree}`)?.size ?? 0) > 0);
  }
  hand(tenant: string, ref: string, tree: string): Promise<unknown> {
    const mine = [...this.held.entries()].some(([key, refs]) => key.startsWith(`${tenant}/`) && refs.has(ref));
    if (!mine) return Promise.reject(new FileNotFound(ref));
    this.put(tenant, tree, ref);
    return Promise.resolve({ ref });
  }
}

describe("FILE-5 tree records are kept per tenant and tree", () => {
  const acme = "acme";
  const globex = "globex";

  it("FILE-5 a start under a chosen tree ID that another tenant uses neither sees nor changes that tenant's record (memory state)", async () => {
    const state = new MemoryFilesStore();
    const files = new TenantFiles();
    const driver = new TestDriver<JobEvent, FilesJobsEnv>(filesJobsProcessor, { state, files, config: staticConfig([]) });

    // acme: "shared" is a running conversation turn, "ended" has ended and still holds a file.
    await driver.pipe([job(acme, "shared", { conversation_id: "c1" }), job(acme, "ended"), job(acme, "ended", { kind: "ended" })]);
    files.put(acme, "ended", "oz0-file:sha256:" + "a".repeat(64));
    const acmeShared = await state.tree(acme, "shared");
    expect(acmeShared).toMatchObject({ rootJob: "shared", status: "running", conversation: "c1" });

    // globex chooses the same IDs: none of acme's state (a turn, a running job, an ended tree with files) shows.
    const chosen = { chosen_tree_id: true, started_by: "person" as const, principal: "gus" };
    await driver.pipe([job(globex, "shared", { ...chosen, job_id: "g-job" }), job(globex, "ended", { ...chosen, job_id: "g-ended" })]);
    expect(driver.read("oz0.admissions")).toEqual([]);
    expect(await state.tree(globex, "shared")).toMatchObject({ rootJob: "g-job", status: "running", conversation: null });
    expect(await state.tree(globex, "ended")).toMatchObject({ rootJob: "g-ended", status: "running" });

    // ... and changes none of it: globex ending a root job of the same ID leaves acme's job running.
    await driver.pipe([job(globex, "shared", { kind: "ended", job_id: "shared" }), job(globex, "shared", { kind: "ended", job_id: "g-job" })]);
    expect(await state.tree(acme, "shared")).toEqual(acmeShared);
    expect(await state.tree(acme, "ended")).toMatchObject({ rootJob: "ended", status: "ended" });
    expect(await state.tree(globex, "shared")).toMatchObject({ rootJob: "g-job", status: "ended" });

    // The conversation's lineage stays acme's: globex reading as "shared" gets no earlier turns of acme's.
    expect(await state.reader(globex, "shared")).toEqual({ tenant: globex, tree: "shared" });

    // A start of acme under its own tree still sees its own record.
    await driver.pipe([job(acme, "shared", { ...chosen, job_id: "a-again" })]);
    expect(driver.read<{ reason_code: string }>("oz0.admissions").map((d) => d.reason_code)).toEqual(["tree_is_turn"]);
  });

  it("FILE-5 OFF-13 two tenants' jobs of the same tree and job ID keep their own offload thresholds", async () => {
    const state = new MemoryFilesStore();
    const config = staticConfig([]);
    config.set("tenant", acme, { offload: { default: 3_000 } });
    config.set("tenant", globex, { offload: { default: 25_000 } });
    const threshold = keptThreshold(state, config);
    expect(await threshold({ tenant: acme, tree_id: "t", job_id: "j", agent: "fixer" })).toBe(3_000);
    expect(await threshold({ tenant: globex, tree_id: "t", job_id: "j", agent: "fixer" })).toBe(25_000);
    config.set("tenant", acme, { offload: { default: 9_000 } });
    expect(await threshold({ tenant: acme, tree_id: "t", job_id: "j", agent: "fixer" })).toBe(3_000);
  });

  it("FILE-5 every Redis key of a tree's state names the tenant, in one hash tag per tenant and tree", () => {
    const k = new Keys();
    expect(k.filesTree("acme", "t1")).toBe("oz0:{tree:acme/t1}:files");
    expect(k.jobOffload("acme", "t1", "j1")).toBe("oz0:{tree:acme/t1}:offload:j1");
    expect(k.jobLabels("acme", "t1", "j1")).toBe("oz0:{tree:acme/t1}:job:j1:labels");
    expect(k.filesTree("acme", "t1")).not.toBe(k.filesTree("globex", "t1"));
    expect(k.jobOffload("acme", "t1", "j1")).not.toBe(k.jobOffload("globex", "t1", "j1"));
    expect(k.jobLabels("acme", "t1", "j1")).not.toBe(k.jobLabels("globex", "t1", "j1"));
    // The tenant is encoded: no tenant and tree pair reads as another's.
    expect(k.filesTree("a/b", "c")).not.toBe(k.filesTree("a", "b/c"));
    expect(k.conversation("a/b", "c")).not.toBe(k.conversation("a", "b/c"));
    expect(() => k.filesTree("", "t1")).toThrow(/empty tenant/);
  });
});
