import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keptThreshold } from "../../processors/files/env.ts";
import { RedisFilesStore } from "../../processors/files/redis-store.ts";
import { filesJobsProcessor, type FilesJobsEnv } from "../../processors/files-jobs/processor.ts";
import { RedisLoopStore } from "../../processors/loops/redis-store.ts";
import { jobLabels, joinJobLabels } from "../../processors/read-result/index.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { TestDriver } from "../../processors/runner/test-driver.ts";
import type { Decision, JobEvent } from "../../schemas/types.ts";
import { FileStore } from "../../store/files.ts";
import { minioClient } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { uid } from "../support/events.ts";
import { endpoints } from "../support/kafka.ts";

/**
 * FILE-5 on the real Redis and MinIO: the files-jobs core over the Redis state and the file
 * store, with two tenants that use the same tree and job IDs.
 */
describe("FILE-5 tree records per tenant and tree on the real Redis and MinIO", () => {
  let redis: RedisClient;
  let files: FileStore;
  let state: RedisFilesStore;
  const keys = new Keys(uid("trees").replace(/-/g, "_"));
  const bucket = uid("oz0-trees").toLowerCase();
  const acme = uid("acme");
  const globex = uid("globex");
  const config = staticConfig([]);

  beforeAll(async () => {
    redis = redisClient(endpoints(), { maxRetriesPerRequest: 3 });
    files = new FileStore({ client: minioClient(endpoints()), bucket, keys: PayloadKeys.fromMaster(Buffer.alloc(32, 9)) });
    await files.ensureBucket();
    state = new RedisFilesStore(redis, keys);
  });

  afterAll(async () => {
    if (files) {
      for (const t of [acme, globex]) await files.eraseTenant(t).catch(() => undefined);
      await files.client.removeBucket(bucket).catch(() => undefined);
    }
    redis?.disconnect();
  });

  const job = (tenant: string, tree: string, over: Partial<JobEvent> = {}): JobEvent => ({
    id: uid("evt"), tenant, tree_id: tree, job_id: tree, parent_job_id: null, run_id: "run-1", agent: "fixer", kind: "started", started_by: "agent", delegation: "none", depth: 0, outcome: null,
    principal: null, team: null, permissions: [], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts: Date.now(), ...over,
  });
  const chosen = { chosen_tree_id: true, started_by: "person" as const, principal: "gus" };

  it("FILE-5 a start under another tenant's tree ID sees none of its record (a turn, a running job, an ended tree with files) and changes none of it", async () => {
    const driver = new TestDriver<JobEvent, FilesJobsEnv>(filesJobsProcessor, { state, files, config });
    const turn = uid("shared");
    const ended = uid("ended");
    const conv = uid("conv");
    await driver.pipe([job(acme, turn, { conversation_id: conv }), job(acme, ended)]);
    await files.store({ tenant: acme, tree: ended }, Buffer.from(`kept ${uid("x")}`));
    await driver.pipe([job(acme, ended, { kind: "ended" })]);
    const acmeTurn = await state.tree(acme, turn);
    expect(acmeTurn).toMatchObject({ rootJob: turn, status: "running", conversation: conv });
    expect(await state.tree(acme, ended)).toMatchObject({ status: "ended" });

    // globex chooses acme's tree IDs: it is neither refused (a turn; an ended tree with files) nor made to follow (a running job).
    await driver.pipe([job(globex, turn, { ...chosen, job_id: "g-job" }), job(globex, ended, { ...chosen, job_id: "g-ended" })]);
    expect(driver.read<Decision>("oz0.admissions")).toEqual([]);
    expect(await state.tree(globex, turn)).toMatchObject({ rootJob: "g-job", status: "running", conversation: null });

    // globex ending a root job of acme's job ID changes nothing of acme's.
    await driver.pipe([job(globex, turn, { kind: "ended", job_id: turn })]);
    expect(await state.tree(acme, turn)).toEqual(acmeTurn);
    expect(await state.tree(globex, turn)).toMatchObject({ rootJob: "g-job", status: "running" });
    expect(await state.reader(globex, turn)).toEqual({ tenant: globex, tree: turn });

    // Two records in Redis, one per tenant, each under its tenant's hash tag.
    expect(await redis.hget(keys.filesTree(acme, turn), "root_job")).toBe(turn);
    expect(await redis.hget(keys.filesTree(globex, turn), "root_job")).toBe("g-job");

    // acme's own start under its turn's ID still sees its record.
    await driver.pipe([job(acme, turn, { ...chosen, job_id: "a-again" })]);
    expect(driver.read<Decision>("oz0.admissions").map((d) => d.reason_code)).toEqual(["tree_is_turn"]);
  });

  it("FILE-5 OFF-9 OFF-13 a job's kept threshold and joined labels are its tenant's: the same tree and job ID in another tenant keeps its own", async () => {
    const tree = uid("tree");
    config.set("tenant", acme, { offload: { default: 3_000 } });
    config.set("tenant", globex, { offload: { default: 25_000 } });
    const threshold = keptThreshold(state, config);
    expect(await threshold({ tenant: acme, tree_id: tree, job_id: tree, agent: "fixer" })).toBe(3_000);
    expect(await threshold({ tenant: globex, tree_id: tree, job_id: tree, agent: "fixer" })).toBe(25_000);
    expect(await redis.get(keys.jobOffload(acme, tree, tree))).toBe("3000");
    expect(await redis.get(keys.jobOffload(globex, tree, tree))).toBe("25000");

    expect(await joinJobLabels(redis, keys, { tenant: acme, tree, job: tree }, ["pii"])).toBe(1);
    expect(await jobLabels(redis, keys, { tenant: globex, tree, job: tree })).toEqual([]);
    expect(await joinJobLabels(redis, keys, { tenant: globex, tree, job: tree }, [])).toBe(0);
    expect(await jobLabels(redis, keys, { tenant: acme, tree, job: tree })).toEqual(["pii"]);
  });

  it("LOOP-2 two tenants' runs of the same run ID keep their own loop state and flags in Redis", async () => {
    const loops = new RedisLoopStore(redis, keys, { runTtlSeconds: 600 });
    const run = uid("run");
    const source = "oz0.tool-calls:0";
    await loops.write("calls", [{ tenant: acme, run, source, at: "4", from: "4", state: '{"acme":1}', memos: [["4", "[]"]], flags: [["stopped", "acme stopped"]], deadlines: [], settled: [], counts: [] }]);
    const [theirs, mine] = await loops.read("calls", [
      { tenant: globex, run, source, offsets: ["4"] },
      { tenant: acme, run, source, offsets: ["4"] },
    ]);
    expect(theirs).toMatchObject({ state: null, at: null, memos: new Map(), flags: { stopped: null } });
    expect(mine).toMatchObject({ state: '{"acme":1}', at: "4", flags: { stopped: "acme stopped" } });
    // globex's first write at a lower offset is its own, not a replay of acme's.
    await loops.write("calls", [{ tenant: globex, run, source, at: "2", from: "2", state: '{"globex":1}', memos: [], flags: [], deadlines: [], settled: [], counts: [] }]);
    const [after] = await loops.read("calls", [{ tenant: globex, run, source, offsets: [] }]);
    expect(after).toMatchObject({ state: '{"globex":1}', at: "2", flags: { stopped: null } });
    expect(await redis.hget(keys.loopFlags(acme, run), "stopped")).toBe("acme stopped");
  });
});
