/**
 * The MCP gateway (`oz0 mcp`) with code nobody on the project wrote: the official SDK's client
 * as the agent, and the reference servers (server-filesystem, server-everything) behind it, on
 * the real stack with the whole pipeline of `npm start` in this process. Each gateway is a
 * process of its own, started by the SDK's stdio transport as an MCP client starts a server.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, stat, unlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createServer as createHttpServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import kafkajs from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publishLoadConfig } from "../../bench/load/publish-config.ts";
import { untilReady } from "../../bench/load/run.ts";
import { startPipeline, type Pipeline } from "../../topology/run.ts";
import { endpointsEnv, kafkaConfig } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { Serde } from "../../schemas/serde.ts";
import { FileStore } from "../../store/files.ts";
import { minioClient } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { endpoints } from "../support/kafka.ts";
import { oz0 } from "../support/oz0.ts";
import { startOz0 } from "../support/oz0-process.ts";

const CONFIG_DIR = fileURLToPath(new URL("../fixtures/mcp-config/", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const require = createRequire(import.meta.url);
const FS_SERVER = require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js");
const EVERYTHING_SERVER = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const CALL_MS = 90_000;

interface Text {
  type: string;
  text?: string;
  [k: string]: unknown;
}

interface Answer {
  content: Text[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/** A manual of `lines` lines, well over mcp-reader's offload threshold of 2,000 tokens. */
const manual = (lines: number): string => ["# Manual", "", ...Array.from({ length: lines }, (_, i) => `Line ${i + 1} of the manual says to check thing ${i + 1} before going on.`)].join("\n");

const PAGE = ["# Setup guide", "", "Read this before you start.", ...Array.from({ length: 30 }, (_, i) => `## Step ${i}\n\nStep ${i} says to do thing ${i}, then to check that thing ${i} worked before going on.`)].join("\n");

describe("oz0 mcp: the gateway between the official SDK's client and the reference servers, on the whole pipeline", () => {
  const run = randomUUID().slice(0, 8);
  const tenant = `mcp-${run}`;
  const log = createLogger({ test: "mcp-gateway" }, () => {});
  let pipeline: Pipeline | undefined;
  let dir: string;
  const clients: Client[] = [];

  /** A gateway process in front of `server` (argv), and the SDK's client talking to it. */
  /** With `job` null, the gateway makes the session's job itself and publishes its start and end. */
  async function gateway(args: string[], server: string[], job: string | null = `mcp-job-${randomUUID().slice(0, 8)}`): Promise<{ client: Client; job: string }> {
    const env = { ...(process.env as Record<string, string>), ...endpointsEnv(endpoints()), OZ0_LOG_LEVEL: "warn" };
    const transport = new StdioClientTransport({
      command: "npx",
      args: ["tsx", "bin/oz0.ts", "mcp", "--tenant", tenant, ...(job === null ? [] : ["--job", job]), "--timeout-ms", String(CALL_MS), ...args, "--", ...server],
      cwd: ROOT,
      env,
      stderr: "inherit",
    });
    const client = new Client({ name: "mcp-gateway-test", version: "1" });
    await client.connect(transport, { timeout: 120_000 });
    clients.push(client);
    return { client, job: job ?? "" };
  }

  const call = async (client: Client, name: string, args: Record<string, unknown>, onprogress?: (p: { message?: string }) => void): Promise<Answer> =>
    (await client.callTool({ name, arguments: args }, undefined, { timeout: CALL_MS, resetTimeoutOnProgress: true, ...(onprogress ? { onprogress } : {}) })) as unknown as Answer;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "oz0-mcp-"));
    const e = endpoints();
    const kafka = new kafkajs.Kafka({ ...kafkaConfig(`oz0-mcp-${run}`, e, process.env, log), logLevel: kafkajs.logLevel.ERROR });
    const serde = new Serde({ registryUrl: e.registryUrl });
    await serde.registerAll();
    await publishLoadConfig(kafka, serde, log, { dir: CONFIG_DIR, reason: "MCP gateway test agents" });
    pipeline = await startPipeline(e, log, { ops: { host: "127.0.0.1", port: 0 }, groupPrefix: `oz0.mcp-${run}.`, startAt: "end" });
    await untilReady(pipeline, 120_000);
  }, 240_000);

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    if (pipeline) {
      const p = pipeline;
      await p.stop().catch(() => undefined);
      const admin = p.kafka.admin();
      await admin.connect().then(() => admin.deleteGroups([...p.groups.values()]).catch(() => undefined), () => undefined);
      await admin.disconnect().catch(() => undefined);
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it("OFF-7 FIT-13 FIT-15 tools/list gives the server's tools with their input schemas untouched and oz.read_result; a read with view summary comes back fitted, its budget filled in", async () => {
    const { client } = await gateway(["--plugin", join(CONFIG_DIR, "plugins/mcp_fs.yaml"), "--agent", "mcp-reader"], ["node", FS_SERVER, dir]);
    const direct = new Client({ name: "direct", version: "1" });
    await direct.connect(new StdioClientTransport({ command: "node", args: [FS_SERVER, dir], stderr: "ignore" }));
    clients.push(direct);
    const listed = (await client.listTools()).tools;
    const own = (await direct.listTools()).tools;
    expect(listed.map((t) => t.name)).toEqual([...own.map((t) => t.name), "oz.read_result"]);
    for (const t of own) expect(listed.find((l) => l.name === t.name)?.inputSchema).toEqual(t.inputSchema);
    expect(listed.find((t) => t.name === "oz.read_result")?.inputSchema).toMatchObject({ required: ["ref"] });

    await writeFile(join(dir, "setup.md"), PAGE);
    const fitted = await call(client, "read_text_file", { path: join(dir, "setup.md"), view: "summary", budget: 1500 });
    expect(fitted.isError).toBeFalsy();
    const note = fitted._meta?.["oz0/fit"] as { view: string; budget: number; tokens: number } | undefined;
    expect(note).toMatchObject({ view: "summary", budget: 1500 });
    expect(note?.tokens).toBeLessThanOrEqual(1500);
    expect(fitted.structuredContent).toMatchObject({ fit: { view: "summary" } });

    // No budget: the pipeline fills one in (FIT-15), the server is called with it, the result is fitted to it.
    const filled = await call(client, "read_text_file", { path: join(dir, "setup.md"), view: "summary" });
    const filledNote = filled._meta?.["oz0/fit"] as { budget?: number } | undefined;
    expect(typeof filledNote?.budget).toBe("number");
    expect(filledNote?.budget).toBeGreaterThanOrEqual(500);
  }, 300_000);

  it("OFF-3 OFF-6 a big file read through the filesystem server comes back as the stub, and oz.read_result pages through it by line range", async () => {
    const { client } = await gateway(["--plugin", join(CONFIG_DIR, "plugins/mcp_fs.yaml"), "--agent", "mcp-reader"], ["node", FS_SERVER, dir]);
    await writeFile(join(dir, "manual.md"), manual(400));
    const stub = await call(client, "read_text_file", { path: join(dir, "manual.md") });
    expect(stub.isError).toBeFalsy();
    const offloaded = stub.structuredContent?.offloaded as { ref: string; lines: number } | undefined;
    expect(offloaded?.ref).toMatch(/^oz0-file:sha256:[0-9a-f]{64}$/);
    expect(JSON.stringify(stub)).not.toContain("Line 300 of the manual");

    const part = await call(client, "oz.read_result", { ref: offloaded?.ref, range: "120-125" });
    expect(part.isError).toBeFalsy();
    const text = JSON.stringify(part);
    expect(text).toContain("Line 119 of the manual");
    expect(text).not.toContain("Line 200 of the manual");
  }, 300_000);

  it("LOOP-2 LOOP-5 the same call three times waits for a person with progress notifications, is approved with oz0 approval approve, and goes ahead", async () => {
    const { client, job } = await gateway(["--plugin", join(CONFIG_DIR, "plugins/mcp_fs.yaml"), "--agent", "mcp-reader"], ["node", FS_SERVER, dir]);
    await writeFile(join(dir, "loop.md"), "# Loop\n\nThe same page, again.");
    const args = { path: join(dir, "loop.md") };
    expect((await call(client, "read_text_file", args)).isError).toBeFalsy();
    expect((await call(client, "read_text_file", args)).isError).toBeFalsy();
    const progress: string[] = [];
    const third = call(client, "read_text_file", args, (p) => progress.push(p.message ?? ""));

    // The approval is found as a person finds it, then answered as a person answers it.
    let approval: string | undefined;
    const until = Date.now() + 60_000;
    while (approval === undefined && Date.now() < until) {
      const listed = await oz0(["approval", "list", "--tenant", tenant, "--json"]);
      const waiting = JSON.parse(listed.out || "[]") as Array<{ approval: string; job_id: string }>;
      approval = waiting.find((w) => w.job_id === job)?.approval;
      if (approval === undefined) await new Promise((r) => setTimeout(r, 1_000));
    }
    expect(approval, "the loop's approval is listed").toBeDefined();
    expect(progress.some((m) => m.includes(`oz0 approval approve ${job} ${approval}`))).toBe(true);
    const approved = await oz0(["approval", "approve", job, approval as string, "--comment", "the test reads it again", "--as", "mcp-test"]);
    expect(approved.code, approved.err).toBe(0);
    const answer = await third;
    expect(answer.isError).toBeFalsy();
    expect(JSON.stringify(answer)).toContain("The same page, again.");
  }, 300_000);

  it("LIM-1 a session past its agent's limits.timeout is refused: its calls read AgentTimeout and the server sees none", async () => {
    // The gateway makes the session's job and publishes its start: the job's clock starts there.
    const { client } = await gateway(["--plugin", join(CONFIG_DIR, "plugins/mcp_fs.yaml"), "--agent", "mcp-brief"], ["node", FS_SERVER, dir], null);
    await writeFile(join(dir, "brief.md"), "# Brief\n\nRead it quickly.");
    expect((await call(client, "read_text_file", { path: join(dir, "brief.md") })).isError).toBeFalsy();
    await new Promise((r) => setTimeout(r, 10_500));
    const target = join(dir, "late.txt");
    const late = await call(client, "write_file", { path: target, content: "too late" });
    expect(late.isError).toBe(true);
    expect(late._meta?.["oz0/decision"]).toMatchObject({ verdict: "stop", reason_code: "AgentTimeout", limit: "limits.timeout" });
    expect(late.content[0]?.text).toMatch(/ran past its 10s \(limits.timeout\)/);
    expect(existsSync(target)).toBe(false);
  }, 300_000);

  it("LOOP-6 an agent with on_loop: stop gets the stop words and the server sees no call", async () => {
    const { client } = await gateway(["--plugin", join(CONFIG_DIR, "plugins/mcp_fs.yaml"), "--agent", "mcp-stopper"], ["node", FS_SERVER, dir]);
    const target = join(dir, "written.txt");
    const args = { path: target, content: "written once more" };
    for (let i = 0; i < 2; i++) {
      expect((await call(client, "write_file", args)).isError).toBeFalsy();
      expect(existsSync(target)).toBe(true);
      await unlink(target);
    }
    const stopped = await call(client, "write_file", args);
    expect(stopped.isError).toBe(true);
    expect(stopped.content[0]?.text).toMatch(/loop/i);
    expect(stopped._meta?.["oz0/decision"]).toMatchObject({ verdict: "stop", reason_code: "LoopDetected" });
    // The server was never called: the file it would have written is not there.
    expect(existsSync(target)).toBe(false);
  }, 300_000);

  it("LOOP-9 a tool switched off with the kill switch is refused with the switch's words, and the server is not called", async () => {
    const switched = "mcp_off/mcp_off";
    const reason = `the MCP gateway's test ${run}`;
    const { client } = await gateway(["--plugin", join(CONFIG_DIR, "plugins/mcp_off.yaml"), "--agent", "mcp-reader"], ["node", FS_SERVER, dir]);
    const thrown = await oz0(["config", "kill-switch", switched, "--reason", reason, "--by", "mcp-test"]);
    expect(thrown.code, thrown.err).toBe(0);
    try {
      const target = join(dir, "off.txt");
      let answer: Answer | undefined;
      const until = Date.now() + 60_000;
      // The switch reaches the pipeline's config table within moments; calls before it go ahead.
      for (let i = 0; Date.now() < until; i++) {
        answer = await call(client, "write_file", { path: target, content: `try ${i}` });
        if (answer.isError) break;
        await unlink(target).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 1_000));
      }
      expect(answer?.isError).toBe(true);
      expect(answer?.content[0]?.text).toContain("switched off");
      expect(answer?._meta?.["oz0/decision"]).toMatchObject({ verdict: "refuse", reason_code: "KillSwitch" });
      expect(existsSync(target)).toBe(false);
    } finally {
      await oz0(["config", "kill-switch", switched, "--off", "--reason", `${reason}: done`, "--by", "mcp-test"]);
    }
  }, 300_000);

  it("FILE-1 a call whose top-level argument is a file of its tree gets the file as a local path in _meta oz0/files, put there read-only before the server is called", async () => {
    const job = `mcp-job-${randomUUID().slice(0, 8)}`;
    const filesDir = join(dir, "handed");
    const bytes = Buffer.from(`the archive of ${job}`);
    const files = new FileStore({ client: minioClient(endpoints()), bucket: process.env.OZ0_BUCKET ?? "oz0-files", keys: PayloadKeys.fromEnv() });
    const { ref } = await files.store({ tenant, tree: job }, bytes);
    const { client } = await gateway(["--plugin", join(CONFIG_DIR, "plugins/mcp_fs.yaml"), "--agent", "mcp-reader", "--files-dir", filesDir], ["node", FS_SERVER, dir], job);
    const answer = await call(client, "list_allowed_directories", { archive: ref });
    expect(answer.isError).toBeFalsy();
    const local = join(filesDir, ref.slice("oz0-file:sha256:".length));
    expect(await readFile(local, "utf8")).toBe(`the archive of ${job}`);
    expect((await stat(local)).mode & 0o222).toBe(0);
    // A ref the tree may not read is not handed: the call goes ahead without it.
    const other = await files.store({ tenant, tree: `${job}-other` }, Buffer.from("another tree's file"));
    await call(client, "list_allowed_directories", { archive: other.ref });
    expect(existsSync(join(filesDir, other.ref.slice("oz0-file:sha256:".length)))).toBe(false);
  }, 300_000);

  it("a server reached over Streamable HTTP (the manifest's mcp a URL): its calls are decided and delivered as over stdio", async () => {
    // A server of the official SDK over Streamable HTTP on loopback, in this process.
    const served: string[] = [];
    const mcp = new Server({ name: "lookup", version: "1" }, { capabilities: { tools: {} } });
    mcp.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: "lookup", description: "Looks a word up.", inputSchema: { type: "object", properties: { word: { type: "string" } }, required: ["word"] } }] }));
    mcp.setRequestHandler(CallToolRequestSchema, (req) => {
      const word = String(req.params.arguments?.word);
      served.push(word);
      return { content: [{ type: "text", text: `${word}: a word` }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
    await mcp.connect(transport);
    const http = createHttpServer((req, res) => void transport.handleRequest(req, res));
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    const port = (http.address() as AddressInfo).port;
    try {
      const manifest = join(dir, "mcp_http.yaml");
      await writeFile(manifest, `name: mcp_http\ntools:\n  - id: mcp_http\n    mcp: "http://127.0.0.1:${port}/mcp"\n    results: {fit: false}\n`);
      const transportToGateway = new StdioClientTransport({
        command: "npx",
        args: ["tsx", "bin/oz0.ts", "mcp", "--plugin", manifest, "--tenant", tenant, "--agent", "mcp-everything", "--timeout-ms", String(CALL_MS)],
        cwd: ROOT,
        env: { ...(process.env as Record<string, string>), ...endpointsEnv(endpoints()), OZ0_LOG_LEVEL: "warn" },
        stderr: "inherit",
      });
      const client = new Client({ name: "mcp-gateway-test", version: "1" });
      await client.connect(transportToGateway, { timeout: 120_000 });
      clients.push(client);
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["lookup", "oz.read_result"]);
      const answer = await call(client, "lookup", { word: "gateway" });
      expect(answer.isError).toBeFalsy();
      expect(answer.content).toEqual([{ type: "text", text: "gateway: a word" }]);
      expect(served).toEqual(["gateway"]);
    } finally {
      await mcp.close().catch(() => undefined);
      await new Promise<void>((resolve) => http.close(() => resolve()));
    }
  }, 300_000);

  it("agents over Streamable HTTP (--listen): each MCP session is a run of its own, so two sessions' same calls are no loop; a Host that is not loopback is refused", async () => {
    const probe = createHttpServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const gatewayProcess = startOz0(["mcp", "--plugin", join(CONFIG_DIR, "plugins/mcp_fs.yaml"), "--tenant", tenant, "--agent", "mcp-stopper", "--listen", `127.0.0.1:${port}`, "--timeout-ms", String(CALL_MS), "--", "node", FS_SERVER, dir], {
      ...process.env,
      ...endpointsEnv(endpoints()),
      OZ0_LOG_LEVEL: "warn",
    });
    try {
      await gatewayProcess.said(`oz0 mcp: listening on http://127.0.0.1:${port}/mcp`, 120_000);
      const url = new URL(`http://127.0.0.1:${port}/mcp`);
      // A page served from another name that resolves to loopback (DNS rebinding) sends its own Host.
      const refused = await new Promise<number>((resolve, reject) => {
        const req = httpRequest({ host: "127.0.0.1", port, path: "/mcp", method: "POST", headers: { host: `attacker.example:${port}`, "content-type": "application/json" } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.once("error", reject);
        req.end("{}");
      });
      expect(refused).toBe(403);

      const target = join(dir, "http-written.txt");
      const args = { path: target, content: "two sessions, same call" };
      for (const n of [1, 2]) {
        const client = new Client({ name: `mcp-http-${n}`, version: "1" });
        await client.connect(new StreamableHTTPClientTransport(url));
        clients.push(client);
        // Twice in each session: a third in one run would be a loop (on_loop: stop, repeats 3).
        for (let i = 0; i < 2; i++) {
          const answer = await call(client, "write_file", args).catch((err: unknown) => {
            throw new Error(`session ${n}, call ${i + 1}: ${err instanceof Error ? err.message : String(err)}; the gateway said: ${gatewayProcess.stderr().slice(-3000)}`);
          });
          expect(answer.isError, JSON.stringify(answer)).toBeFalsy();
        }
        await client.close();
      }
      expect(await readFile(target, "utf8")).toBe("two sessions, same call");
    } finally {
      // The gateway and the filesystem server it started stop together, within a bound.
      await gatewayProcess.stop();
    }
  }, 300_000);

  it("SYS-2 server-everything's structured content and image pass whole when small, as the server gave them", async () => {
    const server = ["node", EVERYTHING_SERVER, "stdio"];
    const { client } = await gateway(["--plugin", join(CONFIG_DIR, "plugins/mcp_everything.yaml"), "--agent", "mcp-everything"], server);
    const direct = new Client({ name: "direct", version: "1" });
    const [cmd, ...rest] = server;
    await direct.connect(new StdioClientTransport({ command: cmd as string, args: rest, stderr: "ignore" }));
    clients.push(direct);
    for (const [name, args] of [
      ["get-structured-content", { location: "Chicago" }],
      ["get-tiny-image", {}],
    ] as const) {
      const through = await call(client, name, args);
      const own = (await direct.callTool({ name, arguments: args })) as unknown as Answer;
      expect(through.isError).toBeFalsy();
      expect(through.content).toEqual(own.content);
      expect(through.structuredContent).toEqual(own.structuredContent);
    }
    const image = (await call(client, "get-tiny-image", {})).content.find((c) => c.type === "image");
    expect(image).toMatchObject({ type: "image", mimeType: "image/png" });
    expect(typeof image?.data).toBe("string");
  }, 300_000);
});
