/**
 * A Redis server of a test's own, started from the `redis-server` on PATH on a free loopback
 * port with a password (Redis AUTH), and stopped by the test. For what the shared Redis cannot
 * show: AUTH, secrets that must not leak, and a server to break (out of memory, busy, loading)
 * without disturbing anyone else's.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { redisClient } from "../../store/redis/client.ts";

export interface PrivateRedis {
  readonly port: number;
  readonly password: string;
  /** Where it keeps its files (`--dir`). */
  readonly dir: string;
  stop(): Promise<void>;
}

export interface PrivateRedisOptions {
  /** More `redis-server` arguments, such as `["--maxmemory", "1mb"]`. */
  readonly args?: readonly string[];
  /** The port, to start again where a stopped one listened. @default a free one */
  readonly port?: number;
  /** Its directory, kept on stop (a snapshot to load again). @default a new one, removed on stop */
  readonly dir?: string;
  /** Return as soon as the process runs, without waiting for PING (to see it loading). */
  readonly noWait?: boolean;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no free TCP port on 127.0.0.1");
  return address.port;
}

/** Starts `redis-server --requirepass <password>` and waits until it answers PING with that password. */
export async function startPrivateRedis(password: string, options: PrivateRedisOptions = {}): Promise<PrivateRedis> {
  const port = options.port ?? (await freePort());
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "oz0-redis-"));
  const child: ChildProcess = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--requirepass", password, "--save", "", "--appendonly", "no", "--dir", dir, ...(options.args ?? [])], { stdio: "ignore" });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  child.once("error", () => undefined);
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await Promise.race([exited, sleep(5_000)]);
    if (options.dir === undefined) rmSync(dir, { recursive: true, force: true });
  };
  if (options.noWait) return { port, password, dir, stop };
  for (let waited = 0; waited < 10_000; waited += 100) {
    if (child.exitCode !== null) break;
    const probe = redisClient({ redisUrl: `redis://127.0.0.1:${port}`, redisPassword: password }, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on("error", () => undefined);
    try {
      await probe.connect();
      if ((await probe.ping()) === "PONG") return { port, password, dir, stop };
    } catch {
      // not up yet
    } finally {
      probe.disconnect();
    }
    await sleep(100);
  }
  await stop();
  throw new Error(`redis-server (from PATH) did not answer on 127.0.0.1:${port} within 10 s; is it installed?`);
}
