/**
 * Fitting follows the convention, and clearance holds for file arguments, on the path a real
 * agent takes: the official SDK's client as the agent, `oz0 mcp` as a process of its
 * own, an MCP server of the SDK's own behind it (over Streamable HTTP, in this process, so the
 * test sees every call the server gets and every result it sends), and the whole pipeline of
 * `npm start` in this process on the real stack.
 *
 * - FIT-8 `search`'s query is a search term: its result reaches the agent as the server sent it;
 * - FIT-8 the example manifest's `quote` with a money `budget: 2.5`: as sent, not a failed call;
 * - FIT-13 FIT-8 `get_page` fitting itself: not fitted again, the section text intact; asked
 *   for a summary it does not fit itself, it is fitted by the pipeline as before;
 * - FIT-8 a tool the pipeline has no manifest for is not fitted;
 * - OFF-9 FILE-1 a file argument above the agent's clearance is refused (the server never sees
 *   the call); one within it is handed.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Pipeline } from "../../topology/run.ts";
import { loadConfigDir } from "../../config/load.ts";
import { endpointsEnv } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { FileStore } from "../../store/files.ts";
import { minioClient } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { endpoints } from "../support/kafka.ts";
import { startTestPipeline, stopTestPipeline } from "../support/pipeline.ts";
import { startMcpHttpServer, type McpHttpServer } from "../support/mcp-http-server.ts";

const CONFIG_DIR = fileURLToPath(new URL("../fixtures/mcp-fit-config/", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CALL_MS = 90_000;

interface Answer {
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/** A page long enough that fitting it to any budget changes it. */
const PAGE = ["# Kafka guide", "", "What the guide covers.", ...Array.from({ length: 60 }, (_, i) => `## Part ${i}\n\nPart ${i} explains transactions, offsets and consumer group number ${i} at some length.`)].join("\n");
const SECTION = "Part 7 explains transactions, offsets and consumer group number 7 at some length.";

/** What the server answers each function with: eight hits, a page (fitted by itself when asked for a section), a price. */
function answerOf(name: string, args: Record<string, unknown>): Answer {
  if (name === "search") {
    const hits = Array.from({ length: 8 }, (_, i) => ({ title: `Hit ${i} for ${String(args.query)}`, url: `https://docs.example/${i}`, snippet: PAGE.slice(i * 40, i * 40 + 200) }));
    return { content: [{ type: "text", text: JSON.stringify({ hits }) }], structuredContent: { hits } };
  }
  if (name === "get_page" && args.view === "section") {
    // The seed's get_page fits its own answer: the section, with its note in content and _meta.
    const note = { view: "section", budget: args.budget ?? null, size: 2400, tokens: 20, omitted: "Every part but Part 7: ask for another by its heading." };
    const own = { content: SECTION, truncated: true, fit: note };
    return { content: [{ type: "text", text: JSON.stringify(own) }], structuredContent: own, _meta: { "oz0/fit": note } };
  }
  if (name === "get_page") return { content: [{ type: "text", text: PAGE }] };
  if (name === "quote") return { content: [{ type: "text", text: `The ${String(args.plan)} plan costs 2.40 USD a seat.` }], structuredContent: { usd: 2.4, within_budget: true } };
  return { content: [{ type: "text", text: `no function ${name}` }], isError: true };
}

/** An MCP server of the SDK's own over Streamable HTTP; every call it gets and every result it sends kept. */
async function startServer(): Promise<McpHttpServer & { served: Array<{ name: string; args: Record<string, unknown>; meta: Record<string, unknown> | undefined; sent: Answer }> }> {
  const served: Array<{ name: string; args: Record<string, unknown>; meta: Record<string, unknown> | undefined; sent: Answer }> = [];
  const page = { type: "object", properties: { path: { type: "string" }, view: { enum: ["stub", "summary", "section", "full"] }, budget: { type: "integer" }, query: { type: "string" } }, required: ["path"] };
  const tools = [
    { name: "search", description: "Searches the docs.", inputSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] } },
    { name: "get_page", description: "A page of the docs.", inputSchema: page },
    { name: "quote", description: "Prices a plan.", inputSchema: { type: "object", properties: { plan: { type: "string" }, budget: { type: "number" } }, required: ["plan"] } },
  ];
  const server = await startMcpHttpServer("fit-docs", tools, (name, args, meta) => {
    const sent = answerOf(name, args);
    served.push({ name, args, meta, sent });
    return sent;
  });
  return { ...server, served };
}

describe("oz0 mcp fits only what adopted the fit convention, and holds file arguments to clearance (the SDK's client and server, the whole pipeline)", () => {
  const run = randomUUID().slice(0, 8);
  const tenant = `fitconv-${run}`;
  const log = createLogger({ test: "mcp-fit-convention" }, () => {});
  let pipeline: Pipeline | undefined;
  let server: Awaited<ReturnType<typeof startServer>>;
  let dir: string;
  const clients: Client[] = [];

  /**
   * A gateway process for `plugin` and the SDK's client talking to it. fit_docs's manifest is
   * the published one with the server's URL; fit_unpublished's is a local file only, with a
   * get_page that adopts the convention, of which the pipeline knows nothing.
   */
  async function gateway(plugin: "fit_docs" | "fit_unpublished", job = `fitconv-job-${randomUUID().slice(0, 8)}`, filesDir = join(dir, "files")): Promise<{ client: Client; job: string }> {
    const manifest = join(dir, `${plugin}-${randomUUID().slice(0, 8)}.yaml`);
    const published = (await readFile(join(CONFIG_DIR, "plugins/fit_docs.yaml"), "utf8")).replace("http://127.0.0.1:9/mcp", server.url);
    await writeFile(manifest, plugin === "fit_docs" ? published : published.replaceAll("fit_docs", "fit_unpublished"));
    const transport = new StdioClientTransport({
      command: "npx",
      args: ["tsx", "bin/oz0.ts", "mcp", "--plugin", manifest, "--tenant", tenant, "--agent", "fit-reader", "--job", job, "--timeout-ms", String(CALL_MS), "--files-dir", filesDir],
      cwd: ROOT,
      env: { ...(process.env as Record<string, string>), ...endpointsEnv(endpoints()), OZ0_LOG_LEVEL: "warn" },
      stderr: "inherit",
    });
    const client = new Client({ name: "mcp-fit-convention-test", version: "1" });
    await client.connect(transport, { timeout: 120_000 });
    clients.push(client);
    return { client, job };
  }

  const call = async (client: Client, name: string, args: Record<string, unknown>): Promise<Answer> => (await client.callTool({ name, arguments: args }, undefined, { timeout: CALL_MS })) as unknown as Answer;
  /** The last call the server got of `name`, and what it sent back. */
  const lastServed = (name: string) => [...server.served].reverse().find((s) => s.name === name);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "oz0-fitconv-"));
    server = await startServer();
    pipeline = await startTestPipeline(`fitconv-${run}`, CONFIG_DIR, "MCP fit convention test", log);
  }, 240_000);

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await stopTestPipeline(pipeline);
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it("FIT-8 the fixture's get_page and quote are the example manifest's, so these calls are the example's", async () => {
    const example = (await loadConfigDir("config/examples")).plugins.get("acme_docs")?.tools[0]?.functions ?? [];
    const fixture = (await loadConfigDir(CONFIG_DIR)).plugins.get("fit_docs")?.tools[0]?.functions ?? [];
    for (const name of ["get_page", "quote"]) {
      const { requires_approval: _approval, ...asExample } = example.find((f) => f.name === name) ?? { name: "missing", input_schema: {} };
      expect(fixture.find((f) => f.name === name)).toEqual(asExample);
    }
  });

  it("FIT-8 search's query is a search term: its eight hits reach the agent exactly as the server sent them, not a summary stub", async () => {
    const { client } = await gateway("fit_docs");
    const answer = await call(client, "search", { query: "kafka transactions" });
    const served = lastServed("search");
    expect(served?.args).toEqual({ query: "kafka transactions" });
    expect(answer).toEqual(served?.sent);
    expect(JSON.stringify(answer)).toBe(JSON.stringify(served?.sent));
    expect(answer._meta?.["oz0/fit"]).toBeUndefined();
    expect((answer.structuredContent?.hits as unknown[]).length).toBe(8);
  }, 300_000);

  it("FIT-8 the example manifest's quote with a money budget of 2.5 is made with it and answered as sent, not as a failed call", async () => {
    const { client } = await gateway("fit_docs");
    const answer = await call(client, "quote", { plan: "team", budget: 2.5 });
    const served = lastServed("quote");
    expect(served?.args).toEqual({ plan: "team", budget: 2.5 });
    expect(answer.isError).toBeFalsy();
    expect(answer).toEqual(served?.sent);
    expect(answer.content[0]?.text).not.toMatch(/whole number/);
  }, 300_000);

  it("FIT-13 FIT-8 get_page fitting itself is not fitted again: the section text arrives intact with the server's own note; asked for a summary, the pipeline fits it as before", async () => {
    const { client } = await gateway("fit_docs");
    const own = await call(client, "get_page", { path: "kafka.md", view: "section", query: "Part 7", budget: 300 });
    const served = lastServed("get_page");
    expect(answerOf("get_page", served?.args ?? {})).toEqual(served?.sent);
    expect(own).toEqual(served?.sent);
    expect(own.structuredContent?.content).toBe(SECTION);
    expect(own._meta?.["oz0/fit"]).toMatchObject({ view: "section", size: 2400, tokens: 20 });

    const fitted = await call(client, "get_page", { path: "kafka.md", view: "summary", budget: 300 });
    expect(lastServed("get_page")?.sent.content[0]?.text).toBe(PAGE);
    // FIT-6: a summary that does not fit 300 tokens falls to the stub; either way, fitted by the pipeline.
    expect(fitted._meta?.["oz0/fit"]).toMatchObject({ budget: 300 });
    expect(fitted.structuredContent).toMatchObject({ fit: { budget: 300 }, truncated: true });
    expect(fitted.content[0]?.text).not.toBe(PAGE);
  }, 300_000);

  it("FIT-8 a tool the pipeline has no manifest for is not fitted: its get_page with view and budget reaches the agent as sent", async () => {
    const { client } = await gateway("fit_unpublished");
    const answer = await call(client, "get_page", { path: "kafka.md", view: "summary", budget: 300 });
    const served = lastServed("get_page");
    // Nothing filled in either: the pipeline knows no manifest of fit_unpublished (FIT-15).
    expect(served?.args).toEqual({ path: "kafka.md", view: "summary", budget: 300 });
    expect(answer).toEqual(served?.sent);
    expect(answer.content[0]?.text).toBe(PAGE);
    expect(answer._meta?.["oz0/fit"]).toBeUndefined();
  }, 300_000);

  it("OFF-9 FILE-1 a file argument above the agent's clearance is refused and the server never sees the call; a file within it is handed", async () => {
    const job = `fitconv-job-${randomUUID().slice(0, 8)}`;
    const filesDir = join(dir, `handed-${run}`);
    const files = new FileStore({ client: minioClient(endpoints()), bucket: process.env.OZ0_BUCKET ?? "oz0-files", keys: PayloadKeys.fromEnv() });
    const secret = await files.store({ tenant, tree: job }, Buffer.from(`the payroll of ${job}`), { labels: ["internal", "pii"] });
    const notes = await files.store({ tenant, tree: job }, Buffer.from(`the meeting notes of ${job}`), { labels: ["internal"] });
    const { client } = await gateway("fit_docs", job, filesDir);

    const servedBefore = server.served.length;
    const refused = await call(client, "search", { query: secret.ref });
    expect(refused.isError).toBe(true);
    expect(refused.content[0]?.text).toBe(
      `The call was not made: a file handed to it is above this agent's clearance (argument query: ${secret.ref} is withheld by clearance: one of its labels is above the clearance of agent fit-reader, so it is not handed to a tool). Call it without that file.`,
    );
    expect(refused._meta?.["oz0/decision"]).toMatchObject({ verdict: "refuse", reason_code: "ClearanceExceeded" });
    expect(server.served.length, "the server saw no call").toBe(servedBefore);
    expect(existsSync(join(filesDir, secret.ref.slice("oz0-file:sha256:".length)))).toBe(false);

    const handed = await call(client, "search", { query: notes.ref });
    expect(handed.isError).toBeFalsy();
    const local = join(filesDir, notes.ref.slice("oz0-file:sha256:".length));
    expect(lastServed("search")?.meta?.["oz0/files"]).toEqual({ query: local });
    expect(await readFile(local, "utf8")).toBe(`the meeting notes of ${job}`);
  }, 300_000);
});
