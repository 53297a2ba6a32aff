/**
 * The rails `oz0 mcp` keeps on the path a real agent takes, with the official SDK's
 * client as the agent, an MCP server of the SDK's own behind the gateway (over Streamable HTTP,
 * in this process, so the test sees every call the server gets), and the whole pipeline of
 * `npm start` in this process on the real stack:
 *
 * - LOOP-7 and LIM-8 finish-only: the server's tools are withdrawn with
 *   `notifications/tools/list_changed`, and a call made anyway reads the refusal; the server
 *   never sees it;
 * - a call the pipeline dead-letters is answered within a second, with the dead letter's reason;
 * - OFF-9 a result's labels (the manifest's and the result's own) reach the published ToolResult,
 *   so `oz.read_result` withholds it from an agent without the clearance.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Pipeline } from "../../topology/run.ts";
import { RuntimeClient } from "../../client/runtime-client.ts";
import { endpointsEnv } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { JobEvent, ModelCall } from "../../schemas/types.ts";
import { FileStore } from "../../store/files.ts";
import { minioClient } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { endpoints } from "../support/kafka.ts";
import { startTestPipeline, stopTestPipeline } from "../support/pipeline.ts";
import { startMcpHttpServer, type McpHttpServer } from "../support/mcp-http-server.ts";

const CONFIG_DIR = fileURLToPath(new URL("../fixtures/mcp-rails-config/", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CALL_MS = 90_000;

interface Answer {
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/** Payroll of `lines` lines, well over rails-hr's offload threshold of 2,000 tokens. */
const payroll = (lines: number): string => ["# Payroll", "", ...Array.from({ length: lines }, (_, i) => `Employee ${i + 1} is paid ${1000 + i} a month, before tax, on the last day.`)].join("\n");

/** An MCP server of the SDK's own over Streamable HTTP: `search` finds nothing, `payroll` names its own labels. */
async function startServer(): Promise<McpHttpServer & { served: string[] }> {
  const served: string[] = [];
  const tools = [
    { name: "search", description: "Searches the docs.", inputSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] } },
    { name: "payroll", description: "The payroll.", inputSchema: { type: "object", properties: {} } },
  ];
  const server = await startMcpHttpServer("rails", tools, (name, args) => {
    served.push(`${name} ${JSON.stringify(args)}`);
    if (name === "payroll") return { content: [{ type: "text", text: payroll(300) }], _meta: { "oz0/labels": ["pii"] } };
    return { content: [{ type: "text", text: "No hits." }] };
  });
  return { ...server, served };
}

describe("oz0 mcp keeps the rails: finish-only, dead letters, labels (the SDK's client and server, the whole pipeline)", () => {
  const run = randomUUID().slice(0, 8);
  const tenant = `rails-${run}`;
  const log = createLogger({ test: "mcp-rails" }, () => {});
  let pipeline: Pipeline | undefined;
  let server: Awaited<ReturnType<typeof startServer>>;
  let redis: RedisClient;
  let dir: string;
  const clients: Client[] = [];
  const planted: string[] = [];

  /** A gateway process for `plugin` (a manifest naming the test's server), and the SDK's client talking to it. */
  async function gateway(plugin: "rails_search" | "rails_hr", agent: string, job = `rails-job-${randomUUID().slice(0, 8)}`): Promise<{ client: Client; job: string; changed: () => number }> {
    const manifest = join(dir, `${plugin}.yaml`);
    await writeFile(manifest, `name: ${plugin}\ntools:\n  - id: ${plugin}\n    mcp: "${server.url}"\n    results: {fit: false}\n${plugin === "rails_hr" ? "    labels: [hr]\n" : ""}`);
    const transport = new StdioClientTransport({
      command: "npx",
      args: ["tsx", "bin/oz0.ts", "mcp", "--plugin", manifest, "--tenant", tenant, "--agent", agent, "--job", job, "--timeout-ms", String(CALL_MS)],
      cwd: ROOT,
      env: { ...(process.env as Record<string, string>), ...endpointsEnv(endpoints()), OZ0_LOG_LEVEL: "warn" },
      stderr: "inherit",
    });
    const client = new Client({ name: "mcp-rails-test", version: "1" });
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changed += 1;
    });
    await client.connect(transport, { timeout: 120_000 });
    clients.push(client);
    return { client, job, changed: () => changed };
  }

  const call = async (client: Client, name: string, args: Record<string, unknown>): Promise<Answer> => (await client.callTool({ name, arguments: args }, undefined, { timeout: CALL_MS })) as unknown as Answer;
  const names = async (client: Client): Promise<string[]> => (await client.listTools()).tools.map((t) => t.name);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "oz0-rails-"));
    server = await startServer();
    redis = redisClient(endpoints());
    pipeline = await startTestPipeline(`rails-${run}`, CONFIG_DIR, "MCP rails test agents", log);
  }, 240_000);

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await stopTestPipeline(pipeline);
    if (redis) {
      if (planted.length > 0) await redis.del(...planted);
      redis.disconnect();
    }
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it("LOOP-7 no progress withdraws the server's tools with tools/list_changed, leaving oz.read_result; a call made anyway reads the refusal and the server never sees it", async () => {
    const { client, changed } = await gateway("rails_search", "rails-searcher");
    expect(await names(client)).toEqual(["search", "payroll", "oz.read_result"]);
    const servedBefore = server.served.length;
    let crossed: Answer | undefined;
    // Nothing new comes back: after the line (no_progress: 3) the result carries the words.
    for (let i = 0; i < 8 && crossed === undefined; i++) {
      const answer = await call(client, "search", { query: `kafka transactions ${i}` });
      if (typeof answer._meta?.["oz0/no_progress"] === "string") crossed = answer;
    }
    expect(crossed, "a result crossed the no-progress line").toBeDefined();
    const words = crossed?._meta?.["oz0/no_progress"] as string;
    expect(words).toMatch(/No progress/);
    const made = server.served.length - servedBefore;

    for (let waited = 0; changed() === 0 && waited < 5_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    expect(changed(), "notifications/tools/list_changed").toBe(1);
    expect(await names(client)).toEqual(["oz.read_result"]);

    const anyway = await call(client, "search", { query: "one more try" });
    expect(anyway.isError).toBe(true);
    expect(anyway.content[0]?.text).toBe(words);
    expect(anyway._meta?.["oz0/decision"]).toMatchObject({ verdict: "refuse", reason_code: "NoProgress" });
    expect(server.served.length - servedBefore, "the server saw no call after the line").toBe(made);
  }, 300_000);

  it("LIM-8 the soft wall crossed by the tree's model usage withdraws the server's tools with tools/list_changed; a call made anyway is refused and the server never sees it", async () => {
    const job = `rails-job-${randomUUID().slice(0, 8)}`;
    const runtime = await RuntimeClient.connect(endpoints(), { log, listen: [] });
    try {
      // The job is the agent host's: it starts it, and its model calls are its own (the gateway fronts the tools).
      const started: JobEvent = { id: randomUUID(), tenant, tree_id: job, job_id: job, parent_job_id: null, run_id: `${job}-run`, agent: "rails-spender", kind: "started", started_by: "person", delegation: "none", depth: 0, outcome: null, principal: "rails-test", team: null, permissions: [], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts: Date.now() };
      await runtime.publishJobEvents([started]);
      const { client, changed } = await gateway("rails_search", "rails-spender", job);
      expect((await call(client, "search", { query: "before the wall" })).isError).toBeFalsy();
      expect(changed()).toBe(0);
      const servedBefore = server.served.length;

      // 1,000 tokens in and 1,000 out: $0.018 of the tree's $0.02, past warn_share (80%) and soft_wall (85%).
      const ask: ModelCall = { id: randomUUID(), tenant, tree_id: job, job_id: job, run_id: `${job}-run`, request_id: randomUUID(), kind: "ask", model: "claude-sonnet-4", input_tokens: 1_000, max_output_tokens: 100, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, agent: "rails-spender", ts: Date.now() };
      await runtime.publishModelCalls([ask, { ...ask, id: randomUUID(), kind: "usage", output_tokens: 1_000, ts: Date.now() }]);
      for (let waited = 0; changed() === 0 && waited < 30_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
      expect(changed(), "notifications/tools/list_changed").toBe(1);
      expect(await names(client)).toEqual(["oz.read_result"]);

      const anyway = await call(client, "search", { query: "after the wall" });
      expect(anyway.isError).toBe(true);
      expect(anyway.content[0]?.text).toMatch(/soft.?wall|only the answer is left/i);
      expect(anyway._meta?.["oz0/decision"]).toMatchObject({ verdict: "refuse" });
      expect(server.served.length).toBe(servedBefore);
    } finally {
      await runtime.close();
    }
  }, 300_000);

  it("SYS-1 a call the pipeline dead-letters (a WRONGTYPE key over its run's loop lane) is answered within a second with the dead letter's reason; the server is not called", async () => {
    const { client, job } = await gateway("rails_search", "rails-searcher");
    // A first call: the gateway, the pipeline and the server have all answered once.
    expect((await call(client, "search", { query: "warm up" })).isError).toBeFalsy();
    const key = new Keys().loopLane(tenant, `${job}-run`, "calls");
    await redis.del(key);
    await redis.set(key, "planted by hand");
    planted.push(key);
    const servedBefore = server.served.length;
    const started = Date.now();
    const answer = await call(client, "search", { query: "dead letter" });
    const took = Date.now() - started;
    expect(answer.isError).toBe(true);
    expect(answer.content[0]?.text).toContain("The guard rails could not decide this tool call");
    expect(answer.content[0]?.text).toContain("WRONGTYPE Operation against a key holding the wrong kind of value");
    expect(answer.content[0]?.text).toContain("oz0.dead-letter");
    expect(answer._meta?.["oz0/decision"]).toMatchObject({ verdict: "refuse", reason_code: "DeadLettered" });
    expect(took, `answered in ${took} ms`).toBeLessThan(1_000);
    expect(server.served.length).toBe(servedBefore);
  }, 300_000);

  it("OFF-9 a result's labels from the manifest (hr) and from its _meta oz0/labels (pii) reach the published ToolResult: the stored result keeps both, and oz.read_result withholds it from an agent cleared for hr alone", async () => {
    const { client, job } = await gateway("rails_hr", "rails-hr");
    const stub = await call(client, "payroll", {});
    expect(stub.isError).toBeFalsy();
    const ref = (stub.structuredContent?.offloaded as { ref?: string } | undefined)?.ref;
    expect(ref).toMatch(/^oz0-file:sha256:[0-9a-f]{64}$/);
    const files = new FileStore({ client: minioClient(endpoints()), bucket: process.env.OZ0_BUCKET ?? "oz0-files", keys: PayloadKeys.fromEnv() });
    expect((await files.grantOf({ tenant, tree: job }, ref as string))?.labels?.slice().sort()).toEqual(["hr", "pii"]);

    const read = await call(client, "oz.read_result", { ref, range: "1-5" });
    expect(read.isError).toBe(true);
    expect(read.content[0]?.text).toMatch(/withheld by clearance: one of its labels is above the clearance of agent rails-hr/);
    expect(JSON.stringify(read)).not.toContain("Employee 3 is paid");
  }, 300_000);
});
