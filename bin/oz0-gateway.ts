/**
 * `oz0 gateway`: the model gateway (client/gateway/server.ts) as a command, and how `npm start`
 * serves it beside the pipeline. Its settings come from flags, else the environment:
 *
 * | setting | flag | environment | default |
 * | --- | --- | --- | --- |
 * | where it listens | `--listen HOST:PORT` | `OZ0_GATEWAY_LISTEN` | 127.0.0.1:8940 |
 * | OpenAI's base URL | `--upstream openai=URL` | `OZ0_GATEWAY_UPSTREAM_OPENAI` | https://api.openai.com/v1 |
 * | Anthropic's base URL | `--upstream anthropic=URL` | `OZ0_GATEWAY_UPSTREAM_ANTHROPIC` | https://api.anthropic.com |
 * | OpenAI's key | | `OZ0_OPENAI_API_KEY`, or a file named by `OZ0_OPENAI_API_KEY_FILE` | none |
 * | Anthropic's key | | `OZ0_ANTHROPIC_API_KEY`, or `OZ0_ANTHROPIC_API_KEY_FILE` | none |
 *
 * The providers' keys are never taken as flags (a flag shows in the process list), never logged.
 */
import { readFileSync } from "node:fs";
import { RuntimeClient } from "../client/runtime-client.ts";
import { DEFAULT_GATEWAY_HOST, DEFAULT_GATEWAY_PORT, startGateway, type Gateway } from "../client/gateway/server.ts";
import type { Endpoints } from "../processors/runner/endpoints.ts";
import { createLogger, type Logger } from "../processors/runner/log.ts";
import { redisKeyStore } from "../client/gateway/redis-store.ts";
import { redisClient } from "../store/redis/client.ts";
import { Keys } from "../store/redis/keys.ts";
import { parse, usage } from "./cli.ts";
import { servicesForCommand } from "../topology/services.ts";

export const GATEWAY_HELP = `oz0 gateway [--listen HOST:PORT] [--upstream openai=URL] [--upstream anthropic=URL]

The model gateway: an HTTP server that speaks OpenAI's chat completions and Responses APIs
(POST /v1/chat/completions, POST /v1/responses, GET /v1/models) and Anthropic's messages API
(POST /v1/messages), streamed and not, in front of the providers. Each request carries a key oz0 made (oz0 run, oz0
keys create), bound to a tenant, an agent and a job; limits-model-calls decides each call
before the provider sees it (402 in the provider's error shape when it is refused), and the
provider's usage settles it. npm start serves it too.

  --listen HOST:PORT    where to listen (default ${DEFAULT_GATEWAY_HOST}:${DEFAULT_GATEWAY_PORT}; OZ0_GATEWAY_LISTEN)
  --upstream P=URL      a provider's base URL: openai=https://api.openai.com/v1 (with its /v1),
                        anthropic=https://api.anthropic.com (OZ0_GATEWAY_UPSTREAM_OPENAI, _ANTHROPIC)

The providers' keys come from the environment only: OZ0_OPENAI_API_KEY and
OZ0_ANTHROPIC_API_KEY, or files named by OZ0_OPENAI_API_KEY_FILE and OZ0_ANTHROPIC_API_KEY_FILE.

An agent points at it with its SDK's usual variables (oz0 run sets them):
  OPENAI_BASE_URL=http://127.0.0.1:${DEFAULT_GATEWAY_PORT}/v1  OPENAI_API_KEY=oz0_...
  ANTHROPIC_BASE_URL=http://127.0.0.1:${DEFAULT_GATEWAY_PORT}  ANTHROPIC_API_KEY=oz0_...
`;

export interface GatewaySettings {
  readonly host: string;
  readonly port: number;
  readonly upstreams: { openai: string; anthropic: string };
  readonly credentials: { openai?: string; anthropic?: string };
}

const DEFAULT_UPSTREAMS = { openai: "https://api.openai.com/v1", anthropic: "https://api.anthropic.com" } as const;

/** `HOST:PORT`, `:PORT` or `PORT`. */
export function parseListen(value: string, what: string): { host: string; port: number } {
  const m = /^(?:(\[[^\]]+\]|[^:]*):)?(\d+)$/.exec(value.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || !Number.isInteger(port) || port < 0 || port > 65_535) throw usage(`${what} ${value}: expected HOST:PORT (such as 127.0.0.1:${DEFAULT_GATEWAY_PORT}) or a port\n`);
  const host = m[1] ? m[1].replace(/^\[|\]$/g, "") : DEFAULT_GATEWAY_HOST;
  return { host, port };
}

function secret(env: Record<string, string | undefined>, name: string): string | undefined {
  const direct = env[name];
  if (direct) return direct.trim();
  const file = env[`${name}_FILE`];
  if (!file) return undefined;
  try {
    return readFileSync(file, "utf8").trim() || undefined;
  } catch (err) {
    throw usage(`${name}_FILE=${file}: ${(err as NodeJS.ErrnoException).code ?? "cannot be read"}\n`);
  }
}

/** The gateway's settings from its flags (`--upstream` may repeat) and the environment. */
export function gatewaySettings(flags: { listen?: string; upstream?: string[] }, env: Record<string, string | undefined> = process.env): GatewaySettings {
  const { host, port } = parseListen(flags.listen ?? env.OZ0_GATEWAY_LISTEN ?? `${DEFAULT_GATEWAY_HOST}:${DEFAULT_GATEWAY_PORT}`, flags.listen ? "--listen" : "OZ0_GATEWAY_LISTEN");
  const upstreams: { openai: string; anthropic: string } = {
    openai: env.OZ0_GATEWAY_UPSTREAM_OPENAI || DEFAULT_UPSTREAMS.openai,
    anthropic: env.OZ0_GATEWAY_UPSTREAM_ANTHROPIC || DEFAULT_UPSTREAMS.anthropic,
  };
  for (const u of flags.upstream ?? []) {
    const m = /^(openai|anthropic)=(.+)$/.exec(u);
    if (!m) throw usage(`--upstream ${u}: expected openai=URL or anthropic=URL\n\n${GATEWAY_HELP}`);
    try {
      new URL(m[2] as string);
    } catch {
      throw usage(`--upstream ${u}: ${m[2]} is not a URL\n`);
    }
    upstreams[m[1] as "openai" | "anthropic"] = m[2] as string;
  }
  return { host, port, upstreams, credentials: { openai: secret(env, "OZ0_OPENAI_API_KEY"), anthropic: secret(env, "OZ0_ANTHROPIC_API_KEY") } };
}

/**
 * The gateway on the given services: its own runtime client (admissions only) and the keys in
 * Redis. `listenFrom: "first-publish"` has its client read admissions only from the gateway's
 * first model call on (`RuntimeClientOptions.listenFrom`): for a gateway that may sit unused
 * beside the pipeline, whose admissions it would otherwise fetch and decode all the while.
 */
export async function serveGateway(endpoints: Endpoints, settings: GatewaySettings, log: Logger, options: { readonly listenFrom?: "connect" | "first-publish" } = {}): Promise<Gateway> {
  const runtime = await RuntimeClient.connect(endpoints, { log, listen: ["admission"], listenFrom: options.listenFrom ?? "connect" });
  const redis = redisClient(endpoints);
  try {
    const gateway = await startGateway({ host: settings.host, port: settings.port, upstreams: settings.upstreams, credentials: settings.credentials, keys: redisKeyStore(redis, new Keys()), runtime, log });
    return {
      url: gateway.url,
      metrics: () => gateway.metrics(),
      close: async () => {
        await gateway.close();
        await runtime.close();
        redis.disconnect();
      },
    };
  } catch (err) {
    await runtime.close();
    redis.disconnect();
    throw err;
  }
}

/** `oz0 gateway`: serves until SIGINT or SIGTERM. */
export async function gatewayCommand(argv: string[]): Promise<number> {
  const { values } = parse(GATEWAY_HELP, argv, { listen: { type: "string" }, upstream: { type: "string", multiple: true }, help: { type: "boolean", short: "h" } } as const);
  if (values.help) {
    process.stdout.write(GATEWAY_HELP);
    return 0;
  }
  const settings = gatewaySettings(values);
  const log = createLogger({ component: "gateway" });
  const gateway = await serveGateway(await servicesForCommand(), settings, log);
  process.stderr.write(`oz0 gateway at ${gateway.url} (OpenAI clients: ${gateway.url}/v1; Anthropic clients: ${gateway.url}); metrics at ${gateway.url}/metrics\n`);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await gateway.close();
  return 0;
}
