import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keys } from "../../store/redis/keys.ts";
import { runScript } from "../../store/redis/scripts.ts";
import { deleteKeys, execBySlot, scanKeys } from "../../store/redis/slots.ts";
import { minioClient, ObjectStore, refOf } from "../../store/objects.ts";
import { endpoints } from "../support/kafka.ts";
import { uid } from "../support/events.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";

describe("state in real Redis", () => {
  let redis: RedisClient;
  beforeAll(() => {
    redis = redisClient(endpoints());
  });
  afterAll(() => redis?.disconnect());

  it("SYS-3 a Lua script changes state once per input offset: a replay changes nothing", async () => {
    const keys = new Keys(uid("t").replace(/-/g, "_"));
    const key = keys.tally("run-1");
    const apply = (offset: string) => runScript(redis, "tallyOnce", [key], ["calls", "oz0.tool-calls:3", offset, 60]);
    expect(await apply("10")).toEqual([1, 1]);
    expect(await apply("10")).toEqual([0, 1]);
    expect(await apply("9")).toEqual([0, 1]);
    expect(await apply("11")).toEqual([1, 2]);
    expect(await redis.hget(key, "calls")).toBe("2");
    const ttl = await redis.ttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60);
  });

  it("SYS-3 commands of many slots in phases answer in the order given, and keys of many slots are listed and deleted from every node", async () => {
    const keys = new Keys(uid("t").replace(/-/g, "_"));
    const runs = Array.from({ length: 40 }, (_, i) => keys.tally(`run-${i}`));
    const shared = keys.loopDeadlines();
    const replies = await execBySlot(redis, [
      [...runs.map((k, i) => ({ key: k, name: "hset", args: [k, "n", i] })), { key: shared, name: "zadd", args: [shared, 1, "a"] }],
      runs.map((k) => ({ key: k, name: "hget", args: [k, "n"] })),
      [{ key: shared, name: "zcard", args: [shared] }],
    ]);
    expect(replies.map(([err]) => err)).toEqual(new Array(82).fill(null));
    expect(replies.slice(41, 81).map(([, v]) => v)).toEqual(runs.map((_, i) => String(i)));
    expect(replies[81]?.[1]).toBe(1);
    const found: string[] = [];
    for await (const batch of scanKeys(redis, `${keys.prefix}:*`)) found.push(...batch);
    expect(found.sort()).toEqual([...runs, shared].sort());
    expect(await deleteKeys(redis, found)).toBe(41);
  });
});

describe("objects in real MinIO", () => {
  it("SYS-2 stores bytes content-addressed per tenant, idempotently, and reads them back", async () => {
    const store = new ObjectStore(minioClient(endpoints()), uid("oz0-test").toLowerCase());
    await store.ensureBucket();
    await store.ensureBucket();
    const bytes = Buffer.from(`a result ${uid("x")}`);
    const ref = await store.put("acme", bytes);
    expect(ref).toBe(refOf(bytes));
    expect(await store.put("acme", bytes)).toBe(ref);
    expect((await store.get("acme", ref))?.toString()).toBe(bytes.toString());
    expect(await store.get("globex", ref)).toBeNull();
  });
});
