/**
 * `oz0 hold` and `oz0 job erase` on the real Redis, MinIO (the file bucket with object locking)
 * and Kafka (their audit entries), driving the stores and the commands directly: no pipeline.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisFilesStore } from "../../processors/files/redis-store.ts";
import type { FilesStore } from "../../processors/files/store.ts";
import { TraceStore } from "../../store/trace-store.ts";
import { partsByJob } from "../../store/trace-parts.ts";
import type { AuditEvent } from "../../schemas/types.ts";
import { FileNotFound } from "../../store/file-errors.ts";
import { FileStore, RETENTION_MS } from "../../store/files.ts";
import { minioClient } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { runScript } from "../../store/redis/scripts.ts";
import { heldTracePrefix } from "../../store/tree-data.ts";
import { TreeHolds } from "../../store/tree-holds.ts";
import { jobEvent, uid } from "../support/events.ts";
import { collect, endpoints, serde } from "../support/kafka.ts";
import { oz0 } from "../support/oz0.ts";

const keys = new Keys();
let redis: RedisClient;

beforeAll(() => {
  redis = redisClient(endpoints());
});
afterAll(async () => {
  await redis.quit();
});

interface Setup {
  readonly files: FileStore;
  readonly traces: TraceStore;
  readonly env: Record<string, string>;
}

async function stores(name: string): Promise<Setup> {
  const client = minioClient(endpoints());
  const files = new FileStore({ client, bucket: `oz0-${name}-files-test`, keys: PayloadKeys.fromEnv() });
  await files.ensureBucket();
  const traces = new TraceStore({ client, bucket: `oz0-${name}-traces-test`, retentionDays: 1, index: { redis, keys } });
  await traces.ensureBucket();
  return { files, traces, env: { OZ0_BUCKET: files.bucket, OZ0_TRACE_BUCKET: traces.bucket } };
}

/** A tree as the pipeline leaves it once its root job ended: limits state with a child job and a run, the file rules' record, labels, loop state, trace records (one object: its two jobs share the batch). */
async function tree(s: Setup, filesState: FilesStore, tenant: string, root: string, child: string, run: string, offset: number): Promise<void> {
  await redis.hset(keys.limits(tenant, root), { [`job:${root}:agent`]: "a", [`job:${root}:run`]: run, [`job:${child}:agent`]: "b", spent: "1234" });
  await filesState.start(tenant, root, { event: uid("evt"), job: root, conversation: null }, { source: "t:0", offset: String(offset) });
  await filesState.end(tenant, root, root, { source: "t:0", offset: String(offset + 1) });
  await redis.sadd(keys.jobLabels(tenant, root, child), "pii");
  await redis.hset(keys.loopFlags(tenant, run), "stop", "0");
  await s.traces.write({ topic: "oz0.jobs", partition: 0, first: String(offset), last: String(offset + 1) }, partsByJob([{ job: jobEvent(root, "started", { tenant, run_id: run }) }, { job: jobEvent(child, "started", { tenant, tree_id: root, parent_job_id: root, run_id: run }) }]));
}

async function heldStatus(s: Setup, name: string): Promise<string> {
  const answer: unknown = await s.files.client.getObjectLegalHold(s.files.bucket, name);
  return answer !== null && typeof answer === "object" && "Status" in answer ? String(answer.Status) : String(answer);
}

async function names(client: FileStore["client"], bucket: string, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of client.listObjectsV2(bucket, prefix, true)) if ((o as { name?: string }).name) out.push((o as { name: string }).name);
  return out;
}

describe("oz0 hold and oz0 job erase: legal holds on one tree's data and erasure of one tree", () => {
  it("OFF-10 FILE-6 a held tree survives an erase and the retention sweep, what it stores after the hold too, and goes once the hold is cleared", async () => {
    const s = await stores("holds");
    const filesState = new RedisFilesStore(redis, keys);
    const tenant = uid("tenant");
    const [root, child, run] = [uid("job"), uid("job"), uid("run")];
    await tree(s, filesState, tenant, root, child, run, 10);
    const early = await s.files.store({ tenant, tree: root }, Buffer.from(`result of ${root}`));

    const set = await oz0(["hold", "set", "--tenant", tenant, "--tree", root, "--reason", "litigation hold, matter 114", "--as", "dana", "--json"], s.env);
    expect(set.code, set.err).toBe(0);
    expect(JSON.parse(set.out)).toMatchObject({ made: true, files_held: [early.ref], trace_parts: 2, jobs: [child, root].sort() });
    expect(await s.files.isHeld(tenant, early.ref)).toBe(true);
    const copies = await names(s.files.client, s.files.bucket, heldTracePrefix(tenant, root));
    expect(copies).toHaveLength(2);
    for (const c of copies) expect(await heldStatus(s, c)).toBe("ON");

    // Stored after the hold: the record keeps it from erasure; set again puts the MinIO hold on it.
    const late = await s.files.store({ tenant, tree: root }, Buffer.from(`later result of ${root}`));
    const refused = await oz0(["job", "erase", "--tenant", tenant, "--job", child, "--reason", "subject's request", "--yes"], s.env);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(new RegExp(`tree ${root} of tenant ${tenant} is under a legal hold \\(set by dana at .*: litigation hold, matter 114\\): nothing erased; held back: 2 file\\(s\\)`));
    // The sweep as retention runs it, with the held trees of Redis, 91 days on: the late file has no MinIO hold yet, the record keeps it.
    const heldNow = await new TreeHolds(redis, keys).heldTrees(tenant);
    expect([...heldNow]).toEqual([root]);
    const byRecord = await s.files.sweep(Date.now() + RETENTION_MS + 24 * 3600_000, { tenant, heldTree: (_t, t) => heldNow.has(t) });
    expect(byRecord.held).toEqual([`${tenant}:${early.ref}`, `${tenant}:${late.ref}`].sort());
    expect(byRecord.deletedFiles).toEqual([]);
    const again = await oz0(["hold", "set", "--tenant", tenant, "--tree", root, "--reason", "another reason", "--json"], s.env);
    expect(again.code, again.err).toBe(0);
    expect(JSON.parse(again.out)).toMatchObject({ made: false, hold: { reason: "litigation hold, matter 114", by: "dana" }, files_held: [early.ref, late.ref].sort(), trace_copies: 0 });

    // The sweep without the held trees, 91 days on: both files now carry a MinIO hold, kept and named.
    const swept = await s.files.sweep(Date.now() + RETENTION_MS + 24 * 3600_000, { tenant });
    expect(swept.held).toEqual(expect.arrayContaining([`${tenant}:${early.ref}`, `${tenant}:${late.ref}`]));
    expect((await s.files.read({ tenant, tree: root }, late.ref)).bytes.toString()).toBe(`later result of ${root}`);
    expect((await s.traces.read(root, tenant)).jobs).toHaveLength(1);
    expect(await redis.exists(keys.limits(tenant, root))).toBe(1);

    const list = await oz0(["hold", "list", "--tenant", tenant], s.env);
    expect([list.code, list.out]).toEqual([0, expect.stringContaining(`${root}  held by dana since`) as string]);

    const cleared = await oz0(["hold", "clear", "--tenant", tenant, "--tree", root, "--reason", "matter 114 settled", "--as", "eve", "--json"], s.env);
    expect(cleared.code, cleared.err).toBe(0);
    expect(JSON.parse(cleared.out)).toMatchObject({ by: "eve", was: { by: "dana", reason: "litigation hold, matter 114" }, files_released: [early.ref, late.ref].sort(), trace_copies_removed: 2 });
    expect(await s.files.isHeld(tenant, early.ref)).toBe(false);
    expect(await names(s.files.client, s.files.bucket, heldTracePrefix(tenant, root))).toEqual([]);
    const clearedAgain = await oz0(["hold", "clear", "--tenant", tenant, "--tree", root, "--reason", "x"], s.env);
    expect([clearedAgain.code, clearedAgain.err]).toEqual([1, `tree ${root} of tenant ${tenant} is not held: nothing to clear (see oz0 hold list --tenant ${tenant})\n`]);
    expect((await oz0(["hold", "list", "--tenant", tenant], s.env)).out).toBe(`no tree of tenant ${tenant} is held\n`);

    const erased = await oz0(["job", "erase", "--tenant", tenant, "--tree", root, "--reason", "subject's request", "--yes", "--json"], s.env);
    expect(erased.code, erased.err).toBe(0);
    expect(JSON.parse(erased.out)).toMatchObject({ files: { erased: [early.ref, late.ref].sort(), held: [] }, traces: { erased: 1 } });
    await expect(s.files.read({ tenant, tree: root }, early.ref)).rejects.toThrow(new FileNotFound(early.ref).message);

    const audit = await collect<AuditEvent>("oz0.audit", "AuditEvent", await serde(), (e) => e.tenant === tenant && e.kind.startsWith("tree."), 4, 60_000);
    const byKind = new Map(audit.map((e) => [e.kind, e]));
    expect(audit.filter((e) => e.kind === "tree.held").map((e) => e.facts.first).sort()).toEqual(["false", "true"]);
    expect(audit.find((e) => e.kind === "tree.held" && e.facts.first === "true")).toMatchObject({ actor: "dana", reason: "litigation hold, matter 114", tree_id: root, facts: { refs: early.ref }, numbers: { files_held: 1, trace_parts_held: 2 } });
    expect(byKind.get("tree.released")).toMatchObject({ actor: "eve", reason: "matter 114 settled", facts: { held_by: "dana" }, numbers: { files_released: 2 } });
    expect(byKind.get("tree.erased")).toMatchObject({ reason: "subject's request", numbers: { files_erased: 2, trace_parts_erased: 1 } });
    for (const e of audit) expect(JSON.stringify(e)).not.toContain(`result of ${root}`);
  });

  it("FILE-6 OFF-10 an erase of one tree leaves its neighbour's files, traces and counters untouched; its reads get not found; refusals are clear", async () => {
    const s = await stores("tree-erase");
    const filesState = new RedisFilesStore(redis, keys);
    const tenant = uid("tenant");
    const [a, aChild, aRun] = [uid("job"), uid("job"), uid("run")];
    const [b, bChild, bRun] = [uid("job"), uid("job"), uid("run")];
    await tree(s, filesState, tenant, a, aChild, aRun, 20);
    await tree(s, filesState, tenant, b, bChild, bRun, 30);
    const shared = Buffer.from(`the same bytes, stored by two trees of ${tenant}`);
    const aOwn = await s.files.store({ tenant, tree: a }, Buffer.from(`a's own result ${a}`));
    const aShared = await s.files.store({ tenant, tree: a }, shared);
    const bOwn = await s.files.store({ tenant, tree: b }, Buffer.from(`b's own result ${b}`));
    await s.files.store({ tenant, tree: b }, shared);
    const bLimits = await redis.hgetall(keys.limits(tenant, b));

    const noYes = await oz0(["job", "erase", "--tenant", tenant, "--tree", a, "--reason", "subject's request"], s.env);
    expect(noYes.code).toBe(2);
    expect(noYes.err).toMatch(new RegExp(`job erase removes tree ${a} of tenant ${tenant} for good: 2 file\\(s\\) and offloaded result\\(s\\), 1 trace part\\(s\\) of 2 job\\(s\\) .*Give --yes to erase`));
    const noReason = await oz0(["job", "erase", "--tenant", tenant, "--tree", a, "--yes"], s.env);
    expect([noReason.code, noReason.err]).toEqual([2, `job erase: give --reason "why"; it is audited with it\n`]);
    const unknownJob = await oz0(["job", "erase", "--tenant", tenant, "--job", uid("job"), "--reason", "r", "--yes"], s.env);
    expect(unknownJob.code).toBe(1);
    expect(unknownJob.err).toMatch(/has no job .* whose tree is known/);
    const unknownTree = await oz0(["job", "erase", "--tenant", tenant, "--tree", uid("tree"), "--reason", "r", "--yes"], s.env);
    expect(unknownTree.code).toBe(1);
    expect(unknownTree.err).toMatch(new RegExp(`tenant ${tenant} has no tree .*: no file, trace part or state of it is kept .*; nothing to erase`));
    expect((await s.files.read({ tenant, tree: a }, aOwn.ref)).size).toBeGreaterThan(0);

    // The child job names its tree through its trace.
    const erased = await oz0(["job", "erase", "--tenant", tenant, "--job", aChild, "--reason", "subject's request", "--yes", "--as", "eve", "--json"], s.env);
    expect(erased.code, erased.err).toBe(0);
    const said = JSON.parse(erased.out) as { tree: string; job: string; files: { erased: string[] }; traces: { erased: number }; redis: { erased: string[] } };
    expect(said).toMatchObject({ tree: a, job: aChild, files: { erased: [aOwn.ref, aShared.ref].sort() }, traces: { erased: 1 } });
    expect(said.redis.erased).toEqual(expect.arrayContaining([keys.limits(tenant, a), keys.filesTree(tenant, a), keys.jobLabels(tenant, a, aChild), keys.loopFlags(tenant, aRun)]));

    // Tree a: not found, as for a file never stored; no trace, no key of its hash tag, no loop state.
    const never = `oz0-file:sha256:${"0".repeat(64)}`;
    const neverMessage = await s.files.read({ tenant, tree: a }, never).catch((e: Error) => e.message);
    for (const ref of [aOwn.ref, aShared.ref]) {
      const message = await s.files.read({ tenant, tree: a }, ref).catch((e: unknown) => (e instanceof FileNotFound ? e.message.replace(ref, never) : `not FileNotFound: ${String(e)}`));
      expect(message).toBe(neverMessage);
    }
    expect((await s.traces.read(a, tenant)).jobs).toEqual([]);
    expect((await s.traces.read(aChild, tenant)).jobs).toEqual([]);
    expect(await redis.keys(keys.treeKeysPattern(tenant, a))).toEqual([]);
    expect(await redis.exists(keys.loopFlags(tenant, aRun))).toBe(0);

    // Tree b: its files (the shared bytes too), traces, counters and loop state as they were.
    expect((await s.files.read({ tenant, tree: b }, bOwn.ref)).bytes.toString()).toBe(`b's own result ${b}`);
    expect((await s.files.read({ tenant, tree: b }, aShared.ref)).bytes.equals(shared)).toBe(true);
    expect((await s.traces.read(b, tenant)).jobs).toHaveLength(1);
    expect((await s.traces.read(bChild, tenant)).jobs).toHaveLength(1);
    expect(await redis.hgetall(keys.limits(tenant, b))).toEqual(bLimits);
    expect(await redis.smembers(keys.jobLabels(tenant, b, bChild))).toEqual(["pii"]);
    expect(await redis.hget(keys.loopFlags(tenant, bRun), "stop")).toBe("0");

    const twice = await oz0(["job", "erase", "--tenant", tenant, "--tree", a, "--reason", "r", "--yes"], s.env);
    expect(twice.code).toBe(1);
    expect(twice.err).toMatch(/has no tree .*nothing to erase/);

    const [entry] = await collect<AuditEvent>("oz0.audit", "AuditEvent", await serde(), (e) => e.tenant === tenant && e.kind === "tree.erased", 1, 60_000);
    expect(entry).toMatchObject({ actor: "eve", reason: "subject's request", tree_id: a, job_id: aChild, numbers: { files_erased: 2, trace_parts_erased: 1 } });
    expect(entry?.facts.redis_keys).toContain(keys.limits(tenant, a));
    expect(JSON.stringify(entry)).not.toContain("own result");
  });

  it("FILE-6 OFF-10 a running tree is not erased, hold set on an unknown tree holds nothing, and the Redis erasure checks the hold in the same step", async () => {
    const s = await stores("tree-erase");
    const filesState = new RedisFilesStore(redis, keys);
    const tenant = uid("tenant");
    const root = uid("job");
    await filesState.start(tenant, root, { event: uid("evt"), job: root, conversation: null }, { source: "t:0", offset: "1" });
    const file = await s.files.store({ tenant, tree: root }, Buffer.from(`running ${root}`));
    const running = await oz0(["job", "erase", "--tenant", tenant, "--tree", root, "--reason", "r", "--yes"], s.env);
    expect([running.code, running.err]).toEqual([1, `tree ${root} of tenant ${tenant} runs (its root job has not ended): end or cancel it first; nothing erased\n`]);
    expect((await s.files.read({ tenant, tree: root }, file.ref)).size).toBeGreaterThan(0);
    const ghost = uid("tree");
    const unknown = await oz0(["hold", "set", "--tenant", tenant, "--tree", ghost, "--reason", "r"], s.env);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/has no tree .*; nothing held/);
    expect(await redis.exists(keys.treeHold(tenant, ghost))).toBe(0);
    // The script that erases a tree's keys checks the hold in the same step, and touches no key of another tag.
    const holdKey = keys.treeHold(tenant, root);
    const tag = holdKey.slice(0, -"hold".length);
    await redis.hset(holdKey, { at: "1", reason: "r", by: "dana" });
    expect(await runScript(redis, "treeErase", [holdKey], [tag, keys.filesTree(tenant, root)])).toBe(-1);
    expect(await redis.exists(keys.filesTree(tenant, root))).toBe(1);
    await redis.del(holdKey);
    await expect(runScript(redis, "treeErase", [holdKey], [tag, keys.limits(tenant, uid("job"))])).rejects.toThrow(/is not a key of the tree/);
    expect(await runScript(redis, "treeErase", [holdKey], [tag, keys.filesTree(tenant, root)])).toBe(1);
    const noReason = await oz0(["hold", "set", "--tenant", tenant, "--tree", root], s.env);
    expect([noReason.code, noReason.err]).toEqual([2, `hold set: give --reason "why"; it is audited with it\n`]);
  });

  it("OFF-10 FILE-6 a hold set while the tree is being erased is refused and says so (the erasure began first); a held tree is never marked; the mark is no key of the tree", async () => {
    const s = await stores("tree-erase");
    const filesState = new RedisFilesStore(redis, keys);
    const holds = new TreeHolds(redis, keys);
    const tenant = uid("tenant");
    const [root, child, run] = [uid("job"), uid("job"), uid("run")];
    await tree(s, filesState, tenant, root, child, run, 70);
    const at = Date.parse("2026-12-03T04:00:00Z");
    expect(await holds.beginErase(tenant, root, "person:eve", at)).toBe(true);
    expect(await redis.pttl(keys.treeErasing(tenant, root))).toBeGreaterThan(3_500_000);
    const during = await oz0(["hold", "set", "--tenant", tenant, "--tree", root, "--reason", "inquiry", "--as", "dana"], s.env);
    expect([during.code, during.err]).toEqual([1, `tree ${root} of tenant ${tenant} is being erased (by person:eve, since 2026-12-03T04:00:00.000Z): a hold can no longer keep it; nothing held\n`]);
    expect(await redis.exists(keys.treeHold(tenant, root))).toBe(0);
    await holds.endErase(tenant, root);
    const after = await oz0(["hold", "set", "--tenant", tenant, "--tree", root, "--reason", "inquiry", "--as", "dana"], s.env);
    expect(after.code, after.err).toBe(0);
    // Held now: an erasure cannot begin, and the command says the hold kept it, with nothing removed.
    expect(await holds.beginErase(tenant, root, "person:eve", at)).toBe(false);
    expect(await redis.exists(keys.treeErasing(tenant, root))).toBe(0);
    const erase = await oz0(["job", "erase", "--tenant", tenant, "--tree", root, "--reason", "r", "--yes", "--as", "eve"], s.env);
    expect(erase.code).toBe(1);
    expect(await redis.exists(keys.limits(tenant, root))).toBe(1);
    expect(await redis.exists(keys.treeErasing(tenant, root))).toBe(0);
    const clear = await oz0(["hold", "clear", "--tenant", tenant, "--tree", root, "--reason", "inquiry closed", "--as", "dana"], s.env);
    expect(clear.code, clear.err).toBe(0);
    // An erasure ends its mark whatever happens, and erases the tree's keys but never the mark as one of them.
    const erased = await oz0(["job", "erase", "--tenant", tenant, "--tree", root, "--reason", "r", "--yes", "--as", "eve", "--json"], s.env);
    expect(erased.code, erased.err).toBe(0);
    expect(JSON.stringify(JSON.parse(erased.out))).not.toContain(":erasing");
    expect(await redis.exists(keys.treeErasing(tenant, root), keys.limits(tenant, root))).toBe(0);
  });
  it("OFF-10 FILE-6 tenant erase keeps a held tree whole, what it stored after the hold included, names it, and erases it once the hold is cleared", async () => {
    const s = await stores("holds");
    const filesState = new RedisFilesStore(redis, keys);
    const tenant = uid("tenant");
    const [held, heldChild, heldRun] = [uid("job"), uid("job"), uid("run")];
    const [other, otherChild, otherRun] = [uid("job"), uid("job"), uid("run")];
    await tree(s, filesState, tenant, held, heldChild, heldRun, 40);
    await tree(s, filesState, tenant, other, otherChild, otherRun, 50);
    const early = await s.files.store({ tenant, tree: held }, Buffer.from(`early ${held}`));
    const gone = await s.files.store({ tenant, tree: other }, Buffer.from(`other ${other}`));
    const set = await oz0(["hold", "set", "--tenant", tenant, "--job", heldChild, "--reason", "regulator's inquiry"], s.env);
    expect(set.code, set.err).toBe(0);
    const late = await s.files.store({ tenant, tree: held }, Buffer.from(`late ${held}`));

    const erased = await oz0(["tenant", "erase", tenant, "--reason", "contract ended", "--yes", "--json"], s.env);
    expect(erased.code, erased.err).toBe(0);
    expect(JSON.parse(erased.out)).toMatchObject({ files: { erased: 1, held: [early.ref, late.ref].sort() }, traces: { erased: 1, kept: 1 }, heldTrees: [held] });
    expect((await s.files.read({ tenant, tree: held }, late.ref)).bytes.toString()).toBe(`late ${held}`);
    expect((await s.files.read({ tenant, tree: held }, early.ref)).bytes.toString()).toBe(`early ${held}`);
    expect((await s.traces.read(heldChild, tenant)).jobs).toHaveLength(1);
    await expect(s.files.read({ tenant, tree: other }, gone.ref)).rejects.toThrow(FileNotFound);
    expect((await s.traces.read(other, tenant)).jobs).toEqual([]);

    expect((await oz0(["hold", "clear", "--tenant", tenant, "--tree", held, "--reason", "inquiry closed"], s.env)).code).toBe(0);
    const after = await oz0(["tenant", "erase", tenant, "--reason", "contract ended", "--yes", "--json"], s.env);
    expect(after.code, after.err).toBe(0);
    expect(JSON.parse(after.out)).toMatchObject({ files: { erased: 2, held: [] }, traces: { erased: 1 }, heldTrees: [] });
    await expect(s.files.read({ tenant, tree: held }, late.ref)).rejects.toThrow(FileNotFound);
  });
});
