import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Producer } from "kafkajs";
import { resolveFileArguments, FILES_META_KEY, FILES_NOT_FOUND_META_KEY } from "../../processors/files/arguments.ts";
import { fileArgumentsEnv, keptThreshold } from "../../processors/files/env.ts";
import { RedisFilesStore, THRESHOLD_HELD_MS } from "../../processors/files/redis-store.ts";
import type { TreeRecord } from "../../processors/files/store.ts";
import { FILES_HANDED, filesJobsProcessor } from "../../processors/files-jobs/processor.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import type { RunningProcessor } from "../../processors/runner/runner.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { AuditEvent, Decision, JobEvent } from "../../schemas/types.ts";
import { FileNotFound } from "../../store/file-errors.ts";
import { FileStore } from "../../store/files.ts";
import { minioClient } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { Keys } from "../../store/redis/keys.ts";
import { uid } from "../support/events.ts";
import { collect, endpoints, kafka, serde, startOnKafka } from "../support/kafka.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("files-jobs on real Kafka, Redis and MinIO", () => {
  let s: Serde;
  let producer: Producer;
  let redis: RedisClient;
  let files: FileStore;
  let state: RedisFilesStore;
  let running: RunningProcessor | undefined;
  const config = staticConfig([]);
  const bucket = uid("oz0-files").toLowerCase();
  const tenant = uid("acme");
  const other = uid("globex");

  beforeAll(async () => {
    s = await serde();
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    redis = redisClient(endpoints());
    files = new FileStore({ client: minioClient(endpoints()), bucket, keys: PayloadKeys.fromMaster(Buffer.alloc(32, 5)) });
    await files.ensureBucket();
    state = new RedisFilesStore(redis, new Keys(uid("files").replace(/-/g, "_")));
    running = await startOnKafka(filesJobsProcessor, { state, files, config }, s);
  });

  afterAll(async () => {
    await running?.stop();
    await producer?.disconnect();
    redis?.disconnect();
    for (const t of [tenant, other]) await files.eraseTenant(t).catch(() => undefined);
    await files.client.removeBucket(bucket).catch(() => undefined);
  });

  const job = (tree: string, over: Partial<JobEvent> = {}): JobEvent => ({
    id: uid("evt"), tenant, tree_id: tree, job_id: tree, parent_job_id: null, run_id: "run-1", agent: "fixer", kind: "started", started_by: "agent", delegation: "none", depth: 0, outcome: null,
    principal: null, team: null, permissions: [], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts: Date.now(), ...over,
  });
  const send = (events: JobEvent[]) => producer.send({ topic: "oz0.jobs", messages: events.map((e) => ({ key: e.tree_id, value: s.encode("JobEvent", e) })) });
  /** Starts emit nothing when all is well: wait until the processor has recorded the tree. */
  const recorded = async (tree: string, until: (r: TreeRecord) => boolean = () => true): Promise<TreeRecord> => {
    for (let waited = 0; waited < 60_000; waited += 200) {
      const r = await state.tree(tenant, tree);
      if (r && until(r)) return r;
      await sleep(200);
    }
    throw new Error(`files-jobs did not record tree ${tree} within 60 s`);
  };
  const bytes = (what: string) => Buffer.from(`${what} ${uid("x")}`);

  it("FILE-3 later turns read earlier turns' files; a fork reads up to its fork point, never a later turn's or another branch's", async () => {
    const conv = uid("conv");
    const [t1, t2, t3, fork] = [uid("t1"), uid("t2"), uid("t3"), uid("fork")];
    await send([job(t1, { conversation_id: conv })]);
    await recorded(t1);
    await send([job(t2, { conversation_id: conv, previous_turn: t1 }), job(fork, { conversation_id: conv, previous_turn: t1 })]);
    await Promise.all([recorded(t2), recorded(fork)]);
    await send([job(t3, { conversation_id: conv, previous_turn: t2 })]);
    await recorded(t3);
    const f1 = (await files.store({ tenant, tree: t1 }, bytes("turn 1"))).ref;
    const f2 = (await files.store({ tenant, tree: t2 }, bytes("turn 2"))).ref;
    const fFork = (await files.store({ tenant, tree: fork }, bytes("fork"))).ref;

    const reads = async (tree: string, ref: string): Promise<boolean> => {
      try {
        await files.read(await state.reader(tenant, tree), ref);
        return true;
      } catch (err) {
        if (err instanceof FileNotFound) return false;
        throw err;
      }
    };
    expect([await reads(t3, f1), await reads(t3, f2), await reads(t3, fFork)]).toEqual([true, true, false]);
    expect([await reads(fork, f1), await reads(fork, f2)]).toEqual([true, false]);
    expect([await reads(t1, f2), await reads(t1, fFork)]).toEqual([false, false]);
    // The fill-in resolves file arguments through the same lineage.
    const args = await resolveFileArguments({ tenant, tree_id: fork }, { a: f1, b: f2 }, fileArgumentsEnv(state, files));
    const meta = args?._meta as Record<string, Record<string, string>>;
    expect(Object.keys(meta[FILES_META_KEY] ?? {})).toEqual(["a"]);
    expect(Object.keys(meta[FILES_NOT_FOUND_META_KEY] ?? {})).toEqual(["b"]);
  });

  it("FILE-4 a person with the content permission starts a job with another job's file: audited as job.files_handed, granted to the new tree; another tenant's file is left out", async () => {
    const [old, fresh] = [uid("old"), uid("new")];
    const handed = (await files.store({ tenant, tree: old }, bytes("archive"))).ref;
    const foreign = (await files.store({ tenant: other, tree: old }, bytes("private chat"))).ref;
    await send([job(fresh, { started_by: "person", principal: "ana", permissions: ["content"], files: [handed, foreign] })]);
    const [entry] = await collect<AuditEvent>("oz0.audit", "AuditEvent", s, (a) => a.tree_id === fresh, 1, 60_000);
    expect(entry).toMatchObject({ kind: FILES_HANDED, tenant, actor: "ana", facts: { refs: handed, started_by: "person" }, numbers: { handed: 1, left_out: 1 } });
    expect((await files.read({ tenant, tree: fresh }, handed)).size).toBeGreaterThan(0);
    await expect(files.read({ tenant, tree: fresh }, foreign)).rejects.toBeInstanceOf(FileNotFound);
  });

  it("FILE-4 FILE-5 an erased file is not handed and its tree holds no files any more; a handed file is readable without reading its bytes", async () => {
    const [old, fresh] = [uid("old"), uid("new")];
    const erased = (await files.store({ tenant, tree: old }, bytes("erased"))).ref;
    expect(await files.holdsFiles(tenant, old)).toBe(true);
    await files.eraseTree(tenant, old);
    expect(await files.holdsFiles(tenant, old)).toBe(false);
    await expect(files.hand(tenant, erased, fresh)).rejects.toBeInstanceOf(FileNotFound);
    const kept = (await files.store({ tenant, tree: old }, bytes("kept"), { labels: ["pii"] })).ref;
    expect(await files.hand(tenant, kept, fresh)).toMatchObject({ ref: kept, labels: ["pii"] });
    expect(await files.readable({ tenant, tree: fresh }, kept)).toMatchObject({ ref: kept, labels: ["pii"] });
    await expect(files.readable({ tenant: other, tree: fresh }, kept)).rejects.toBeInstanceOf(FileNotFound);
  });

  it("FILE-4 without the content permission the start is refused on oz0.admissions and nothing is handed", async () => {
    const [old, fresh] = [uid("old"), uid("new")];
    const ref = (await files.store({ tenant, tree: old }, bytes("archive"))).ref;
    await send([job(fresh, { started_by: "app", principal: "ci-bot", permissions: [], files: [ref] })]);
    const [refusal] = await collect<Decision>("oz0.admissions", "Decision", s, (d) => d.tree_id === fresh, 1, 60_000);
    expect(refusal).toMatchObject({ processor: "files-jobs", verdict: "refuse", reason_code: "content_permission", limit: "permissions.content" });
    expect(refusal?.message).toContain("content permission");
    await expect(files.read({ tenant, tree: fresh }, ref)).rejects.toBeInstanceOf(FileNotFound);
  });

  it("FILE-5 a chosen tree ID is refused when its ended tree holds files or it is a conversation's turn, and follows a running job handing it no files", async () => {
    const [ended, busy, turn] = [uid("ended"), uid("busy"), uid("turn")];
    await send([job(ended), job(busy), job(turn, { conversation_id: uid("conv") })]);
    await Promise.all([recorded(ended), recorded(busy), recorded(turn)]);
    await files.store({ tenant, tree: ended }, bytes("left behind"));
    await send([job(ended, { kind: "ended", outcome: "done" })]);
    await recorded(ended, (r) => r.status === "ended");
    const elsewhere = (await files.store({ tenant, tree: uid("elsewhere") }, bytes("archive"))).ref;

    await send([
      job(ended, { job_id: uid("again"), chosen_tree_id: true }),
      job(busy, { job_id: uid("follower"), chosen_tree_id: true, started_by: "person", principal: "ana", permissions: ["content"], files: [elsewhere] }),
      job(turn, { job_id: uid("taker"), chosen_tree_id: true }),
    ]);
    const decisions = await collect<Decision>("oz0.admissions", "Decision", s, (d) => [ended, busy, turn].includes(d.tree_id), 3, 60_000);
    const by = (tree: string) => decisions.find((d) => d.tree_id === tree);
    expect(by(ended)).toMatchObject({ verdict: "refuse", reason_code: "tree_holds_files" });
    expect(by(turn)).toMatchObject({ verdict: "refuse", reason_code: "tree_is_turn" });
    expect(by(busy)).toMatchObject({ verdict: "allow", reason_code: "follows_running_job" });
    await expect(files.read({ tenant, tree: busy }, elsewhere)).rejects.toBeInstanceOf(FileNotFound);
    expect((await state.tree(tenant, busy))?.rootJob).toBe(busy);
  });

  it("FILE-5 FILE-3 the tree record and the turns in Redis are idempotent: a replayed start changes nothing, and a turn's first record stands", async () => {
    const tree = uid("tree");
    const conv = uid("conv");
    const at = (offset: number) => ({ source: "oz0.jobs:3", offset: String(offset) });
    await state.start(tenant, tree, { event: "e1", job: tree, conversation: conv }, at(5));
    await state.end(tenant, tree, tree, at(6));
    await state.start(tenant, tree, { event: "e1", job: tree, conversation: conv }, at(5));
    expect(await state.tree(tenant, tree)).toEqual({ rootJob: tree, startEvent: "e1", status: "ended", conversation: conv });
    const first = uid("first");
    await state.start(tenant, first, { event: "e0", job: first, conversation: conv }, at(1));
    await state.turn(tenant, conv, first, null);
    await state.turn(tenant, conv, tree, first);
    await state.turn(tenant, conv, tree, uid("elsewhere"));
    expect(await state.reader(tenant, tree)).toEqual({ tenant, tree, earlierTurns: [first] });
  });

  it("OFF-13 a job keeps the threshold resolved at its start in Redis: a tenant change mid-job moves only a new job's", async () => {
    const tree = uid("tree");
    config.set("tenant", tenant, { offload: { default: 3_000 } });
    await send([job(tree)]);
    await recorded(tree);
    config.set("tenant", tenant, { offload: { default: 25_000 } });
    const threshold = keptThreshold(state, config);
    expect(await threshold({ tenant, tree_id: tree, job_id: tree, agent: "fixer" })).toBe(3_000);
    expect(await threshold({ tenant, tree_id: tree, job_id: uid("next-job"), agent: "fixer" })).toBe(25_000);
  });

  it("OFF-13 a process holds a job's kept threshold for a few minutes at most: within them Redis is not asked, after them it is, and a threshold gone from Redis is kept anew", async () => {
    let now = 1_000_000;
    const held = new RedisFilesStore(redis, new Keys(), () => now);
    const tree = uid("tree");
    const key = new Keys().jobOffload(tenant, tree, tree);
    expect(await held.threshold(tenant, tree, tree, 4_000)).toBe(4_000);
    expect(Number(await redis.pttl(key))).toBeGreaterThan(29 * 24 * 3600 * 1000);
    // Deleted behind the process's back: within the held time the process answers as it did.
    await redis.del(key);
    now += THRESHOLD_HELD_MS - 1;
    expect(await held.threshold(tenant, tree, tree, 9_000)).toBe(4_000);
    expect(await redis.exists(key)).toBe(0);
    // After it, Redis is asked again: the threshold is kept anew, as the settings resolve it now.
    now += 2;
    expect(await held.threshold(tenant, tree, tree, 9_000)).toBe(9_000);
    expect(await redis.get(key)).toBe("9000");
    // A threshold kept for less than the held time is held only as long as Redis keeps it.
    await redis.pexpire(key, 1_000);
    await redis.set(key, "off", "KEEPTTL");
    const other = new RedisFilesStore(redis, new Keys(), () => now);
    expect(await other.threshold(tenant, tree, tree, 7_000)).toBe("off");
    await redis.del(key);
    now += 1_001;
    expect(await other.threshold(tenant, tree, tree, 7_000)).toBe(7_000);
  });
});
