/**
 * `oz0 mcp --listen` stops on SIGTERM: with an agent's session still open (its stream to the
 * gateway held), and, when a part does not stop (a server that ignores its end, as Kafka that
 * does not answer would), within its bound, exiting 1 and naming what had not stopped.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { endpointsEnv } from "../../processors/runner/endpoints.ts";
import { endpoints } from "../support/kafka.ts";
import { startOz0, type Oz0Process } from "../support/oz0-process.ts";
import { until } from "../support/promises.ts";

const PLUGIN = fileURLToPath(new URL("../fixtures/mcp-config/plugins/mcp_fs.yaml", import.meta.url));
const FS_SERVER = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-filesystem/dist/index.js");

/** An MCP server that answers, then ignores the end of its stdin and SIGTERM: only SIGKILL ends it. */
const STUBBORN = `
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
process.on("SIGTERM", () => {});
setInterval(() => {}, 1000);
const server = new Server({ name: "stubborn", version: "1" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: "noop", inputSchema: { type: "object" } }] }));
await server.connect(new StdioServerTransport());
`;

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe("oz0 mcp --listen on SIGTERM", () => {
  const tenant = `mcpstop-${randomUUID().slice(0, 8)}`;
  let dir: string;
  const started: Oz0Process[] = [];
  const clients: Client[] = [];

  /** A gateway in front of `server`, listening, and an agent's session open on it. */
  async function gatewayWithSession(server: string[], env: Record<string, string> = {}): Promise<Oz0Process> {
    const port = await freePort();
    const gateway = startOz0(["mcp", "--plugin", PLUGIN, "--tenant", tenant, "--agent", "mcp-reader", "--listen", `127.0.0.1:${port}`, "--", ...server], {
      ...process.env,
      ...endpointsEnv(endpoints()),
      OZ0_LOG_LEVEL: "warn",
      ...env,
    });
    started.push(gateway);
    const url = `http://127.0.0.1:${port}/mcp`;
    await gateway.said(`oz0 mcp: listening on ${url}`, 120_000);
    const client = new Client({ name: "mcp-stop", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    clients.push(client);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    return gateway;
  }

  /** SIGTERM to oz0 alone (not its group), and how long it took to exit. */
  async function terminate(gateway: Oz0Process): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> {
    const at = Date.now();
    gateway.child.kill("SIGTERM");
    const bound = new Promise<null>((resolve) => setTimeout(() => resolve(null), 30_000).unref());
    const end = await Promise.race([gateway.exited, bound]);
    if (end === null) throw new Error(`oz0 mcp did not exit within 30 s of SIGTERM; it said: ${gateway.stderr().slice(-3000)}`);
    return { ...end, ms: Date.now() - at };
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "oz0-mcp-stop-"));
  });

  afterEach(async () => {
    await Promise.allSettled(clients.splice(0).map((c) => c.close()));
    await Promise.allSettled(started.splice(0).map((g) => g.stop(5_000)));
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("exits 0 at once with an agent's session still open, and the server it started goes with it", async () => {
    const gateway = await gatewayWithSession(["node", FS_SERVER, dir]);
    const end = await terminate(gateway);
    expect([end.code, end.signal], gateway.stderr()).toEqual([0, null]);
    expect(end.ms).toBeLessThan(10_000);
    await until("the filesystem server it started exited", () => !gateway.groupAlive(), 10_000);
  }, 180_000);

  it("exits 1 within OZ0_MCP_STOP_MS when a part does not stop, naming it", async () => {
    const gateway = await gatewayWithSession(["node", "--input-type=module", "-e", STUBBORN], { OZ0_MCP_STOP_MS: "1500" });
    const end = await terminate(gateway);
    expect([end.code, end.signal]).toEqual([1, null]);
    expect(end.ms).toBeLessThan(4_000);
    // The listener waits for the session's connections, which close once the session has.
    expect(gateway.stderr()).toMatch(/oz0 mcp: did not stop within 1500 ms of SIGTERM: the HTTP listener, the MCP session [0-9a-f-]{36} had not stopped\n/);
  }, 180_000);
});
