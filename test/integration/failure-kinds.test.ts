/**
 * Each kind of failure a store can meet, produced by a real server, and what it becomes at the
 * store's seam: a TransientError (the batch is tried again) or a StoreRefused naming the key
 * with the server's words (its inputs are dead-lettered). The shared Redis and MinIO serve what
 * breaks nothing of anyone else's (a key of the test's own, a bucket of its own); a private
 * redis-server is broken for the rest (out of memory, busy, paused, gone).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setTimeout as sleep } from "node:timers/promises";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "minio";
import { redisLimitsStore } from "../../processors/limits/redis-store.ts";
import { RedisLoopStore } from "../../processors/loops/redis-store.ts";
import { StoreRefused, TransientError } from "../../processors/runner/errors.ts";
import { FileStore } from "../../store/files.ts";
import { minioClient } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { redisFailure } from "../../store/redis/errors.ts";
import { Keys } from "../../store/redis/keys.ts";
import { runScript } from "../../store/redis/scripts.ts";
import { uid } from "../support/events.ts";
import { rejectionOf } from "../support/promises.ts";
import { endpoints } from "../support/kafka.ts";
import { startPrivateRedis, type PrivateRedis } from "../support/private-redis.ts";


const ask = (requestId: string) => ({ kind: "ask" as const, ask: { requestId, runId: "r1", inputTokens: 10, worst: 1, maxSteps: -1, maxTokens: -1, deadline: -1, now: Date.now() } });

describe("Redis failures from the shared server", () => {
  let redis: RedisClient;
  const keys = new Keys(uid("fk").replace(/-/g, "_"));
  beforeAll(() => {
    redis = redisClient(endpoints());
  });
  afterAll(() => redis?.disconnect());

  it("SYS-3 WRONGTYPE on a tree's key is refused for good, naming the key, in the server's words", async () => {
    const key = keys.limits("acme", "poison-tree");
    await redis.set(key, "planted by hand");
    const store = redisLimitsStore(redis, keys);
    const err = await rejectionOf(store.treeSteps("acme", "poison-tree", [ask("q1")]));
    expect(err).toBeInstanceOf(StoreRefused);
    const refused = err as StoreRefused;
    expect(refused.key).toBe(key);
    expect(refused.server).toMatch(/^WRONGTYPE Operation against a key holding the wrong kind of value/);
    expect(refused.message).toContain(`on key ${key}`);
    expect(refused.message).toContain(`TYPE ${key}`);
    // A plain read of the same key is refused the same way.
    expect(await rejectionOf(store.read("acme", "poison-tree", "job-1"))).toBeInstanceOf(StoreRefused);
    await redis.del(key);
  });

  it("SYS-3 WRONGTYPE under a run's loop lane is refused naming the lane's key", async () => {
    const lane = keys.loopLane("acme", "poison-run", "calls");
    await redis.set(lane, "planted by hand");
    const store = new RedisLoopStore(redis, keys);
    const err = (await rejectionOf(store.read("calls", [{ tenant: "acme", run: "poison-run", source: "t:0", offsets: ["1"] }]))) as StoreRefused;
    expect(err).toBeInstanceOf(StoreRefused);
    expect(err.key).toBe(lane);
    expect(err.server).toMatch(/^WRONGTYPE/);
    await redis.del(lane);
  });

  it("SYS-3 a script's own error and an ERR about arguments are refused for good", async () => {
    const key = keys.filesTree("acme", uid("tree"));
    const own = await rejectionOf(runScript(redis, "filesTree", [key], ["nope", "", "job", "", "t:0", "1", 60]));
    const f = redisFailure(own, "running filesTree", key);
    expect(f).toBeInstanceOf(StoreRefused);
    expect((f as StoreRefused).server).toContain("filesTree: ARGV[1] is start or end, got nope");
    const args = await rejectionOf(redis.call("hset", key));
    expect(redisFailure(args, "setting", key)).toBeInstanceOf(StoreRefused);
    expect((redisFailure(args, "setting", key) as StoreRefused).server).toMatch(/^ERR wrong number of arguments/);
    const lua = await rejectionOf(redis.eval("error('the script broke')", 0));
    expect(redisFailure(lua, "running a script")).toBeInstanceOf(StoreRefused);
  });
});

describe("Redis failures from a private server, broken on purpose", () => {
  let server: PrivateRedis;
  let redis: RedisClient;
  const keys = new Keys("fk");
  beforeAll(async () => {
    server = await startPrivateRedis("pw");
    redis = redisClient({ redisUrl: `redis://127.0.0.1:${server.port}`, redisPassword: server.password });
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it("SYS-3 OOM (over maxmemory) is transient, and the same step succeeds once memory is back", async () => {
    const store = new RedisLoopStore(redis, keys);
    const write = { tenant: "acme", run: "oom-run", source: "t:0", at: "1", from: "-1", state: "{}", memos: [], flags: [], deadlines: [], settled: [], counts: [] };
    await redis.config("SET", "maxmemory", "1");
    try {
      const err = (await rejectionOf(store.write("calls", [write]))) as TransientError;
      expect(err).toBeInstanceOf(TransientError);
      expect(err.dependency).toBe("redis");
      expect(err.message).toContain("OOM command not allowed");
    } finally {
      await redis.config("SET", "maxmemory", "0");
    }
    await store.write("calls", [write]);
    const [snap] = await store.read("calls", [{ tenant: "acme", run: "oom-run", source: "t:0", offsets: ["1"] }]);
    expect(snap?.at).toBe("1");
  });

  it("SYS-3 BUSY (a script running past the busy threshold) is transient", async () => {
    await redis.config("SET", "busy-reply-threshold", "50");
    const other = redisClient({ redisUrl: `redis://127.0.0.1:${server.port}`, redisPassword: server.password });
    const spinning = other.eval("while true do end", 0).catch((e: unknown) => e);
    try {
      await sleep(200);
      const store = new RedisLoopStore(redis, keys);
      const err = (await rejectionOf(store.read("calls", [{ tenant: "acme", run: "busy-run", source: "t:0", offsets: ["1"] }]))) as TransientError;
      expect(err).toBeInstanceOf(TransientError);
      expect(err.message).toContain("BUSY");
    } finally {
      await redis.script("KILL").catch(() => undefined);
      await spinning;
      other.disconnect();
    }
  });

  it("SYS-3 a command timing out (the server paused) is transient", async () => {
    const patient = redisClient({ redisUrl: `redis://127.0.0.1:${server.port}`, redisPassword: server.password }, { commandTimeout: 100 });
    try {
      await patient.ping();
      await redis.call("CLIENT", "PAUSE", "1000", "ALL");
      const err = (await rejectionOf(redisLimitsStore(patient, keys).read("acme", "t-paused", "job-1"))) as TransientError;
      expect(err).toBeInstanceOf(TransientError);
      expect(err.message).toContain("Command timed out");
    } finally {
      patient.disconnect();
    }
    await sleep(1_000);
  });

  it("SYS-3 LOADING (a server still loading its data set after a restart) is transient, and the same read succeeds once it has loaded", async () => {
    const dir = mkdtempSync(join(tmpdir(), "oz0-loading-"));
    const first = await startPrivateRedis("pw", { dir, args: ["--enable-debug-command", "yes"] });
    const loadingKeys = new Keys("loading");
    try {
      const setup = redisClient({ redisUrl: `redis://127.0.0.1:${first.port}`, redisPassword: first.password });
      // A data set big enough that loading it takes a while: a million keys of 200 bytes.
      await setup.call("DEBUG", "POPULATE", "1000000", "filler", "200");
      await setup.hset(loadingKeys.limits("acme", "t-loading"), "steps", "1");
      await setup.save();
      setup.disconnect();
      await first.stop();
      const again = await startPrivateRedis("pw", { dir, port: first.port, noWait: true });
      // The ready check would wait for the load to end, as a fresh connection does; a connection
      // that was up before the server went, as the pipeline's is, meets LOADING instead.
      const eager = redisClient({ redisUrl: `redis://127.0.0.1:${first.port}`, redisPassword: first.password }, { enableReadyCheck: false, maxRetriesPerRequest: 0, retryStrategy: (n) => (n > 100 ? null : 20) });
      try {
        let err: TransientError | undefined;
        for (let i = 0; i < 500 && err === undefined; i++) {
          try {
            await redisLimitsStore(eager, loadingKeys).read("acme", "t-loading", "job-1");
          } catch (e) {
            // Refused connections come first, while the server starts; then LOADING.
            if (e instanceof TransientError && e.message.includes("LOADING")) err = e;
          }
          await sleep(10);
        }
        expect(err, "a read while the server loads").toBeInstanceOf(TransientError);
        expect((err as TransientError).dependency).toBe("redis");
        expect((err as TransientError).message).toContain("LOADING");
        for (let waited = 0; waited < 60_000; waited += 200) {
          // Not async_loading:0, which INFO shows while it loads too.
          if (/^loading:0\r?$/m.test(await eager.info("persistence").catch(() => "loading:1"))) break;
          await sleep(200);
        }
        expect(await eager.hget(loadingKeys.limits("acme", "t-loading"), "steps")).toBe("1");
      } finally {
        eager.disconnect();
        await again.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("SYS-3 a lost connection (the server gone) is transient", async () => {
    await server.stop();
    const gone = redisClient({ redisUrl: `redis://127.0.0.1:${server.port}`, redisPassword: server.password }, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    try {
      const err = (await rejectionOf(new RedisLoopStore(gone, keys).read("calls", [{ tenant: "acme", run: "r", source: "t:0", offsets: ["1"] }]))) as TransientError;
      expect(err).toBeInstanceOf(TransientError);
      expect(err.dependency).toBe("redis");
    } finally {
      gone.disconnect();
    }
  });
});

describe("MinIO failures from the shared server", () => {
  const bucket = uid("oz0-fk").toLowerCase();
  const keys = PayloadKeys.fromMaster(Buffer.alloc(32, 7));
  beforeAll(async () => {
    await new FileStore({ client: minioClient(endpoints()), bucket, keys }).ensureBucket();
  });
  afterAll(async () => {
    await minioClient(endpoints()).removeBucket(bucket).catch(() => undefined);
  });

  it("SYS-2 AccessDenied (no credentials on a private bucket) is refused for good, naming the bucket", async () => {
    const url = new URL(endpoints().minioUrl);
    const anonymous = new Client({ endPoint: url.hostname, port: Number(url.port), useSSL: false, accessKey: "", secretKey: "" });
    const err = (await rejectionOf(new FileStore({ client: anonymous, bucket, keys }).store({ tenant: "acme", tree: "t" }, Buffer.from("x")))) as StoreRefused;
    expect(err).toBeInstanceOf(StoreRefused);
    expect(err.server).toMatch(/^AccessDenied/);
    expect(err.key).toBe(`bucket ${bucket}`);
  });

  it("SYS-2 NoSuchBucket is refused for good, naming the bucket", async () => {
    const missing = uid("oz0-missing").toLowerCase();
    const err = (await rejectionOf(new FileStore({ client: minioClient(endpoints()), bucket: missing, keys }).store({ tenant: "acme", tree: "t" }, Buffer.from("x")))) as StoreRefused;
    expect(err).toBeInstanceOf(StoreRefused);
    expect(err.server).toMatch(/^NoSuchBucket/);
    expect(err.message).toContain(missing);
  });

  it("SYS-2 no answer (nothing listening) is transient", async () => {
    const nowhere = new Client({ endPoint: "127.0.0.1", port: 1, useSSL: false, accessKey: "a", secretKey: "b" });
    const err = (await rejectionOf(new FileStore({ client: nowhere, bucket, keys }).store({ tenant: "acme", tree: "t" }, Buffer.from("x")))) as TransientError;
    expect(err).toBeInstanceOf(TransientError);
    expect(err.dependency).toBe("minio");
  });
});

describe("MinIO throttling from a private server", () => {
  const bin = join(process.env.OZ0_STACK_HOME ?? join(homedir(), ".cache", "oz0-stack"), "bin", "minio");
  let child: ChildProcess | undefined;
  let dir: string;

  afterAll(async () => {
    child?.kill("SIGTERM");
    if (child) await Promise.race([new Promise((r) => child?.once("exit", r)), sleep(5_000)]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("SYS-2 a MinIO that allows one request at a time answers the rest 429 (throttled): transient at the store's seam, naming the status", async () => {
    if (!existsSync(bin)) throw new Error(`the throttling test starts the stack's MinIO binary (${bin}) as a private server; bring the local stack up once (bash stack/up.sh) to build it`);
    dir = mkdtempSync(join(tmpdir(), "oz0-minio-"));
    const port = 19000 + 500 + Math.floor(Math.random() * 400);
    child = spawn(bin, ["server", join(dir, "data"), "--address", `127.0.0.1:${port}`], {
      stdio: "ignore",
      env: { ...process.env, MINIO_ROOT_USER: "throttled", MINIO_ROOT_PASSWORD: "throttled-secret", MINIO_API_REQUESTS_MAX: "1", MINIO_API_REQUESTS_DEADLINE: "50ms", MINIO_BROWSER: "off" },
    });
    const client = new Client({ endPoint: "127.0.0.1", port, useSSL: false, accessKey: "throttled", secretKey: "throttled-secret" });
    const store = new FileStore({ client, bucket: "throttled", keys: PayloadKeys.fromMaster(Buffer.alloc(32, 9)) });
    for (let waited = 0; ; waited += 200) {
      if (await store.ensureBucket().then(() => true, () => false)) break;
      if (waited > 30_000) throw new Error(`the private MinIO on 127.0.0.1:${port} did not answer within 30 s`);
      await sleep(200);
    }
    const big = (i: number): Buffer => Buffer.alloc(4 * 1024 * 1024, i);
    const outcomes = await Promise.allSettled(Array.from({ length: 16 }, (_, i) => store.store({ tenant: "acme", tree: "t-throttled" }, big(i))));
    const failed = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected").map((o) => o.reason as unknown);
    expect(failed.length, "some of 16 stores at once are throttled").toBeGreaterThan(0);
    for (const err of failed) {
      expect(err).toBeInstanceOf(TransientError);
      expect((err as TransientError).dependency).toBe("minio");
      expect((err as TransientError).message).toMatch(/HTTP (429|503)/);
    }
    // One at a time, the same stores go through.
    for (let i = 0; i < 16; i++) await store.store({ tenant: "acme", tree: "t-throttled" }, big(i));
  }, 120_000);
});
