/**
 * A Redis server of a test's own, started from the `redis-server` on PATH on a free loopback
 * port with a password (Redis AUTH), and stopped by the test. For what the shared Redis cannot
 * show: AUTH, and secrets that must not leak.
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
  stop(): Promise<void>;
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
export async function startPrivateRedis(password: string): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "oz0-redis-"));
  const child: ChildProcess = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--requirepass", password, "--save", "", "--appendonly", "no", "--dir", dir], { stdio: "ignore" });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  child.once("error", () => undefined);
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await Promise.race([exited, sleep(5_000)]);
    rmSync(dir, { recursive: true, force: true });
  };
  for (let waited = 0; waited < 10_000; waited += 100) {
    if (child.exitCode !== null) break;
    const probe = redisClient({ redisUrl: `redis://127.0.0.1:${port}`, redisPassword: password }, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on("error", () => undefined);
    try {
      await probe.connect();
      if ((await probe.ping()) === "PONG") return { port, password, stop };
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
