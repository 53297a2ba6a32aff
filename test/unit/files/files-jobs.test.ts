import { describe, expect, it } from "vitest";
import { keptThreshold } from "../../../processors/files/env.ts";
import { earlierTurns } from "../../../processors/files/lineage.ts";
import { MemoryFilesStore } from "../../../processors/files/memory-store.ts";
import { FILES_HANDED, filesJobsProcessor, type FilesJobsEnv } from "../../../processors/files-jobs/processor.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { AuditEvent, Decision, JobEvent } from "../../../schemas/types.ts";
import { FileNotFound } from "../../../store/file-errors.ts";
import { refOf } from "../../../store/objects.ts";
import { uid } from "../../support/events.ts";

function job(tree: string, over: Partial<JobEvent> = {}): JobEvent {
  return {
    id: uid("evt"), tenant: "acme", tree_id: tree, job_id: tree, parent_job_id: null, run_id: "run-1", agent: "fixer", kind: "started", started_by: "agent", delegation: "none", depth: 0, outcome: null,
    principal: null, team: null, permissions: [], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts: Date.now(), ...over,
  };
}

/** A file store in memory: which trees of the tenant hold which refs. */
class Files {
  readonly held = new Map<string, Set<string>>();
  put(tree: string, ref: string): void {
    this.held.set(tree, (this.held.get(tree) ?? new Set()).add(ref));
  }
  holdsFiles(_tenant: string, tree: string): Promise<boolean> {
    return Promise.resolve((this.held.get(tree)?.size ?? 0) > 0);
  }
  hand(_tenant: string, ref: string, tree: string): Promise<unknown> {
    if (![...this.held.values()].some((s) => s.has(ref))) return Promise.reject(new FileNotFound(ref));
    this.put(tree, ref);
    return Promise.resolve({ ref });
  }
}

function setup(): { driver: TestDriver<JobEvent, FilesJobsEnv>; state: MemoryFilesStore; files: Files; config: ReturnType<typeof staticConfig> } {
  const state = new MemoryFilesStore();
  const files = new Files();
  const config = staticConfig([]);
  return { driver: new TestDriver(filesJobsProcessor, { state, files, config }), state, files, config };
}

const archive = refOf(Buffer.from("archive"));

describe("files-jobs: the file rules of job lifecycle events", () => {
  it("FILE-3 a turn reads its earlier turns up to its fork point, never a later turn's or another branch's", () => {
    // t1 <- t2 <- t3, and t2b forks from t1.
    const turns = { t1: "", t2: "t1", t3: "t2", t2b: "t1" };
    expect(earlierTurns(turns, "t3")).toEqual(["t2", "t1"]);
    expect(earlierTurns(turns, "t2b")).toEqual(["t1"]);
    expect(earlierTurns(turns, "t1")).toEqual([]);
    expect(earlierTurns(turns, "t2")).toEqual(["t1"]);
  });

  it("FILE-3 a previous turn that is not a turn of the conversation opens nothing, and a cycle ends", () => {
    expect(earlierTurns({ t1: "", t2: "someone-elses-tree" }, "t2")).toEqual([]);
    expect(earlierTurns({ a: "b", b: "a" }, "a")).toEqual(["b"]);
  });

  it("FILE-3 turns' starts build the lineage each turn reads by", async () => {
    const { driver, state } = setup();
    await driver.pipe([job("t1", { conversation_id: "c" }), job("t2", { conversation_id: "c", previous_turn: "t1" }), job("t2b", { conversation_id: "c", previous_turn: "t1" }), job("t3", { conversation_id: "c", previous_turn: "t2" })]);
    expect(await state.reader("acme", "t3")).toEqual({ tenant: "acme", tree: "t3", earlierTurns: ["t2", "t1"] });
    expect(await state.reader("acme", "t2b")).toEqual({ tenant: "acme", tree: "t2b", earlierTurns: ["t1"] });
    // globex has no tree t3 of its own: it reads as the tree alone, with none of acme's turns.
    expect(await state.reader("globex", "t3")).toEqual({ tenant: "globex", tree: "t3" });
  });

  it("FILE-4 a person with the content permission is handed the files the tenant holds; the start is audited and unreadable files are left out", async () => {
    const { driver, files } = setup();
    files.put("old-tree", archive);
    const missing = refOf(Buffer.from("erased"));
    await driver.pipe(job("new-tree", { started_by: "person", principal: "ana", permissions: ["content"], files: [archive, missing] }));
    expect(driver.read("oz0.admissions")).toEqual([]);
    const [entry] = driver.read<AuditEvent>("oz0.audit");
    expect(entry).toMatchObject({ kind: FILES_HANDED, tenant: "acme", tree_id: "new-tree", actor: "ana", facts: { refs: archive, started_by: "person" }, numbers: { handed: 1, left_out: 1 } });
    expect(files.held.get("new-tree")).toEqual(new Set([archive]));
  });

  it("FILE-4 without the content permission, or started by an agent, a start with files is refused and nothing is handed", async () => {
    const { driver, files } = setup();
    files.put("old-tree", archive);
    await driver.pipe([job("t-a", { started_by: "app", principal: "bot", permissions: ["run"], files: [archive] }), job("t-b", { started_by: "agent", permissions: ["content"], files: [archive] })]);
    const refusals = driver.read<Decision>("oz0.admissions");
    expect(refusals.map((d) => [d.tree_id, d.verdict, d.reason_code])).toEqual([["t-a", "refuse", "content_permission"], ["t-b", "refuse", "content_permission"]]);
    expect(refusals[0]?.message).toContain("app bot does not have the content permission");
    expect(driver.read("oz0.audit")).toEqual([]);
    expect(files.held.has("t-a") || files.held.has("t-b")).toBe(false);
  });

  it("FILE-5 a chosen tree ID is refused while the ended tree holds files, and when it is a conversation's turn", async () => {
    const { driver, files } = setup();
    await driver.pipe([job("old"), job("old", { kind: "ended", outcome: "done" }), job("turn", { conversation_id: "c" })]);
    files.put("old", archive);
    await driver.pipe([job("old", { job_id: "new-1", chosen_tree_id: true }), job("turn", { job_id: "new-2", chosen_tree_id: true })]);
    expect(driver.read<Decision>("oz0.admissions").map((d) => [d.tree_id, d.verdict, d.reason_code])).toEqual([["old", "refuse", "tree_holds_files"], ["turn", "refuse", "tree_is_turn"]]);
  });

  it("FILE-5 while the tree's job runs, a chosen-ID start follows it and is handed no files; an ended tree without files is started anew", async () => {
    const { driver, files, state } = setup();
    files.put("elsewhere", archive);
    await driver.pipe([job("busy"), job("busy", { job_id: "follower", chosen_tree_id: true, started_by: "person", principal: "ana", permissions: ["content"], files: [archive] })]);
    const [follow] = driver.read<Decision>("oz0.admissions");
    expect(follow).toMatchObject({ verdict: "allow", reason_code: "follows_running_job", job_id: "follower" });
    expect(files.held.has("busy")).toBe(false);
    expect(driver.read("oz0.audit")).toEqual([]);
    await driver.pipe([job("empty"), job("empty", { kind: "ended" }), job("empty", { job_id: "again", chosen_tree_id: true })]);
    expect(driver.read<Decision>("oz0.admissions")).toHaveLength(1);
    expect((await state.tree("acme", "empty"))?.rootJob).toBe("again");
  });

  it("FILE-5 a replayed chosen-ID start is decided as it was the first time", async () => {
    const { driver } = setup();
    const start = job("mine", { chosen_tree_id: true });
    await driver.pipe(start);
    await driver.pipe(start);
    expect(driver.read("oz0.admissions")).toEqual([]);
  });

  it("OFF-13 a job keeps the threshold it started with; a tenant change mid-job moves only new jobs", async () => {
    const { driver, state, config } = setup();
    config.set("tenant", "acme", { offload: { default: 4_000 } });
    await driver.pipe(job("tree-1", { job_id: "job-1" }));
    config.set("tenant", "acme", { offload: { default: 20_000 } });
    const threshold = keptThreshold(state, config);
    expect(await threshold({ tenant: "acme", tree_id: "tree-1", job_id: "job-1", agent: "fixer" })).toBe(4_000);
    expect(await threshold({ tenant: "acme", tree_id: "tree-1", job_id: "job-2", agent: "fixer" })).toBe(20_000);
    config.set("tenant", "acme", { offload: { default: -1 } });
    expect(await threshold({ tenant: "acme", tree_id: "tree-1", job_id: "job-2", agent: "fixer" })).toBe(20_000);
    expect(await threshold({ tenant: "acme", tree_id: "tree-1", job_id: "job-3", agent: "fixer" })).toBe("off");
  });
});
