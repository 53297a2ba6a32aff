/**
 * `oz0 mcp --listen --keys` on the whole pipeline: every request to /mcp carries a key of the
 * project's, and the session is its key's job, whatever the flags say. The official SDK's client
 * is the agent and the reference filesystem server is behind the gateway.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer as createHttpServer } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pipeline } from "../../topology/run.ts";
import { endpointsEnv } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { ToolCall } from "../../schemas/types.ts";
import { redisKeyStore } from "../../client/gateway/redis-store.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { collect, endpoints, serde } from "../support/kafka.ts";
import { oz0 } from "../support/oz0.ts";
import { startOz0, type Oz0Process } from "../support/oz0-process.ts";
import { startTestPipeline, stopTestPipeline } from "../support/pipeline.ts";

const CONFIG_DIR = fileURLToPath(new URL("../fixtures/mcp-config/", import.meta.url));
const FS_SERVER = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-filesystem/dist/index.js");
const CALL_MS = 90_000;

interface Refusal {
  error: { code: string; message: string };
}

describe("oz0 mcp --listen --keys: an agent over HTTP is bound to its job by its key, not by what it says", () => {
  const run = randomUUID().slice(0, 8);
  const tenant = `mcpkeys-${run}`;
  const log = createLogger({ test: "mcp-keys" }, () => {});
  let pipeline: Pipeline | undefined;
  let redis: RedisClient;
  let dir: string;
  let gateway: Oz0Process | undefined;
  const stderr = (): string => gateway?.stderr() ?? "";
  let url: URL;
  const clients: Client[] = [];

  async function freePort(): Promise<number> {
    const probe = createHttpServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    return port;
  }

  /** A raw POST of an initialize to /mcp with these headers: the status and the body. */
  async function post(headers: Record<string, string>): Promise<{ status: number; body: string; auth: string | null }> {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }),
    });
    return { status: res.status, body: await res.text(), auth: res.headers.get("www-authenticate") };
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "oz0-mcp-keys-"));
    redis = redisClient(endpoints());
    pipeline = await startTestPipeline(`mcp-keys-${run}`, CONFIG_DIR, "MCP keys test agents", log);
    const port = await freePort();
    url = new URL(`http://127.0.0.1:${port}/mcp`);
    // --tenant names the one tenant it serves; the job, tree and run are each key's.
    gateway = startOz0(["mcp", "--plugin", join(CONFIG_DIR, "plugins/mcp_fs.yaml"), "--tenant", tenant, "--listen", `127.0.0.1:${port}`, "--keys", "--timeout-ms", String(CALL_MS), "--", "node", FS_SERVER, dir], {
      ...process.env,
      ...endpointsEnv(endpoints()),
      OZ0_LOG_LEVEL: "warn",
    });
    await gateway.said(`oz0 mcp: listening on ${url.href}`, 120_000);
  }, 300_000);

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    // The gateway and the filesystem server it started stop together, within a bound.
    await gateway?.stop();
    await stopTestPipeline(pipeline);
    redis?.disconnect();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it("LIM-1 a request without a key, with an unknown key or a key of another tenant is refused (401 naming why, 403); a key's session is its job and run, and once revoked its next call is refused with 401", async () => {
    const store = redisKeyStore(redis, new Keys());
    const now = Date.now();
    const job = `keyjob-${run}`;
    const { key, binding } = await store.create({ tenant, agent: "mcp-reader", tree_id: `tree-${run}`, job_id: job, run_id: `run-${run}`, created_by: "test", expires_at: now + 3_600_000 }, now);
    const another = await store.create({ tenant, agent: "mcp-reader", tree_id: `tree-${run}-2`, job_id: `${job}-2`, run_id: `run-${run}-2`, created_by: "test", expires_at: now + 3_600_000 }, now);
    const elsewhere = await store.create({ tenant: `${tenant}-other`, agent: "mcp-reader", tree_id: "t", job_id: "j", run_id: "r", created_by: "test", expires_at: now + 3_600_000 }, now);

    const none = await post({});
    expect([none.status, (JSON.parse(none.body) as Refusal).error.code, none.auth]).toEqual([401, "missing_key", 'Bearer realm="oz0", error="invalid_token"']);
    const unknown = await post({ authorization: "Bearer oz0_nobodymadethiskeynobodymadethiskeynobodym" });
    expect([unknown.status, JSON.parse(unknown.body)]).toEqual([401, { error: { code: "unknown_key", message: expect.stringMatching(/not known to oz0/) as unknown } }]);
    const other = await post({ authorization: `Bearer ${elsewhere.key}` });
    expect([other.status, (JSON.parse(other.body) as Refusal).error.code]).toEqual([403, "key_not_served"]);

    const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${key}` } } });
    const client = new Client({ name: "mcp-keys", version: "1" });
    await client.connect(transport);
    clients.push(client);
    const target = join(dir, "keyed.txt");
    const answer = (await client.callTool({ name: "write_file", arguments: { path: target, content: "bound by its key" } }, undefined, { timeout: CALL_MS })) as { isError?: boolean };
    expect(answer.isError, `${JSON.stringify(answer)}; the gateway said: ${stderr().slice(-3000)}`).toBeFalsy();
    expect(await readFile(target, "utf8")).toBe("bound by its key");
    const s = await serde();
    const [call] = await collect<ToolCall>("oz0.tool-calls", "ToolCall", s, (c) => c.tenant === tenant && c.function === "write_file", 1, 60_000);
    expect(call).toMatchObject({ tenant, agent: "mcp-reader", tree_id: `tree-${run}`, job_id: job, run_id: `run-${run}` });

    // The session is its key's: another key of the same tenant may not use it.
    const sid = transport.sessionId as string;
    const borrowed = await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": sid, authorization: `Bearer ${another.key}` }, body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }) });
    expect([borrowed.status, ((await borrowed.json()) as Refusal).error.code]).toEqual([403, "session_of_another_key"]);

    await store.revoke(binding.id, "test", Date.now());
    const refused = await client.callTool({ name: "write_file", arguments: { path: target, content: "after revocation" } }, undefined, { timeout: CALL_MS }).then(
      () => "answered",
      (err: unknown) => `${String((err as { code?: unknown }).code)} ${err instanceof Error ? err.message : String(err)}`,
    );
    // The SDK raises its HTTP error with the status and the body's words.
    expect(refused).toMatch(/^401 .*"code":"revoked_key"/);
    expect(await readFile(target, "utf8")).toBe("bound by its key");
    const revoked = await post({ authorization: `Bearer ${key}` });
    expect([revoked.status, JSON.parse(revoked.body)]).toEqual([401, { error: { code: "revoked_key", message: `The API key ${binding.id} was revoked by test at ${new Date((await store.list({ tenant, job_id: job }))[0]?.revoked_at ?? 0).toISOString()}.` } }]);
    expect(stderr()).not.toContain(key);
  }, 300_000);

  it("--keys goes with --listen, takes no --job, and a listener beyond loopback takes --keys", async () => {
    const plugin = join(CONFIG_DIR, "plugins/mcp_fs.yaml");
    const stdio = await oz0(["mcp", "--plugin", plugin, "--keys", "--", "node", FS_SERVER, dir]);
    expect([stdio.code, stdio.err]).toEqual([2, expect.stringMatching(/--keys checks the key of each HTTP request: it goes with --listen/)]);
    const job = await oz0(["mcp", "--plugin", plugin, "--listen", "127.0.0.1:0", "--keys", "--job", "j", "--", "node", FS_SERVER, dir]);
    expect([job.code, job.err]).toEqual([2, expect.stringMatching(/--job: with --keys each session's job, tree and run are its key's/)]);
    const open = await oz0(["mcp", "--plugin", plugin, "--tenant", tenant, "--agent", "mcp-reader", "--listen", "0.0.0.0:0", "--", "node", FS_SERVER, dir]);
    expect([open.code, open.err]).toEqual([2, expect.stringMatching(/a host that is not loopback takes --keys/)]);
  });
});
