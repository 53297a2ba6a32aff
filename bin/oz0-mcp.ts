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
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createServer as createHttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parsePlugin, type PluginManifest, type PluginTool } from "../config/plugin.ts";
import { McpGateway, type GatewayFiles } from "../client/mcp/gateway.ts";
import { requestKey, type KeyBinding } from "../client/gateway/keys.ts";
import { redisKeyStore } from "../client/gateway/redis-store.ts";
import type { KeyStore } from "../client/gateway/store.ts";
import { Keys } from "../store/redis/keys.ts";
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
import { servicesForCommand } from "../topology/services.ts";
import { Shutdown } from "../lib/stopping.ts";

export const MCP_HELP = `oz0 mcp --plugin <oz0-plugin.yaml> [--tool ID] --tenant T --agent A [--job J] [options]
oz0 mcp --tenant T --agent A [--name NAME] [options] -- <server command...>
oz0 mcp --plugin <oz0-plugin.yaml> --tenant T --agent A --listen 127.0.0.1:8930   (agents over Streamable HTTP)
oz0 mcp --plugin <oz0-plugin.yaml> --listen 127.0.0.1:8930 --keys   (each request's key names its tenant, agent and job)

An MCP server over stdio for an agent, in front of the plugin's own MCP server (started as a
child over stdio, or reached over Streamable HTTP when the manifest's mcp is a URL): every tools/call is decided by the guard rails before the server sees it,
and the agent reads the result as the pipeline delivers it (fitted, offloaded to a stub that
oz.read_result pages through, or as it was). tools/list gives the server's tools as they are,
and oz.read_result; once only the answer is left (no progress, the soft wall) it gives
oz.read_result alone, and a call made anyway is refused. Results carry the manifest tool's
labels and those of the result's _meta["oz0/labels"].

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
  --listen [HOST:]PORT  serve agents over Streamable HTTP at /mcp instead of stdio (host default 127.0.0.1):
                     each MCP session is a job of its own (with --job, a run of that job), with its own server
  --keys             with --listen: every request to /mcp carries a key of the project's
                     (Authorization: Bearer oz0_..., from oz0 run or oz0 keys create); the session's
                     tenant, agent, job, tree and run are the key's, never the flags'. An unknown,
                     expired or revoked key, or none, is answered 401; a session used with another
                     key, or a key of another tenant or agent than --tenant or --agent name, 403.
                     Listening on a host that is not loopback takes --keys.
                     On SIGINT or SIGTERM it closes its sessions and exits; past OZ0_MCP_STOP_MS
                     (default 10000) it exits 1, naming what had not stopped.

Under oz0 run, what these flags leave out comes from the job it started: OZ0_TENANT, OZ0_AGENT,
OZ0_JOB, OZ0_TREE and OZ0_RUN (not OZ0_RUN with --listen), so the tool calls join its job.

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
  listen: { type: "string" },
  keys: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** How the server is reached (a command to start over stdio, or a Streamable HTTP URL) and what the events call it. */
type Upstream = ({ readonly command: string; readonly args: string[] } | { readonly url: URL }) & {
  readonly plugin: string;
  readonly tool: string;
  /** OFF-9: the manifest's labels of the tool, carried by every result. */
  readonly labels: readonly string[];
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
    const labels = tool.labels ?? [];
    if (typeof argv === "string") return { url: new URL(argv), plugin: parsed.value.name, tool: tool.id, labels };
    const [cmd, ...args] = argv;
    if (cmd === undefined) throw usage(`${values.plugin}: the tool ${tool.id} has no command\n`);
    return { command: cmd, args, plugin: parsed.value.name, tool: tool.id, labels };
  }
  const [cmd, ...args] = command;
  if (cmd === undefined) throw usage(`give the plugin's manifest (--plugin) or the server's command after --\n\n${MCP_HELP}`);
  const name = values.name ?? basename(cmd).replace(/\.[cm]?js$/, "").replace(/[^A-Za-z0-9_-]/g, "_");
  return { command: cmd, args, plugin: name, tool: name, labels: [] };
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

/**
 * The job `oz0 run` started, from its environment (OZ0_JOB, OZ0_TENANT, OZ0_AGENT, OZ0_TREE,
 * OZ0_RUN), for what the flags leave out: an oz0 mcp the agent starts joins that job and run.
 * Flags win, each on its own. With --listen each session is a run of its own, so OZ0_RUN is not
 * taken there.
 */
export function jobFromEnvironment(flags: { tenant?: string; agent?: string; job?: string; tree?: string; run?: string; listen?: string }, env: NodeJS.ProcessEnv): { tenant?: string; agent?: string; job?: string; tree?: string; run?: string } {
  const given = (name: string): string | undefined => (env[name]?.trim() ? env[name]?.trim() : undefined);
  const job = flags.job ?? given("OZ0_JOB");
  const joined = flags.job === undefined && job !== undefined;
  return {
    tenant: flags.tenant ?? given("OZ0_TENANT"),
    agent: flags.agent ?? given("OZ0_AGENT"),
    job,
    // A tree and a run name the job's: taken only with the job they belong to.
    tree: flags.tree ?? (joined ? given("OZ0_TREE") : undefined),
    run: flags.run ?? (joined && flags.listen === undefined ? given("OZ0_RUN") : undefined),
  };
}

/** Runs one session until the agent closes stdin; resolves with the exit status. */
export async function mcpCommand(argv: string[]): Promise<number> {
  const split = argv.indexOf("--");
  const own = split < 0 ? argv : argv.slice(0, split);
  const command = split < 0 ? [] : argv.slice(split + 1);
  const { values: flags } = parse(MCP_HELP, own, OPTIONS);
  const values = { ...flags, ...jobFromEnvironment(flags, process.env) };
  if (values.help) throw new Exit(0, MCP_HELP, "stdout");
  const listen = values.listen === undefined ? undefined : listenAddress(values.listen);
  const keyed = flags.keys === true;
  if (keyed) {
    if (!listen) throw usage(`--keys checks the key of each HTTP request: it goes with --listen (over stdio the session is the flags')\n`);
    const named = (["job", "tree", "run", "principal"] as const).filter((f) => flags[f] !== undefined);
    if (named.length > 0) throw usage(`${named.map((f) => `--${f}`).join(", ")}: with --keys each session's job, tree and run are its key's (oz0 keys create --job ...)\n`);
  } else {
    if (!values.tenant || !values.agent) throw usage(`--tenant and --agent are required\n\n${MCP_HELP}`);
    if (listen && !LOOPBACK.has(listen.host)) throw usage(`--listen ${values.listen}: a host that is not loopback takes --keys, so each agent reaching it is bound to its job by its key, not by what it says\n`);
  }
  if (listen && (flags.tree !== undefined || flags.run !== undefined)) throw usage(`--tree and --run name one session's; with --listen each session is a job (or, with --job, a run) of its own\n`);
  const upstream = await upstreamOf(values, command);
  const log: Logger = createLogger({ component: "oz0-mcp", ...(keyed ? (flags.tenant === undefined ? {} : { tenant: flags.tenant }) : { tenant: values.tenant }) });
  const answerMs = positiveInt(values["timeout-ms"], "timeout-ms", 30_000);
  const endpoints = await servicesForCommand();
  // Admissions for LIM-8's soft wall (finish-only); dead letters are read too, so a dead-lettered call or result is answered at once.
  const runtime = await RuntimeClient.connect(endpoints, { log, timeoutMs: answerMs, listen: ["callDecision", "delivered", "decidedCall", "admission"] });
  const { files, close: closeFiles } = gatewayFiles(endpoints);
  const principal = values.principal ?? "mcp";
  const settings = { answerMs, filesDir: values["files-dir"] ?? join(tmpdir(), "oz0-files"), inlineMaxBytes: positiveInt(values["inline-max"], "inline-max", 256 * 1024) };

  /**
   * One session: its job (made here unless --job; with --keys, its key's, started by whoever
   * made the key), its own connection to the server, its gateway and its MCP server.
   */
  const open = async (n: number, key?: KeyBinding): Promise<Session> => {
    const ownsJob = key === undefined && values.job === undefined;
    const job = key?.job_id ?? values.job ?? `mcp-${randomUUID()}`;
    const run = key?.run_id ?? values.run ?? (listen && !ownsJob ? `${job}-run-${randomUUID().slice(0, 8)}` : `${job}-run`);
    const ctx: CallContext = key
      ? { tenant: key.tenant, tree_id: key.tree_id, job_id: key.job_id, run_id: key.run_id, agent: key.agent, origin: "model" }
      : { tenant: values.tenant as string, tree_id: values.tree ?? job, job_id: job, run_id: run, agent: values.agent as string, origin: "model" };
    const slog = log.child({ job, run, session: n, ...(key ? { tenant: key.tenant, key: key.id } : {}) });
    const client = new Client({ name: "oz0-mcp", version: "1" });
    await client.connect("url" in upstream ? new StreamableHTTPClientTransport(upstream.url) : new StdioClientTransport({ command: upstream.command, args: upstream.args, stderr: "inherit" }));
    if (ownsJob) await runtime.publishJobEvents([startedEvent(ctx, principal)]);
    // LIM-3: a call that waits for a person counts against the tree's wait, from wait_started to wait_ended.
    const waitEvent = (kind: "wait_started" | "wait_ended"): JobEvent => ({ ...startedEvent(ctx, principal), kind });
    const gateway = new McpGateway({ runtime, upstream: client, files, session: ctx, target: { plugin: upstream.plugin, tool: upstream.tool }, labels: upstream.labels, log: slog, settings, waitEvent });
    const server = new Server({ name: `oz0-mcp ${upstream.plugin}`, version: "1" }, { capabilities: { tools: { listChanged: true } } });
    gateway.attach(server);
    let closing: Promise<void> | undefined;
    const close = (): Promise<void> =>
      (closing ??= (async () => {
        slog.info("the session ends", { calls: gateway.calls });
        gateway.close();
        if (ownsJob) await runtime.publishJobEvents([{ ...startedEvent(ctx, principal), id: randomUUID(), kind: "ended", outcome: "completed" }]).catch(() => undefined);
        await Promise.allSettled([client.close(), server.close()]);
      })());
    slog.info("a session starts", { plugin: upstream.plugin, tool: upstream.tool, server: "url" in upstream ? upstream.url.href : upstream.command });
    return { server, client, close };
  };

  // --listen runs until SIGINT or SIGTERM; from then its stop has OZ0_MCP_STOP_MS (Kafka or a
  // server may not answer), after which it exits 1 naming what had not stopped.
  const shutdown = new Shutdown("oz0 mcp");
  const signalled = listen ? stopOnSignal(shutdown, stopWithinMs(process.env)) : undefined;
  try {
    if (listen && signalled) await serveHttp(listen, open, log, signalled, shutdown, keyed ? keyCheck(endpoints, { tenant: flags.tenant, agent: flags.agent }) : undefined);
    else await serveStdio(await open(0));
  } finally {
    await shutdown.stop("the runtime client (Kafka)", () => runtime.close());
    await shutdown.stop("the files' Redis client", () => closeFiles());
  }
  for (const f of shutdown.failures) log.warn("a part of the gateway failed to stop", { part: f.part, error: f.error instanceof Error ? f.error.message : String(f.error) });
  return 0;
}

/** How long `oz0 mcp --listen` has to stop once signalled: OZ0_MCP_STOP_MS, else 10 s. */
export function stopWithinMs(env: NodeJS.ProcessEnv): number {
  const given = env.OZ0_MCP_STOP_MS?.trim();
  if (!given) return 10_000;
  const n = Number(given);
  if (!Number.isInteger(n) || n <= 0) throw usage(`OZ0_MCP_STOP_MS=${given}: expected a whole number of milliseconds above 0\n`);
  return n;
}

/**
 * The first SIGINT or SIGTERM. From then the stop has `ms`: past it the process exits 1, saying
 * on stderr which parts had not stopped.
 */
function stopOnSignal(shutdown: Shutdown, ms: number): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals): void => {
      process.off("SIGINT", on);
      process.off("SIGTERM", on);
      shutdown.within(ms, (stopping) => {
        process.stderr.write(`oz0 mcp: did not stop within ${ms} ms of ${signal}: ${stopping.length > 0 ? `${stopping.join(", ")} had not stopped` : "the process did not exit"}\n`);
        process.exit(1);
      });
      resolve(signal);
    };
    process.on("SIGINT", on);
    process.on("SIGTERM", on);
  });
}

/** What `--keys` answers a request: the key's binding, or the status and JSON body that refuse it. */
export type KeyAnswer = { readonly ok: true; readonly binding: KeyBinding } | { readonly ok: false; readonly status: 401 | 403; readonly body: KeyRefusal };

/** The body of a refused request: why, in words, with the key's ID where it is known (never the key). */
export interface KeyRefusal {
  readonly error: { readonly code: "missing_key" | "unknown_key" | "expired_key" | "revoked_key" | "key_not_served" | "session_of_another_key"; readonly message: string };
}

/**
 * `--keys`: the key a request carries, checked in the store, and held to the listener's
 * --tenant and --agent when it names them. The key itself is never logged nor answered.
 */
export async function answerKey(store: KeyStore, headers: Parameters<typeof requestKey>[0], only: { readonly tenant?: string; readonly agent?: string }, now: number): Promise<KeyAnswer> {
  const key = requestKey(headers);
  if (key === null) return { ok: false, status: 401, body: { error: { code: "missing_key", message: "This MCP endpoint takes a key of oz0's: send Authorization: Bearer oz0_... (the key oz0 run or oz0 keys create gave)." } } };
  const c = await store.check(key, now);
  if (!c.ok) return { ok: false, status: 401, body: { error: { code: `${c.reason}_key`, message: c.message } } };
  const b = c.binding;
  if ((only.tenant !== undefined && b.tenant !== only.tenant) || (only.agent !== undefined && b.agent !== only.agent))
    return { ok: false, status: 403, body: { error: { code: "key_not_served", message: `The API key ${b.id} is bound to tenant ${b.tenant}, agent ${b.agent}; this endpoint serves ${only.tenant === undefined ? "" : `tenant ${only.tenant}`}${only.tenant !== undefined && only.agent !== undefined ? ", " : ""}${only.agent === undefined ? "" : `agent ${only.agent}`} only.` } } };
  return c;
}

/** The key check of `--keys`, on the keys kept in Redis. */
function keyCheck(endpoints: Endpoints, only: { readonly tenant?: string; readonly agent?: string }): (headers: Parameters<typeof requestKey>[0]) => Promise<KeyAnswer> {
  const redis = redisClient(endpoints, { maxRetriesPerRequest: 3, lazyConnect: true });
  const store = redisKeyStore(redis, new Keys());
  return (headers) => answerKey(store, headers, only, Date.now());
}

interface Session {
  readonly server: Server;
  readonly client: Client;
  close(): Promise<void>;
}

/** One session over stdio, until the agent closes its end or the server goes. */
async function serveStdio(session: Session): Promise<void> {
  const closed = new Promise<void>((resolve) => {
    session.server.onclose = () => resolve();
    session.client.onclose = () => resolve();
    // The agent closing its end is the end of the session.
    process.stdin.once("end", () => resolve());
  });
  await session.server.connect(new StdioServerTransport());
  await closed;
  await session.close();
}

/** `--listen HOST:PORT`: where the Streamable HTTP endpoint listens; loopback unless a host is named. */
export function listenAddress(value: string): { host: string; port: number } {
  const m = /^(?:(\[[0-9a-fA-F:]+\]|[^:]+):)?(\d+)$/.exec(value);
  const port = Number(m?.[2]);
  if (!m || !Number.isInteger(port) || port < 0 || port > 65535) throw usage(`--listen ${value}: expected [HOST:]PORT, such as 127.0.0.1:8930\n`);
  return { host: (m[1] ?? "127.0.0.1").replace(/^\[|\]$/g, ""), port };
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);

/**
 * Agents over Streamable HTTP at `/mcp`: each MCP session (an initialize without a session ID)
 * is a session of its own, with its own job (or run of --job) and its own connection to the
 * server. Listening on loopback, a request whose Host is not a loopback name is refused (a page
 * in a browser cannot reach it by DNS rebinding). With `checkKey` (--keys) every request's key
 * is checked first: a session is its key's job and run, and is used with that key only. Runs
 * until `signalled`; then closes every session (ending its streams) and the listener with every
 * connection still open, each a part of `shutdown`.
 */
async function serveHttp(
  at: { host: string; port: number },
  open: (n: number, key?: KeyBinding) => Promise<Session>,
  log: Logger,
  signalled: Promise<unknown>,
  shutdown: Shutdown,
  checkKey?: (headers: Parameters<typeof requestKey>[0]) => Promise<KeyAnswer>,
): Promise<void> {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; session: Session; key: string | null }>();
  const refuse = (res: ServerResponse, status: 401 | 403, body: KeyRefusal) =>
    void res.writeHead(status, { "content-type": "application/json", ...(status === 401 ? { "www-authenticate": `Bearer realm="oz0", error="invalid_token"` } : {}) }).end(`${JSON.stringify(body)}\n`);
  let opened = 0;
  const http = createHttpServer((req, res) => {
    void (async () => {
      const host = (req.headers.host ?? "").replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
      if (LOOPBACK.has(at.host) && !LOOPBACK.has(host)) return void res.writeHead(403).end("a loopback gateway answers loopback hosts only\n");
      if (new URL(req.url ?? "/", "http://gateway").pathname !== "/mcp") return void res.writeHead(404).end("the MCP endpoint is /mcp\n");
      // --keys: every request's key is checked, a revoked or expired one refused at once, even within a session.
      const keyed = checkKey ? await checkKey(req.headers) : undefined;
      if (keyed && !keyed.ok) {
        log.warn("a request's key was refused", { status: keyed.status, code: keyed.body.error.code });
        return refuse(res, keyed.status, keyed.body);
      }
      const binding = keyed?.binding;
      const id = req.headers["mcp-session-id"];
      const known = typeof id === "string" ? sessions.get(id) : undefined;
      if (known && binding && known.key !== binding.id)
        return refuse(res, 403, { error: { code: "session_of_another_key", message: `The MCP session ${String(id)} was opened with another key: each session is used with the key that opened it (this one is ${binding.id}).` } });
      if (known) return known.transport.handleRequest(req, res);
      if (typeof id === "string") return void res.writeHead(404).end(`no session ${id}: initialize a new one\n`);
      // Only an initialize (a POST) opens a session, and with it a server of its own.
      if (req.method !== "POST") return void res.writeHead(400).end("no session: POST an initialize request to open one\n");
      const session = await open(++opened, binding);
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => void sessions.set(sid, { transport, session, key: binding?.id ?? null }),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
        void session.close();
      };
      await session.server.connect(transport);
      await transport.handleRequest(req, res);
      // A first request that was not an initialize opened nothing the agent can go on with.
      if (transport.sessionId === undefined) await session.close();
    })().catch((err: unknown) => {
      log.error("an HTTP request to the gateway failed", { error: err instanceof Error ? err.message : String(err) });
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(at.port, at.host, () => resolve());
  });
  const address = http.address() as AddressInfo;
  log.info("the gateway listens", { url: `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}/mcp` });
  process.stderr.write(`oz0 mcp: listening on http://${at.host.includes(":") ? `[${at.host}]` : at.host}:${address.port}/mcp\n`);
  await signalled;
  // No new connection; an agent's open stream (its GET, a call's answer) would hold the
  // listener open, so the sessions close first, then every connection left.
  const listener = shutdown.stop("the HTTP listener", () => new Promise<void>((resolve, reject) => http.close((err) => (err ? reject(err) : resolve()))));
  await Promise.all([...sessions.entries()].map(([sid, s]) => shutdown.stop(`the MCP session ${sid}`, () => s.session.close())));
  http.closeAllConnections();
  await listener;
}
