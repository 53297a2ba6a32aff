/**
 * A slot migration of a Redis Cluster while a processor runs: `redis-cli --cluster reshard`
 * moves slots, with their keys, from one master to the next (MIGRATE key by key, the slot
 * answering ASK for moved keys and TRYAGAIN for a script whose keys are split meanwhile).
 */
import { execFile } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import type { Cluster } from "ioredis";
import type { RedisClient, RedisEndpoint } from "../store/redis/client.ts";
import { isCluster } from "../store/redis/slots.ts";

const exec = promisify(execFile);

export interface Reshard {
  readonly from: string;
  readonly to: string;
  readonly slots: number;
  readonly ms: number;
}

/** Waits until every node agrees on which master serves each slot and every slot is served (`redis-cli --cluster check`). */
async function agreed(address: string, env: NodeJS.ProcessEnv, withinMs = 60_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  let last = "";
  while (Date.now() < deadline) {
    const out = await exec("redis-cli", ["--cluster", "check", address], { timeout: 30_000, maxBuffer: 64 * 1024 * 1024, env }).then(
      (r) => r.stdout,
      (err: { stdout?: string }) => err.stdout ?? "",
    );
    if (out.includes("All nodes agree about slots configuration") && out.includes("All 16384 slots covered")) return;
    last = out.split("\n").filter((l) => l.includes("[ERR]")).join("; ");
    await sleep(500);
  }
  throw new Error(`the cluster at ${address} did not settle within ${withinMs / 1000} s: ${last || "redis-cli --cluster check did not pass"}`);
}

/** Each master's address, ID and how many slots it serves, from CLUSTER SLOTS. */
async function masters(redis: Cluster): Promise<Array<{ address: string; id: string; slots: number }>> {
  const byId = new Map<string, { address: string; id: string; slots: number }>();
  for (const [first, last, master] of await redis.cluster("SLOTS")) {
    if (master === undefined) continue;
    const [host, port, id] = master;
    const m = byId.get(id) ?? { address: `${host}:${port}`, id, slots: 0 };
    m.slots += last - first + 1;
    byId.set(id, m);
  }
  return [...byId.values()];
}

/** What redis-cli said when it failed: the lines that say why. */
function why(err: unknown): string {
  const e = err as { stdout?: string; stderr?: string; message?: string };
  const lines = `${e.stdout ?? ""}\n${e.stderr ?? ""}`.split("\n").filter((l) => /ERR|\*\*\*|error/i.test(l));
  return lines.length > 0 ? lines.join("; ") : (e.message ?? String(err));
}

/**
 * Moves up to `slots` slots from the master serving the most to the one serving the fewest
 * (at most half of what the first serves, so no master is ever emptied), once the cluster
 * agrees on its slots, and waits until it agrees again. One migration at a time: two at once
 * can leave slots that no node claims.
 */
export async function reshard(redis: RedisClient, endpoint: RedisEndpoint, slots: number): Promise<Reshard> {
  if (!isCluster(redis)) throw new Error("a slot migration needs a Redis Cluster: point OZ0_REDIS_URL at one (OZ0_STACK_REDIS=cluster, or OZ0_TEST_REDIS=cluster for the tests)");
  // The password goes by the environment (REDISCLI_AUTH), never on the command line.
  const auth = endpoint.redisPassword ?? (decodeURIComponent(new URL(endpoint.redisUrl.split(",")[0] ?? "").password) || undefined);
  const env = { ...process.env, ...(auth !== undefined ? { REDISCLI_AUTH: auth } : {}) };
  const seed = (await masters(redis))[0]?.address;
  if (seed === undefined) throw new Error("the cluster reports no masters");
  await agreed(seed, env);
  const list = (await masters(redis)).sort((a, b) => b.slots - a.slots);
  const from = list[0];
  const to = list[list.length - 1];
  if (!from || !to || from === to) throw new Error(`a slot migration needs two masters or more; the cluster has ${list.length}`);
  const moving = Math.min(slots, Math.floor(from.slots / 2));
  const t0 = Date.now();
  try {
    await exec("redis-cli", ["--cluster", "reshard", from.address, "--cluster-from", from.id, "--cluster-to", to.id, "--cluster-slots", String(moving), "--cluster-yes", "--cluster-pipeline", "100"], { timeout: 300_000, maxBuffer: 64 * 1024 * 1024, env });
  } catch (err) {
    throw new Error(`redis-cli --cluster reshard of ${moving} slots from ${from.address} to ${to.address} failed: ${why(err)}`, { cause: err });
  }
  const ms = Date.now() - t0;
  await agreed(from.address, env);
  return { from: from.address, to: to.address, slots: moving, ms };
}
