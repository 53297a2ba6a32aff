import { describe, expect, it } from "vitest";
import { Cluster, Redis } from "ioredis";
import { endpointsEnv, endpointsFromEnv, PIPELINE_REDIS } from "../../../processors/runner/endpoints.ts";
import { isRedisCluster, redisClient, redisClusterOptions, redisWhere } from "../../../store/redis/client.ts";
import { Keys } from "../../../store/redis/keys.ts";
import { bySlot, hashTag } from "../../../store/redis/slots.ts";
import { runScript } from "../../../store/redis/scripts.ts";

describe("OZ0_REDIS_URL naming a Redis Cluster", () => {
  it("several seed nodes, or OZ0_REDIS_CLUSTER=1 with one, make a cluster; one URL alone is one node", () => {
    expect(isRedisCluster({ redisUrl: "redis://127.0.0.1:16379" })).toBe(false);
    expect(isRedisCluster({ redisUrl: "redis://a:7000,redis://b:7000" })).toBe(true);
    expect(isRedisCluster({ redisUrl: "redis://a:7000", redisCluster: true })).toBe(true);
    expect(endpointsFromEnv({ OZ0_REDIS_URL: "redis://a:7000", OZ0_REDIS_CLUSTER: "1" }).redisCluster).toBe(true);
    expect(endpointsFromEnv({ OZ0_REDIS_URL: "redis://a:7000", OZ0_REDIS_CLUSTER: "false" }).redisCluster).toBe(false);
    expect(endpointsFromEnv({ OZ0_REDIS_URL: "redis://a:7000" }).redisCluster).toBeUndefined();
  });

  it("OZ0_STACK_REDIS=cluster means the local stack's cluster when OZ0_REDIS_URL is not set", () => {
    expect(endpointsFromEnv({ OZ0_STACK_REDIS: "cluster" }).redisUrl).toBe("redis://127.0.0.1:17000,redis://127.0.0.1:17001,redis://127.0.0.1:17002");
    expect(endpointsFromEnv({ OZ0_STACK_REDIS: "cluster", OZ0_REDIS_CLUSTER_URL: "redis://c:7000,redis://c:7001" }).redisUrl).toBe("redis://c:7000,redis://c:7001");
    expect(endpointsFromEnv({ OZ0_STACK_REDIS: "cluster", OZ0_REDIS_URL: "redis://r:6379" }).redisUrl).toBe("redis://r:6379");
    expect(endpointsFromEnv({}).redisUrl).toBe("redis://127.0.0.1:16379");
    expect(() => endpointsFromEnv({ OZ0_STACK_REDIS: "both" })).toThrow(/OZ0_STACK_REDIS="both": use node .* or cluster/);
  });

  it("the flag travels to a child process with the other endpoints", () => {
    const env = { OZ0_KAFKA_BROKERS: "k:9092", OZ0_REGISTRY_URL: "http://reg:8081", OZ0_REDIS_URL: "redis://a:7000", OZ0_REDIS_CLUSTER: "1", OZ0_MINIO_URL: "http://m:9000", OZ0_MINIO_ACCESS_KEY: "ak", OZ0_MINIO_SECRET_KEY: "sk" };
    expect(endpointsEnv(endpointsFromEnv(env))).toEqual(env);
  });

  it("bad values are refused saying what to write instead, never repeating a password", () => {
    expect(() => endpointsFromEnv({ OZ0_REDIS_CLUSTER: "yes" })).toThrow(/OZ0_REDIS_CLUSTER="yes" is not a flag: use 1 .* or 0/);
    expect(() => isRedisCluster({ redisUrl: "redis://a:7000,redis://b:7000", redisCluster: false })).toThrow(/several nodes.*OZ0_REDIS_CLUSTER=0/);
    expect(() => isRedisCluster({ redisUrl: "redis://a:7000,,redis://b:7000" })).toThrow(/empty entry/);
    expect(() => redisClusterOptions({ redisUrl: "redis://a:7000,rediss://b:7000" })).toThrow(/mixes redis:\/\/ and rediss:\/\//);
    expect(() => redisClusterOptions({ redisUrl: "redis://:hunter2-pw@a:7000/3,redis://b:7000" })).toThrow(/only database 0/);
    expect(() => redisClusterOptions({ redisUrl: "redis://:hunter2-pw@a:7000/3,redis://b:7000" })).not.toThrow(/hunter2-pw/);
    expect(() => redisClusterOptions({ redisUrl: "redis://a:7000,http://:hunter2-pw@b:7000" })).toThrow(/redis:\/\/ or rediss:\/\//);
    expect(redisWhere({ redisUrl: "redis://:hunter2-pw@a:7000,redis://:hunter2-pw@b:7000" })).toBe("redis://:***@a:7000,redis://:***@b:7000");
  });

  it("AUTH and TLS apply to every node; node options go to each node's connection, the rest to the cluster", () => {
    const c = redisClusterOptions({ redisUrl: "rediss://svc:from-url@a:7000,rediss://b:7001", redisPassword: "from-env" }, { ...PIPELINE_REDIS, lazyConnect: true, retryStrategy: () => null, connectTimeout: 3_000 });
    expect(c.seeds).toEqual([{ host: "a", port: 7000 }, { host: "b", port: 7001 }]);
    expect(c.options.redisOptions).toEqual({ username: "svc", password: "from-env", tls: {}, maxRetriesPerRequest: 3, connectTimeout: 3_000 });
    expect(c.options).toMatchObject({ lazyConnect: true, enableAutoPipelining: true });
    expect(typeof c.options.clusterRetryStrategy).toBe("function");
    expect(typeof c.options.dnsLookup).toBe("function");
  });

  it("redisClient gives ioredis' Cluster for a cluster and Redis for one node", () => {
    const cluster = redisClient({ redisUrl: "redis://127.0.0.1:1,redis://127.0.0.1:2" }, { lazyConnect: true });
    const one = redisClient({ redisUrl: "redis://127.0.0.1:1" }, { lazyConnect: true });
    expect(cluster).toBeInstanceOf(Cluster);
    expect(one).toBeInstanceOf(Redis);
    cluster.disconnect();
    one.disconnect();
  });
});

describe("keys grouped by slot", () => {
  it("a key's slot is decided by its first non-empty hash tag, as Redis Cluster hashes it", () => {
    expect(hashTag("oz0:{run:acme/r1}:loop:calls")).toBe("run:acme/r1");
    expect(hashTag("plain")).toBe("plain");
    expect(hashTag("a:{}:b")).toBe("a:{}:b");
    expect(hashTag("a:{x}:{y}")).toBe("x");
  });

  it("every pair of keys a script takes together shares one hash tag", () => {
    const k = new Keys();
    const together: string[][] = [
      [k.loopLane("acme", "r1", "calls"), k.loopFlags("acme", "r1")],
      [k.loopLane("acme", "r1", "results"), k.loopFlags("acme", "r1")],
      [k.loopStats("2026-12-01", "counts"), k.loopStats("2026-12-01", "counted")],
      [k.tenantMonth("acme", "2026-12"), k.tenantMonthTimers("acme", "2026-12")],
      [k.quotaMonth("acme", "person", "ana", "2026-12"), k.quotaMonthTimers("acme", "person", "ana", "2026-12"), k.quotaMonth("acme", "team", "t", "2026-12"), k.quotaMonthTimers("acme", "team", "t", "2026-12")],
    ];
    for (const keys of together) expect(new Set(keys.map(hashTag)).size, keys.join(" ")).toBe(1);
  });

  it("a script given keys of several hash tags is refused before it reaches Redis", async () => {
    const k = new Keys();
    const redis = new Redis({ lazyConnect: true });
    await expect(runScript(redis, "loopCommit", [k.loopLane("acme", "r1", "calls"), k.loopFlags("acme", "r2")], [])).rejects.toThrow(/several hash tags/);
    redis.disconnect();
  });

  it("commands are grouped by their key's hash tag, each group in the order given", () => {
    const items = ["a:{x}:1", "b:{y}:1", "a:{x}:2", "c", "b:{y}:2"];
    expect(bySlot(items, (i) => i)).toEqual([["a:{x}:1", "a:{x}:2"], ["b:{y}:1", "b:{y}:2"], ["c"]]);
  });
});
