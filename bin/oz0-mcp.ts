/**
 * `oz0 mcp`: the MCP gateway as a command (`client/mcp/gateway.ts`). It speaks MCP over stdio
 * to the agent and starts the plugin's server as its child over stdio; stdout is the protocol,
 * so every word of its own goes to stderr, as the structured log.
 */
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { parsePlugin, type PluginManifest, type PluginTool } from "../config/plugin.ts";
import { McpGateway, type GatewayFiles } from "../client/mcp/gateway.ts";
import { RuntimeClient, type CallContext } from "../client/runtime-client.ts";
import { filesState } from "../processors/files/env.ts";
import { createLogger, type Logger } from "../processors/runner/log.ts";
import type { Endpoints } from "../processors/runner/endpoints.ts";
import type { JobEvent } from "../schemas/types.ts";
import { FileStore } from "../store/files.ts";
import { minioClient } from "../store/objects.ts";
import { PayloadKeys } from "../store/payload-keys.ts";
import { redisClient } from "../store/redis/client.ts";
import { Exit, parse, usage } from "./cli.ts";
import { servicesForCommand } from "./services.ts";

export const MCP_HELP = `oz0 mcp --plugin <oz0-plugin.yaml> [--tool ID] --tenant T --agent A [--job J] [options]
oz0 mcp --tenant T --agent A [--name NAME] [options] -- <server command...>

An MCP server over stdio for an agent, in front of the plugin's own MCP server (started as a
child over stdio, or reached over Streamable HTTP when the manifest's mcp is a URL): every tools/call is decided by the guard rails before the server sees it,
and the agent reads the result as the pipeline delivers it (fitted, offloaded to a stub that
oz.read_result pages through, or as it was). tools/list gives the server's tools as they are,
and oz.read_result.

  --plugin FILE      the plugin's manifest; its tool's mcp command starts the server (or its URL reaches it)
  --tool ID          which of the manifest's tools (default: its only one)
  --name NAME        without a manifest: the plugin's name on the events (default: the command's)
  --tenant T         the tenant the calls are for (required)
  --agent A          the agent definition the calls run under (required)
  --job J            the job (default: a new one per session, started and ended by the gateway)
  --tree T           the job's tree (default: the job's ID)
  --run R            the run (default: <job>-run)
  --principal P      who started a job the gateway starts (default: the tenant's app, mcp)
  --timeout-ms N     how long the pipeline has to decide a call or deliver a result (default 30000)
  --files-dir DIR    where files handed to a call are put (FILE-1; default <tmp>/oz0-files)
  --inline-max N     a result above N bytes is stored in the file store and published by ref (default 262144)

Endpoints come from the environment (OZ0_KAFKA_BROKERS, OZ0_REGISTRY_URL, OZ0_REDIS_URL,
OZ0_MINIO_URL, ...), else the local stack. The pipeline must know the plugin's manifest
(oz0 config publish) for a budget to be filled in (FIT-15) and for its kill switch.

Example (an MCP client's configuration):
  {"mcpServers": {"docs": {"command": "npx", "args": ["oz0", "mcp", "--plugin", "plugins/acme_docs/oz0-plugin.yaml",
    "--tenant", "acme", "--agent", "acme-reviewer"]}}}
`;

const OPTIONS = {
  plugin: { type: "string" },
  tool: { type: "string" },
  name: { type: "string" },
  tenant: { type: "string" },
  agent: { type: "string" },
  job: { type: "string" },
  tree: { type: "string" },
  run: { type: "string" },
  principal: { type: "string" },
  "timeout-ms": { type: "string" },
  "files-dir": { type: "string" },
  "inline-max": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** How the server is reached (a command to start over stdio, or a Streamable HTTP URL) and what the events call it. */
type Upstream = ({ readonly command: string; readonly args: string[] } | { readonly url: URL }) & {
  readonly plugin: string;
  readonly tool: string;
};

function positiveInt(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw usage(`--${flag} ${value}: expected a whole number above 0\n\n${MCP_HELP}`);
  return n;
}

/** The tool of the manifest the session fronts: the one named, else the only one. */
export function pickTool(manifest: PluginManifest, id: string | undefined, path: string): PluginTool {
  if (id !== undefined) {
    const tool = manifest.tools.find((t) => t.id === id);
    if (!tool) throw usage(`--tool ${id}: ${path} has no such tool; its tools are ${manifest.tools.map((t) => t.id).join(", ") || "none"}\n`);
    return tool;
  }
  const only = manifest.tools[0];
  if (manifest.tools.length !== 1 || only === undefined) throw usage(`${path} has ${manifest.tools.length} tools (${manifest.tools.map((t) => t.id).join(", ")}): name one with --tool\n`);
  return only;
}

async function upstreamOf(values: { plugin?: string; tool?: string; name?: string }, command: string[]): Promise<Upstream> {
  if (values.plugin !== undefined) {
    const text = await readFile(values.plugin, "utf8").catch((err: unknown) => {
      throw usage(`--plugin ${values.plugin}: ${err instanceof Error ? err.message : String(err)}\n`);
    });
    const parsed = parsePlugin(text, values.plugin);
    if (!parsed.ok) throw usage(`${parsed.errors.map((e) => e.message).join("\n")}\n`);
    const tool = pickTool(parsed.value, values.tool, values.plugin);
    const argv = command.length > 0 ? command : tool.mcp;
    // A URL: the server runs already, reached over Streamable HTTP.
    if (typeof argv === "string") return { url: new URL(argv), plugin: parsed.value.name, tool: tool.id };
    const [cmd, ...args] = argv;
    if (cmd === undefined) throw usage(`${values.plugin}: the tool ${tool.id} has no command\n`);
    return { command: cmd, args, plugin: parsed.value.name, tool: tool.id };
  }
  const [cmd, ...args] = command;
  if (cmd === undefined) throw usage(`give the plugin's manifest (--plugin) or the server's command after --\n\n${MCP_HELP}`);
  const name = values.name ?? basename(cmd).replace(/\.[cm]?js$/, "").replace(/[^A-Za-z0-9_-]/g, "_");
  return { command: cmd, args, plugin: name, tool: name };
}

function startedEvent(ctx: CallContext, principal: string): JobEvent {
  return {
    id: randomUUID(),
    tenant: ctx.tenant,
    tree_id: ctx.tree_id,
    job_id: ctx.job_id,
    parent_job_id: null,
    run_id: ctx.run_id,
    agent: ctx.agent,
    kind: "started",
    started_by: "person",
    delegation: "none",
    depth: 0,
    outcome: null,
    principal,
    team: null,
    permissions: [],
    files: [],
    chosen_tree_id: false,
    conversation_id: null,
    previous_turn: null,
    session: true,
    ts: Date.now(),
  };
}

function gatewayFiles(endpoints: Endpoints): { files: GatewayFiles; close: () => void } {
  const store = new FileStore({ client: minioClient(endpoints), bucket: process.env.OZ0_BUCKET ?? "oz0-files", keys: PayloadKeys.fromEnv() });
  const redis = redisClient(endpoints, { maxRetriesPerRequest: 3, lazyConnect: true });
  const state = filesState(redis);
  return {
    files: { store: (owner, bytes, o) => store.store(owner, bytes, o), read: (reader, ref) => store.read(reader, ref), reader: (tenant, tree) => state.reader(tenant, tree) },
    close: () => redis.disconnect(),
  };
}

/** Runs one session until the agent closes stdin; resolves with the exit status. */
export async function mcpCommand(argv: string[]): Promise<number> {
  const split = argv.indexOf("--");
  const own = split < 0 ? argv : argv.slice(0, split);
  const command = split < 0 ? [] : argv.slice(split + 1);
  const { values } = parse(MCP_HELP, own, OPTIONS);
  if (values.help) throw new Exit(0, MCP_HELP, "stdout");
  if (!values.tenant || !values.agent) throw usage(`--tenant and --agent are required\n\n${MCP_HELP}`);
  const upstream = await upstreamOf(values, command);
  const job = values.job ?? `mcp-${randomUUID()}`;
  const ctx: CallContext = { tenant: values.tenant, tree_id: values.tree ?? job, job_id: job, run_id: values.run ?? `${job}-run`, agent: values.agent, origin: "model" };
  const log: Logger = createLogger({ component: "oz0-mcp", tenant: ctx.tenant, job: ctx.job_id });
  const answerMs = positiveInt(values["timeout-ms"], "timeout-ms", 30_000);

  const endpoints = await servicesForCommand();
  const runtime = await RuntimeClient.connect(endpoints, { log, timeoutMs: answerMs, listen: ["callDecision", "delivered", "decidedCall"] });
  const { files, close: closeFiles } = gatewayFiles(endpoints);
  const client = new Client({ name: "oz0-mcp", version: "1" });
  await client.connect("url" in upstream ? new StreamableHTTPClientTransport(upstream.url) : new StdioClientTransport({ command: upstream.command, args: upstream.args, stderr: "inherit" }));
  const ownsJob = values.job === undefined;
  if (ownsJob) await runtime.publishJobEvents([startedEvent(ctx, values.principal ?? "mcp")]);

  const gateway = new McpGateway({
    runtime,
    upstream: client,
    files,
    session: ctx,
    target: { plugin: upstream.plugin, tool: upstream.tool },
    log,
    settings: { answerMs, filesDir: values["files-dir"] ?? join(tmpdir(), "oz0-files"), inlineMaxBytes: positiveInt(values["inline-max"], "inline-max", 256 * 1024) },
  });
  const server = new Server({ name: `oz0-mcp ${upstream.plugin}`, version: "1" }, { capabilities: { tools: { listChanged: true } } });
  gateway.attach(server);
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    client.onclose = () => resolve();
    // The agent closing its end is the end of the session.
    process.stdin.once("end", () => resolve());
  });
  await server.connect(new StdioServerTransport());
  log.info("the gateway is up", { plugin: upstream.plugin, tool: upstream.tool, run: ctx.run_id, server: "url" in upstream ? upstream.url.href : upstream.command });
  await closed;
  log.info("the session ends", { calls: gateway.calls });
  if (ownsJob) await runtime.publishJobEvents([{ ...startedEvent(ctx, values.principal ?? "mcp"), id: randomUUID(), kind: "ended", outcome: "completed" }]).catch(() => undefined);
  await Promise.allSettled([client.close(), server.close(), runtime.close()]);
  closeFiles();
  return 0;
}
