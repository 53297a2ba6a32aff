import { describe, expect, it } from "vitest";
import { formatHeld, formatHolds, heldEntry, holdCommand, HOLD_HELP, releasedEntry, treeArgs } from "../../../bin/oz0-hold.ts";
import { describeInventory, formatHeldBack, formatTreeErasure, jobErase, JOB_ERASE_HELP, treeErasedEntry, type TreeErasureSaid } from "../../../bin/oz0-job-erase.ts";
import { Exit } from "../../../bin/cli.ts";
import { Keys } from "../../../store/redis/keys.ts";
import { heldTracePrefix, isUnknown, jobsAndRuns, type HoldReport, type TreeInventory } from "../../../store/tree-data.ts";
import { holdFromHash, type TreeHold } from "../../../store/tree-holds.ts";

const REF = `oz0-file:sha256:${"ab".repeat(32)}`;

function usageOf(run: () => unknown): { code: number; message: string } {
  try {
    run();
  } catch (err) {
    if (err instanceof Exit) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error("no usage error");
}

function expectUsage(run: () => unknown, words: RegExp): void {
  const u = usageOf(run);
  expect(u.code).toBe(2);
  expect(u.message).toMatch(words);
}

const inv: TreeInventory = {
  tenant: "acme",
  tree: "job-1",
  files: [REF],
  jobs: ["job-1", "job-2"],
  runs: ["run-1"],
  traceParts: ["tenants/YWNtZQ/jobs/am9iLTE/oz0.jobs/0/x.json"],
  redisKeys: ["oz0:{tree:acme/job-1}:limits"],
  loopKeys: ["oz0:{run:acme/run-1}:loop:flags"],
  running: false,
};
const hold: TreeHold = { tenant: "acme", tree: "job-1", reason: "matter 114", by: "dana", at: Date.UTC(2026, 11, 1), covered: null };

describe("oz0 hold and oz0 job erase: arguments (OFF-10 FILE-6)", () => {
  const parse = (v: Record<string, string | boolean | undefined>, pos: string[] = []) => () => treeArgs("hold set", HOLD_HELP, v, pos);

  it("OFF-10 FILE-6 takes --tenant, one of --tree or --job, and a reason", () => {
    expect(parse({ tenant: "acme", tree: "job-1", reason: " why " })()).toEqual({ tenant: "acme", target: { tree: "job-1" }, reason: "why", as: undefined, json: false });
    expect(parse({ tenant: "acme", job: "job-2", reason: "why", json: true })()).toMatchObject({ target: { job: "job-2" }, json: true });
  });

  it("OFF-10 FILE-6 refuses, with exit 2 and what to give: no tenant, no tree or job, both, no reason, a blank reason, positionals", () => {
    expectUsage(parse({ tree: "t", reason: "r" }), /give --tenant T/);
    expectUsage(parse({ tenant: "acme", reason: "r" }), /give --tree ID .* or --job ID/);
    expectUsage(parse({ tenant: "acme", tree: "t", job: "j", reason: "r" }), /not both/);
    expectUsage(parse({ tenant: "acme", tree: "t" }), /give --reason "why"/);
    expectUsage(parse({ tenant: "acme", tree: "t", reason: "  " }), /give --reason/);
    expectUsage(parse({ tenant: "acme", tree: "t", reason: "r" }, ["extra"]), /flags only, got extra/);
  });
});

describe("oz0 hold and oz0 job erase: help and unknown verbs, before any service is reached (OFF-10 FILE-6)", () => {
  it("OFF-10 FILE-6 --help shows each command's help; an unknown verb of hold is a usage error naming the verbs", async () => {
    await expect(holdCommand("--help", [])).resolves.toBe(HOLD_HELP);
    await expect(holdCommand("set", ["--help"])).resolves.toBe(HOLD_HELP);
    await expect(jobErase(["--help"])).resolves.toBe(JOB_ERASE_HELP);
    const wrong = await holdCommand("frob", []).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(Exit);
    expect((wrong as Exit).code).toBe(2);
    expect((wrong as Exit).message).toMatch(/oz0 hold frob: no such command; hold takes set, clear or list/);
    const flag = await jobErase(["--tenant", "acme", "--tree", "t", "--reason", "r", "--force"]).catch((e: unknown) => e);
    expect((flag as Exit).code).toBe(2);
    expect((flag as Exit).message).toMatch(/--force/);
  });
});

describe("a tree's data, found (OFF-10 FILE-6)", () => {
  it("FILE-6 names the tree's jobs from its limits state and file rules' record (the tree is its first job), and their runs", () => {
    const limits = { "s:auth": "1", "job:job-1:agent": "a", "job:job-1:run": "run-1", "job:job:2:agent": "b", "job:job:2:run": "run-2", "job:job-3:started": "1", spent: "5" };
    expect(jobsAndRuns("job-1", limits, { root_job: "job-1" })).toEqual({ jobs: ["job-1", "job-3", "job:2"], runs: ["run-1", "run-2"] });
    expect(jobsAndRuns("t", {}, {})).toEqual({ jobs: ["t"], runs: [] });
  });

  it("FILE-6 a tree with no file, trace part or key is unknown", () => {
    expect(isUnknown(inv)).toBe(false);
    expect(isUnknown({ ...inv, files: [], traceParts: [], redisKeys: [], loopKeys: [] })).toBe(true);
  });

  it("OFF-10 the SCAN pattern of a tree's keys escapes glob characters of its IDs, and the hold record is in the tree's slot", () => {
    const k = new Keys("oz0");
    expect(k.treeKeysPattern("acme", "job-1")).toBe("oz0:{tree:acme/job-1}:*");
    expect(k.treeKeysPattern("acme", "a*b?[c]")).toBe("oz0:{tree:acme/a\\*b\\?\\[c\\]}:*");
    expect(k.treeHold("acme", "job-1")).toBe("oz0:{tree:acme/job-1}:hold");
    expect(k.treeHold("acme", "job-1").startsWith(k.limits("acme", "job-1").slice(0, -"limits".length))).toBe(true);
    expect(k.loopKeys("acme", "run-1")).toEqual(["oz0:{run:acme/run-1}:loop:calls", "oz0:{run:acme/run-1}:loop:results", "oz0:{run:acme/run-1}:loop:approvals", "oz0:{run:acme/run-1}:loop:flags"]);
  });

  it("OFF-10 a held tree's trace copies go under holds/, outside the file store's files/ prefix, one prefix per tree", () => {
    expect(heldTracePrefix("acme", "job/1")).toBe(`holds/acme/${Buffer.from("job/1").toString("base64url")}/traces/`);
    expect(heldTracePrefix("acme", "a")).not.toBe(heldTracePrefix("acme", "b"));
    expect(() => heldTracePrefix("acme", "")).toThrow(/empty/);
    expect(() => heldTracePrefix("../x", "t")).toThrow(/tenant ID/);
  });

  it("OFF-10 a hold record reads back from its hash; a hash without `at` is no hold", () => {
    expect(holdFromHash("acme", "t", { reason: "r", by: "dana", at: "5" })).toEqual({ tenant: "acme", tree: "t", reason: "r", by: "dana", at: 5, covered: null });
    expect(holdFromHash("acme", "t", { reason: "r", by: "dana", at: "5", covered_at: "9", covered_by: "eve", files: "2", trace_parts: "3", jobs: "1" })?.covered).toEqual({ at: 9, by: "eve", files: 2, traceParts: 3, jobs: 1 });
    expect(holdFromHash("acme", "t", {})).toBeNull();
  });
});

describe("what the commands say and audit (OFF-10 FILE-6)", () => {
  const report: HoldReport = { made: true, hold, inventory: inv, filesHeld: [REF], filesMissing: [], traceCopies: 1, traceParts: 1 };

  it("OFF-10 hold set says what was held; the audit entry names it by counts, refs and jobs, with who and why", () => {
    expect(formatHeld(report)).toMatch(/^tree job-1 of tenant acme held by dana at 2026-12-01T00:00:00.000Z: matter 114\nfiles and offloaded results: 1 held/);
    expect(formatHeld({ ...report, made: false })).toMatch(/was held already by dana/);
    const e = heldEntry(report, "eve", "matter 114", null, 7);
    expect(e).toMatchObject({ kind: "tree.held", tenant: "acme", tree_id: "job-1", actor: "eve", reason: "matter 114", facts: { refs: REF, jobs: "job-1 job-2", first: "true" }, numbers: { files_held: 1, trace_parts_held: 1, jobs: 2 } });
    expect(heldEntry(report, "eve", "m", null, 7).id).toBe(e.id);
    expect(heldEntry(report, "eve", "m", null, 8).id).not.toBe(e.id);
  });

  it("OFF-10 hold clear's audit entry keeps the hold it lifted (who, since when, why)", () => {
    const e = releasedEntry({ hold, filesReleased: [REF], filesStillHeld: [], traceCopiesRemoved: 2 }, "eve", "settled", "job-2", 9);
    expect(e).toMatchObject({ kind: "tree.released", job_id: "job-2", actor: "eve", reason: "settled", facts: { held_by: "dana", held_reason: "matter 114", held_since: "2026-12-01T00:00:00.000Z" }, numbers: { files_released: 1, trace_copies_removed: 2 } });
  });

  it("OFF-10 hold list shows each held tree with who, since when and why, or says none is held", () => {
    expect(formatHolds([], "acme")).toBe("no tree of tenant acme is held\n");
    expect(formatHolds([hold], "acme")).toBe("job-1  held by dana since 2026-12-01T00:00:00.000Z: matter 114  [MinIO holds not yet put]\n");
    expect(formatHolds([{ ...hold, covered: { at: hold.at, by: "dana", files: 2, traceParts: 3, jobs: 1 } }], undefined)).toContain("acme job-1  held by dana");
  });

  it("FILE-6 job erase names what it erased and what a hold held back, never content", () => {
    const s: TreeErasureSaid = { tenant: "acme", tree: "job-1", job: null, by: "eve", reason: "subject's request", files: { erased: [REF], held: [] }, traces: { erased: 3, jobs: ["job-1"] }, redis: { erased: ["oz0:{tree:acme/job-1}:limits"] } };
    expect(formatTreeErasure(s)).toBe(
      `tree job-1 of tenant acme erased by eve: subject's request\nfiles and offloaded results: 1 erased\ntraces: 3 part(s) of 1 job(s) erased (job-1)\nredis: 1 key(s) erased: oz0:{tree:acme/job-1}:limits\n`,
    );
    expect(treeErasedEntry(s, 5)).toMatchObject({ kind: "tree.erased", tree_id: "job-1", facts: { refs: REF, redis_keys: "oz0:{tree:acme/job-1}:limits" }, numbers: { files_erased: 1, trace_parts_erased: 3, redis_keys_erased: 1 } });
    expect(describeInventory(inv)).toBe("1 file(s) and offloaded result(s), 1 trace part(s) of 2 job(s) (job-1, job-2), 2 Redis key(s) (oz0:{tree:acme/job-1}:limits, oz0:{run:acme/run-1}:loop:flags)");
    expect(formatHeldBack("job-1", "acme", hold, inv)).toMatch(/is under a legal hold \(set by dana at 2026-12-01T00:00:00.000Z: matter 114\): nothing erased; held back: 1 file/);
  });
});
