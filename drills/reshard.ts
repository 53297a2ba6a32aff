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

/** What `redis-cli --cluster check` prints for the cluster (its report, whether it passed or not). */
async function check(address: string, env: NodeJS.ProcessEnv): Promise<string> {
  return exec("redis-cli", ["--cluster", "check", address], { timeout: 30_000, maxBuffer: 64 * 1024 * 1024, env }).then(
    (r) => r.stdout,
    (err: { stdout?: string }) => err.stdout ?? "",
  );
}

/** The slots a check reports open (a node importing or migrating them): a migration begun and never finished. */
export function openSlots(report: string): string[] {
  const line = /The following slots are open: ([0-9,\s-]+)/.exec(report);
  return line?.[1] ? line[1].split(",").map((s) => s.trim()).filter((s) => s.length > 0) : [];
}

/**
 * Waits until every node agrees on which master serves each slot, every slot is served and no
 * slot is open (`redis-cli --cluster check`). A slot left open by a migration that was stopped
 * midway (a drill killed, a node restarted) is never closed by waiting, and `--cluster reshard`
 * refuses to start while one is: when asked to (`repair`), such slots are closed with
 * `redis-cli --cluster fix`, which finishes or undoes their migration with their keys.
 */
async function agreed(address: string, env: NodeJS.ProcessEnv, options: { repair?: boolean; withinMs?: number } = {}): Promise<void> {
  const withinMs = options.withinMs ?? 60_000;
  const deadline = Date.now() + withinMs;
  let last = "";
  let repaired = false;
  while (Date.now() < deadline) {
    const out = await check(address, env);
    const open = openSlots(out);
    if (out.includes("All nodes agree about slots configuration") && out.includes("All 16384 slots covered") && open.length === 0) return;
    last = out.split("\n").filter((l) => l.includes("[ERR]")).join("; ") || (open.length > 0 ? `slots left open: ${open.join(", ")}` : "");
    if (open.length > 0 && options.repair === true && !repaired) {
      repaired = true;
      try {
        await exec("redis-cli", ["--cluster", "fix", address, "--cluster-yes"], { timeout: 120_000, maxBuffer: 64 * 1024 * 1024, env });
      } catch (err) {
        throw new Error(`redis-cli --cluster fix of the open slots ${open.join(", ")} failed: ${why(err)}`, { cause: err });
      }
      continue;
    }
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
 * agrees on its slots (slots an earlier migration left open closed first), and waits until it
 * agrees again. One migration at a time: two at once
 * can leave slots that no node claims.
 */
export async function reshard(redis: RedisClient, endpoint: RedisEndpoint, slots: number): Promise<Reshard> {
  if (!isCluster(redis)) throw new Error("a slot migration needs a Redis Cluster: point OZ0_REDIS_URL at one (OZ0_STACK_REDIS=cluster, or OZ0_TEST_REDIS=cluster for the tests)");
  // The password goes by the environment (REDISCLI_AUTH), never on the command line.
  const auth = endpoint.redisPassword ?? (decodeURIComponent(new URL(endpoint.redisUrl.split(",")[0] ?? "").password) || undefined);
  const env = { ...process.env, ...(auth !== undefined ? { REDISCLI_AUTH: auth } : {}) };
  const seed = (await masters(redis))[0]?.address;
  if (seed === undefined) throw new Error("the cluster reports no masters");
  await agreed(seed, env, { repair: true });
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
