/**
 * The failures only a Redis Cluster answers, produced by the stack's real cluster and met on a
 * connection to one of its nodes, and what they become at the store's seam: `TRYAGAIN` (a
 * command on several keys of a slot whose keys are half moved) and `CLUSTERDOWN` (a slot no
 * node serves) are transient, so the batch is tried again. Each test puts the cluster back as
 * it found it. Runs only with OZ0_TEST_REDIS=cluster (vitest.config.ts leaves the folder out
 * otherwise).
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TransientError } from "../../../processors/runner/errors.ts";
import { isRedisCluster } from "../../../store/redis/client.ts";
import { redisFailure } from "../../../store/redis/errors.ts";
import { endpoints } from "../../support/kafka.ts";

interface Node {
  readonly id: string;
  readonly host: string;
  readonly port: number;
  readonly slots: ReadonlyArray<readonly [number, number]>;
}

/** The masters as a node sees them (CLUSTER NODES): ID, address and slot ranges. */
async function masters(redis: Redis): Promise<Node[]> {
  const text = String(await redis.call("CLUSTER", "NODES"));
  return text
    .trim()
    .split("\n")
    .map((line) => line.split(" "))
    .filter((f) => (f[2] ?? "").includes("master"))
    .map((f) => {
      const [host, rest] = (f[1] ?? "").split(":");
      return {
        id: f[0] ?? "",
        host: host ?? "127.0.0.1",
        port: Number((rest ?? "").split("@")[0]),
        slots: f.slice(8).filter((s) => /^\d+(-\d+)?$/.test(s)).map((s) => {
          const [a, b] = s.split("-").map(Number);
          return [a as number, (b ?? a) as number] as const;
        }),
      };
    });
}

const owns = (n: Node, slot: number): boolean => n.slots.some(([a, b]) => slot >= a && slot <= b);

/** Until every master says the cluster is whole again. */
async function untilHealthy(nodes: Redis[]): Promise<void> {
  for (let waited = 0; waited < 30_000; waited += 200) {
    const infos = await Promise.all(nodes.map((n) => n.call("CLUSTER", "INFO").then(String, () => "")));
    if (infos.every((i) => i.includes("cluster_state:ok"))) return;
    await sleep(200);
  }
  throw new Error("the cluster did not say cluster_state:ok on every master within 30 s after the test put it back");
}

describe("failures only a Redis Cluster answers, from the stack's cluster", () => {
  const seed = endpoints();
  let first: Redis;
  let nodes: Node[];
  const direct = new Map<string, Redis>();
  const on = (n: Node): Redis => {
    let c = direct.get(n.id);
    if (!c) {
      c = new Redis({ host: n.host, port: n.port, maxRetriesPerRequest: 0, lazyConnect: false, ...(seed.redisPassword ? { password: seed.redisPassword } : {}) });
      c.on("error", () => undefined);
      direct.set(n.id, c);
    }
    return c;
  };

  beforeAll(async () => {
    if (!isRedisCluster(seed)) throw new Error("these tests need a Redis Cluster: run them with OZ0_TEST_REDIS=cluster");
    const url = new URL(seed.redisUrl.split(",")[0] as string);
    first = new Redis({ host: url.hostname, port: Number(url.port), maxRetriesPerRequest: 0, ...(seed.redisPassword ? { password: seed.redisPassword } : {}) });
    first.on("error", () => undefined);
    nodes = await masters(first);
    if (nodes.length < 2) throw new Error(`the cluster has ${nodes.length} master(s); these tests move a slot between two`);
  });

  afterAll(async () => {
    await untilHealthy([...nodes.map(on)]).catch(() => undefined);
    first?.disconnect();
    for (const c of direct.values()) c.disconnect();
  });

  it("SYS-3 TRYAGAIN (several keys of a slot whose keys are half migrated) is transient, and the command goes through once the migration ends", async () => {
    // A slot that holds no other key (earlier tests leave keys behind): a slot is given to
    // another node only once its old owner holds none of its keys, and one left half migrated
    // stays open across the cluster's restarts.
    let tag = "";
    let slot = -1;
    let source: Node | undefined;
    for (let i = 0; i < 100 && source === undefined; i++) {
      tag = `tryagain-${randomUUID().slice(0, 8)}`;
      slot = Number(await first.call("CLUSTER", "KEYSLOT", `oz0-test:{${tag}}:a`));
      const owner = nodes.find((n) => owns(n, slot));
      if (owner && Number(await on(owner).call("CLUSTER", "COUNTKEYSINSLOT", String(slot))) === 0) source = owner;
    }
    const a = `oz0-test:{${tag}}:a`;
    const b = `oz0-test:{${tag}}:b`;
    const dest = nodes.find((n) => n !== source);
    if (!source || !dest) throw new Error(`no empty slot found in 100 tries, or no other master to move one to`);
    const src = on(source);
    const dst = on(dest);
    await src.set(a, "1");
    await src.set(b, "2");
    // Half a migration, as redis-cli --cluster reshard leaves it for a moment: a moved, b not yet.
    await dst.call("CLUSTER", "SETSLOT", String(slot), "IMPORTING", source.id);
    await src.call("CLUSTER", "SETSLOT", String(slot), "MIGRATING", dest.id);
    try {
      await src.call("MIGRATE", dest.host, String(dest.port), a, "0", "5000");
      const err = await src.mget(a, b).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, "MGET of a moved and a kept key of a migrating slot").toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(/^TRYAGAIN/);
      const failure = redisFailure(err, "reading two keys of one slot", a);
      expect(failure).toBeInstanceOf(TransientError);
      expect(failure.message).toContain("TRYAGAIN");
    } finally {
      // The migration finished: every key of the slot moved, and every master told the slot's new owner.
      const left = (await src.call("CLUSTER", "GETKEYSINSLOT", String(slot), "1000")) as string[];
      for (const k of left) await src.call("MIGRATE", dest.host, String(dest.port), k, "0", "5000");
      for (const n of nodes) await on(n).call("CLUSTER", "SETSLOT", String(slot), "NODE", dest.id);
    }
    expect(await dst.mget(a, b)).toEqual(["1", "2"]);
    await dst.del(a, b);
    await untilHealthy(nodes.map(on));
  });

  it("SYS-3 CLUSTERDOWN (a slot no node serves) is transient, and the command goes through once the slot is served again", async () => {
    const key = `oz0-test:{clusterdown-${randomUUID().slice(0, 8)}}:k`;
    const slot = Number(await first.call("CLUSTER", "KEYSLOT", key));
    nodes = await masters(first);
    const owner = nodes.find((n) => owns(n, slot));
    if (!owner) throw new Error(`no master owns slot ${slot}`);
    const own = on(owner);
    await own.set(key, "kept");
    // The owner gives the slot up (empty, so it may); until it claims it again, nobody serves it.
    await own.del(key);
    await own.call("CLUSTER", "DELSLOTS", String(slot));
    try {
      let err: unknown = null;
      for (let i = 0; i < 50 && err === null; i++) {
        err = await own.get(key).then(
          () => null,
          (e: unknown) => (e instanceof Error && /^CLUSTERDOWN/.test(e.message) ? e : null),
        );
        if (err === null) await sleep(100);
      }
      expect(err, "GET of a key in a slot nobody serves").toBeInstanceOf(Error);
      const failure = redisFailure(err, "reading a key", key);
      expect(failure).toBeInstanceOf(TransientError);
      expect(failure.message).toContain("CLUSTERDOWN");
    } finally {
      await own.call("CLUSTER", "ADDSLOTS", String(slot));
    }
    await untilHealthy(nodes.map(on));
    await own.set(key, "served");
    expect(await own.get(key)).toBe("served");
    await own.del(key);
  });
});
