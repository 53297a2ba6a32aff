/**
 * `oz0 gateway`: the model gateway's HTTP server. It speaks the providers' own APIs (OpenAI's
 * `POST /v1/chat/completions`, `POST /v1/responses` and `GET /v1/models`, Anthropic's
 * `POST /v1/messages`), so an
 * agent needs only its base URL and key changed, and holds every model call to the job the key
 * is bound to (docs/gateway.md):
 *
 * 1. the key (`Authorization: Bearer` or `x-api-key`) is taken to its binding, or 401;
 * 2. the body is read (requests.ts), or 400;
 * 3. limits-model-calls is asked (a ModelCall of kind `ask` on oz0.model-calls, answered on
 *    oz0.admissions): `refuse`/`stop` is answered 402 in the provider's shape; `wait` holds the
 *    request until a person answers the budget request (then it asks again), the client goes
 *    away or the wait's bound passes; no answer in time is 503, and the call is not made;
 * 4. `allow`: the request goes to the upstream with the provider's own key, its output cap no
 *    higher than what was reserved (the decision's `max_output_tokens`);
 * 5. the answer passes back as it came (a stream event by event, OpenAI's usage-only chunk left
 *    out when the gateway asked for it), and its usage settles the reservation (a ModelCall of
 *    kind `usage` with the ask's request ID): the provider's own counts, or for a stream cut
 *    short the estimate of what was streamed; a provider's error releases it (no tokens).
 *
 * The provider's key is only ever put in the upstream request's header: never logged, never
 * answered. The project's key is logged by its ID only.
 */
import { randomUUID } from "node:crypto";
import { Agent as HttpAgent, createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { AddressInfo } from "node:net";
import type { RuntimeClient } from "../runtime-client.ts";
import { NoAnswer } from "../runtime-client.ts";
import type { Logger } from "../../processors/runner/log.ts";
import { Histogram, MetricsRegistry, type MetricFamily } from "../../processors/ops/metrics.ts";
import type { Decision, ModelCall } from "../../schemas/types.ts";
import { badRequest, isRefusal, noUpstream, notDecided, notFound, refusal, tooLarge, unauthorized, upstreamFailed, upstreamTimedOut, type ErrorReply } from "./errors.ts";
import { checkBinding, requestKey, type KeyBinding } from "./keys.ts";
import type { KeyStore } from "./store.ts";
import { askFields, capOutput, readRequest, type Api, type ModelRequest, type Provider } from "./requests.ts";
import { responseUsage, StreamUsage, usageFields, type Usage } from "./usage.ts";

/** Where `npm start` and `oz0 gateway` serve it unless told. */
export const DEFAULT_GATEWAY_PORT = 8940;
export const DEFAULT_GATEWAY_HOST = "127.0.0.1";

/** What the gateway needs of the runtime client. */
export type GatewayRuntime = Pick<RuntimeClient, "askModelCall" | "awaitAdmission" | "publishModelCalls">;

export interface GatewayOptions {
  /** @default 127.0.0.1 */
  host?: string;
  /** 0 takes a free port. @default 8940 */
  port?: number;
  /** Each provider's base URL: OpenAI's with its `/v1` (https://api.openai.com/v1), Anthropic's without (https://api.anthropic.com). */
  upstreams: { openai?: string; anthropic?: string };
  /** Each provider's own key, put only in the upstream request. */
  credentials: { openai?: string; anthropic?: string };
  keys: KeyStore;
  runtime: GatewayRuntime;
  log: Logger;
  /** How long limits-model-calls has to decide. @default 30000 */
  decideMs?: number;
  /** How long a call waits for a person's answer to a budget request at most. @default 86400000 */
  waitMaxMs?: number;
  /** How long the upstream has to start its answer. @default 600000 */
  upstreamMs?: number;
  /** The largest request body taken. @default 33554432 (32 MiB) */
  maxBodyBytes?: number;
  /** The Anthropic API version sent when the client sends none. @default 2023-06-01 */
  anthropicVersion?: string;
  /** The clock (ms). @default Date.now */
  now?: () => number;
}

export interface Gateway {
  /** Such as `http://127.0.0.1:8940`: OpenAI clients take `${url}/v1`, Anthropic clients `${url}`. */
  readonly url: string;
  /** The gateway's metrics, as `GET /metrics` serves them. */
  metrics(): MetricFamily[];
  close(): Promise<void>;
}

/** How one request ended, as counted in `oz0_gateway_requests_total{outcome}`. */
type Outcome = "answered" | "refused" | "unauthorized" | "bad_request" | "no_decision" | "upstream_error" | "provider_error" | "client_gone" | "not_found";

class GatewayMetrics {
  readonly requests = new Map<string, number>();
  readonly tokens = new Map<string, number>();
  readonly decide = new Histogram();
  readonly upstream = new Histogram();
  readonly firstByte = new Histogram();

  count(provider: Provider, outcome: Outcome): void {
    const k = `${provider}\u0000${outcome}`;
    this.requests.set(k, (this.requests.get(k) ?? 0) + 1);
  }

  spent(provider: Provider, u: Usage): void {
    for (const [kind, n] of [["input", u.input], ["output", u.output], ["cache_read", u.cacheRead], ["cache_write", u.cacheWrite]] as const) {
      const k = `${provider}\u0000${kind}`;
      this.tokens.set(k, (this.tokens.get(k) ?? 0) + n);
    }
  }

  families(): MetricFamily[] {
    const split = (k: string) => k.split("\u0000") as [string, string];
    return [
      {
        name: "oz0_gateway_requests_total",
        help: "Model gateway requests by provider and how they ended (answered, refused with 402, unauthorized, bad_request, no_decision, upstream_error, provider_error, client_gone, not_found).",
        type: "counter",
        samples: [...this.requests].map(([k, value]) => ({ labels: { provider: split(k)[0], outcome: split(k)[1] }, value })),
      },
      {
        name: "oz0_gateway_tokens_total",
        help: "Tokens the model gateway settled, by provider and kind (input, output, cache_read, cache_write).",
        type: "counter",
        samples: [...this.tokens].map(([k, value]) => ({ labels: { provider: split(k)[0], kind: split(k)[1] }, value })),
      },
      { name: "oz0_gateway_decision_seconds", help: "Time from a request to the guard rails' decision (waits for a person included).", type: "histogram", samples: this.decide.samples() },
      { name: "oz0_gateway_upstream_seconds", help: "Time from forwarding a call to the upstream's answer being whole.", type: "histogram", samples: this.upstream.samples() },
      { name: "oz0_gateway_first_byte_seconds", help: "Time from forwarding a call to the upstream's first byte.", type: "histogram", samples: this.firstByte.samples() },
    ];
  }
}

/** Which provider's API a request speaks, from its path; for `/v1/models`, from its headers. */
function route(method: string, path: string, req: IncomingMessage): { provider: Provider; op: Api | "models" } | { provider: Provider; op: null } {
  if (method === "POST" && path === "/v1/chat/completions") return { provider: "openai", op: "chat" };
  if (method === "POST" && path === "/v1/responses") return { provider: "openai", op: "responses" };
  if (method === "POST" && path === "/v1/messages") return { provider: "anthropic", op: "messages" };
  const anthropicClient = req.headers["anthropic-version"] !== undefined || (req.headers["x-api-key"] !== undefined && req.headers.authorization === undefined);
  const provider: Provider = anthropicClient || path.startsWith("/v1/messages") ? "anthropic" : "openai";
  if (method === "GET" && path === "/v1/models") return { provider, op: "models" };
  return { provider, op: null };
}

function sendError(res: ServerResponse, e: ErrorReply, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const body = JSON.stringify(e.body);
  res.writeHead(e.status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** The upstream's response headers an agent may read; hop-by-hop ones and the length (re-set) are left out. */
const PASSED_HEADERS = /^(content-type|x-request-id|request-id|openai-|anthropic-|x-ratelimit-|retry-after)/i;

function readBody(req: IncomingMessage, max: number): Promise<Buffer | "too_large"> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > max) {
        over = true;
        parts.length = 0;
        return;
      }
      parts.push(c);
    });
    req.on("end", () => resolve(over ? "too_large" : Buffer.concat(parts)));
    req.on("error", reject);
  });
}

/** The request's own abort: the client went away before the answer was whole. */
function clientGone(req: IncomingMessage, res: ServerResponse): AbortSignal {
  const ac = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) ac.abort();
  });
  req.on("aborted", () => ac.abort());
  return ac.signal;
}

export async function startGateway(o: GatewayOptions): Promise<Gateway> {
  const log = o.log;
  const now = o.now ?? Date.now;
  const decideMs = o.decideMs ?? 30_000;
  const waitMaxMs = o.waitMaxMs ?? 86_400_000;
  const upstreamMs = o.upstreamMs ?? 600_000;
  const maxBody = o.maxBodyBytes ?? 32 * 1024 * 1024;
  const anthropicVersion = o.anthropicVersion ?? "2023-06-01";
  const metrics = new GatewayMetrics();
  // Its own /metrics: the gateway's families and prom-client's default process metrics.
  const exposition = new MetricsRegistry();
  exposition.add(() => metrics.families());
  const agents = { http: new HttpAgent({ keepAlive: true, maxSockets: 256 }), https: new HttpsAgent({ keepAlive: true, maxSockets: 256 }) };
  const upstreams: Partial<Record<Provider, URL>> = {};
  for (const p of ["openai", "anthropic"] as const) {
    const u = o.upstreams[p];
    if (u === undefined) continue;
    let url: URL;
    try {
      url = new URL(u);
    } catch {
      throw new Error(`the ${p} upstream ${JSON.stringify(u)} is not a URL: give its base, such as ${p === "openai" ? "https://api.openai.com/v1" : "https://api.anthropic.com"}`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error(`the ${p} upstream ${u} is not http or https`);
    upstreams[p] = url;
  }

  /** The upstream's URL for a path under its base (OpenAI's base ends in /v1; Anthropic's paths start with /v1). */
  function upstreamUrl(p: Provider, op: Api | "models"): URL | null {
    const base = upstreams[p];
    if (!base) return null;
    const tail = p === "openai" ? (op === "models" ? "/models" : op === "responses" ? "/responses" : "/chat/completions") : op === "models" ? "/v1/models" : "/v1/messages";
    return new URL(base.href.replace(/\/+$/, "") + tail);
  }

  function upstreamHeaders(p: Provider, req: IncomingMessage, body: Buffer | null): Record<string, string> {
    const h: Record<string, string> = { accept: String(req.headers.accept ?? "application/json"), "accept-encoding": "identity" };
    if (body !== null) {
      h["content-type"] = "application/json";
      h["content-length"] = String(body.length);
    }
    const cred = o.credentials[p];
    if (p === "openai") {
      if (cred) h.authorization = `Bearer ${cred}`;
    } else {
      if (cred) h["x-api-key"] = cred;
      h["anthropic-version"] = String(req.headers["anthropic-version"] ?? anthropicVersion);
      const beta = req.headers["anthropic-beta"];
      if (beta !== undefined) h["anthropic-beta"] = Array.isArray(beta) ? beta.join(",") : beta;
    }
    return h;
  }

  /** Sends one upstream request; resolves with its response once the headers came. */
  function callUpstream(url: URL, method: string, headers: Record<string, string>, body: Buffer | null, signal: AbortSignal): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const https = url.protocol === "https:";
      const send = https ? httpsRequest : httpRequest;
      const r = send(url, { method, headers, agent: https ? agents.https : agents.http, signal });
      const timer = setTimeout(() => r.destroy(Object.assign(new Error("upstream timeout"), { code: "OZ0_UPSTREAM_TIMEOUT" })), upstreamMs);
      r.on("response", (res) => {
        clearTimeout(timer);
        resolve(res);
      });
      r.on("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
      r.end(body ?? undefined);
    });
  }

  /** Publishes what a call used, settling its reservation (no tokens: released). */
  async function settle(binding: KeyBinding, ask: ModelCall, usage: Usage, p: Provider): Promise<void> {
    metrics.spent(p, usage);
    const call: ModelCall = { ...ask, id: randomUUID(), ...usageFields(usage), max_output_tokens: null, ts: now() };
    await o.runtime.publishModelCalls([call]).catch((err: unknown) => {
      log.error("gateway: the usage of a model call could not be published; its reservation stays until the tree settles", { key: binding.id, job: binding.job_id, request: ask.request_id, err });
    });
  }

  /** Asks limits-model-calls, and holds a wait until a person answers, the client goes away or the bound passes. */
  async function decide(binding: KeyBinding, request: ModelRequest, signal: AbortSignal): Promise<{ ask: ModelCall; decision: Decision } | { gone: true } | { noAnswer: string }> {
    const waitUntil = now() + waitMaxMs;
    for (;;) {
      const ask: ModelCall = {
        id: randomUUID(),
        tenant: binding.tenant,
        tree_id: binding.tree_id,
        job_id: binding.job_id,
        run_id: binding.run_id,
        request_id: randomUUID(),
        agent: binding.agent,
        ts: now(),
        ...askFields(request),
      };
      let decision: Decision;
      try {
        decision = await o.runtime.askModelCall(ask, decideMs);
      } catch (err) {
        if (err instanceof NoAnswer) return { noAnswer: err.message };
        throw err;
      }
      if (decision.verdict !== "wait") return { ask, decision };
      log.info("gateway: a model call waits for a person", { key: binding.id, job: binding.job_id, decision: decision.id, reason: decision.reason_code });
      // The person's answer (oz0 approval approve|deny) is addressed to the wait decision.
      const left = waitUntil - now();
      if (left <= 0) return { ask, decision: { ...decision, verdict: "refuse", message: `${decision.message} Nobody answered within ${waitMaxMs} ms.` } };
      const answer = await Promise.race([
        o.runtime.awaitAdmission(decision.id, left).catch((err: unknown) => {
          if (err instanceof NoAnswer) return null;
          throw err;
        }),
        new Promise<"gone">((resolve) => (signal.aborted ? resolve("gone") : signal.addEventListener("abort", () => resolve("gone"), { once: true }))),
      ]);
      if (answer === "gone") return { gone: true };
      if (answer === null) return { ask, decision: { ...decision, verdict: "refuse", message: `${decision.message} Nobody answered within ${Math.round(left / 1000)} s.` } };
      if (answer.verdict !== "allow") return { ask, decision: answer };
      // Approved: the call is checked anew with a new ask.
    }
  }

  async function handleModels(req: IncomingMessage, res: ServerResponse, p: Provider, signal: AbortSignal): Promise<Outcome> {
    const url = upstreamUrl(p, "models");
    if (!url) {
      sendError(res, noUpstream(p));
      return "upstream_error";
    }
    try {
      const up = await callUpstream(url, "GET", upstreamHeaders(p, req, null), null, signal);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(up.headers)) if (PASSED_HEADERS.test(k) && typeof v === "string") headers[k] = v;
      res.writeHead(up.statusCode ?? 502, headers);
      up.pipe(res);
      await new Promise((resolve) => res.on("close", resolve));
      return (up.statusCode ?? 502) < 400 ? "answered" : "provider_error";
    } catch (err) {
      sendError(res, upstreamFailed(p, url.origin));
      log.warn("gateway: the upstream failed", { provider: p, upstream: url.origin, err });
      return "upstream_error";
    }
  }

  async function handleCall(req: IncomingMessage, res: ServerResponse, p: Provider, op: Api, binding: KeyBinding, signal: AbortSignal): Promise<Outcome> {
    const raw = await readBody(req, maxBody);
    if (raw === "too_large") {
      sendError(res, tooLarge(p, maxBody));
      return "bad_request";
    }
    const read = readRequest(p, raw.toString("utf8"), op);
    if (!read.ok) {
      sendError(res, badRequest(p, read.error));
      return "bad_request";
    }
    const url = upstreamUrl(p, op);
    if (!url) {
      sendError(res, noUpstream(p));
      return "upstream_error";
    }
    const asked = now();
    const decided = await decide(binding, read.request, signal);
    metrics.decide.observe((now() - asked) / 1000);
    if ("gone" in decided) return "client_gone";
    if ("noAnswer" in decided) {
      sendError(res, notDecided(p, decideMs, decided.noAnswer), { "retry-after": "5" });
      return "no_decision";
    }
    const { ask, decision } = decided;
    const oz0Headers: Record<string, string> = { "x-oz0-decision": decision.id };
    if (decision.numbers.unpriced_model) oz0Headers["x-oz0-price"] = `${read.request.model} is not in the price table: its worst case is held at the table's highest prices`;
    if (isRefusal(decision)) {
      sendError(res, refusal(p, decision), oz0Headers);
      log.info("gateway: a model call refused", { key: binding.id, job: binding.job_id, decision: decision.id, reason: decision.reason_code });
      return "refused";
    }
    const cap = typeof decision.numbers.max_output_tokens === "number" ? decision.numbers.max_output_tokens : null;
    const forward = capOutput(read.request, cap);
    // The body goes as it came unless its cap or its stream options were changed.
    const body = forward.capped || forward.dropUsageChunk ? Buffer.from(JSON.stringify(forward.request.body)) : raw;
    const sent = now();
    let up: IncomingMessage;
    try {
      up = await callUpstream(url, "POST", upstreamHeaders(p, req, body), body, signal);
    } catch (err) {
      await settle(binding, ask, { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, p);
      if (signal.aborted) return "client_gone";
      const timedOut = (err as { code?: string }).code === "OZ0_UPSTREAM_TIMEOUT";
      sendError(res, timedOut ? upstreamTimedOut(p, url.origin, upstreamMs) : upstreamFailed(p, url.origin), oz0Headers);
      log.warn("gateway: the upstream failed", { provider: p, upstream: url.origin, err: (err as Error).message });
      return "upstream_error";
    }
    metrics.firstByte.observe((now() - sent) / 1000);
    const status = up.statusCode ?? 502;
    const headers: Record<string, string> = { ...oz0Headers };
    for (const [k, v] of Object.entries(up.headers)) if (PASSED_HEADERS.test(k) && typeof v === "string") headers[k] = v;
    const isStream = status < 300 && /text\/event-stream/i.test(String(up.headers["content-type"] ?? ""));
    if (!isStream) {
      const parts: Buffer[] = [];
      try {
        for await (const c of up) parts.push(c as Buffer);
      } catch {
        await settle(binding, ask, { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, p);
        sendError(res, upstreamFailed(p, url.origin), oz0Headers);
        return signal.aborted ? "client_gone" : "upstream_error";
      }
      metrics.upstream.observe((now() - sent) / 1000);
      const whole = Buffer.concat(parts);
      let usage: Usage | null = null;
      if (status < 300) {
        try {
          usage = responseUsage(p, JSON.parse(whole.toString("utf8")));
        } catch {
          usage = null;
        }
        // An answer without usage is charged what was reserved as its worst case: never less than it may have cost.
        if (usage === null) log.warn("gateway: the provider's answer has no usage; settled at the request's estimate and cap", { provider: p, request: ask.request_id });
      }
      // The answer goes first, then its usage: until the usage is taken, the call's worst case
      // stays reserved, so a next call asked meanwhile is held to more, never to less.
      if (!res.destroyed) {
        res.writeHead(status, { ...headers, "content-length": String(whole.length) });
        res.end(whole);
      }
      await settle(binding, ask, usage ?? (status < 300 ? { input: read.request.inputTokens, output: forward.request.maxOutputTokens ?? 0, cacheRead: 0, cacheWrite: 0 } : { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }), p);
      return status < 300 ? "answered" : "provider_error";
    }
    // A stream: each event passes on as it came, its usage read on the way.
    res.writeHead(status, { ...headers, "cache-control": "no-cache" });
    const reader = new StreamUsage(p);
    const pass = (events: ReturnType<StreamUsage["push"]>) => {
      for (const e of events) if (!(forward.dropUsageChunk && e.usageOnly) && !res.destroyed) res.write(e.raw);
    };
    let broken = false;
    try {
      for await (const c of up) pass(reader.push(c as Buffer));
      pass(reader.end());
    } catch {
      broken = true;
    }
    metrics.upstream.observe((now() - sent) / 1000);
    if (!res.destroyed) res.end();
    const settled = reader.settle(read.request.inputTokens);
    await settle(binding, ask, settled.usage, p);
    if (signal.aborted) {
      log.info("gateway: the client went away mid-stream; charged for what was streamed", { key: binding.id, job: binding.job_id, request: ask.request_id, output_tokens: settled.usage.output });
      return "client_gone";
    }
    return broken ? "upstream_error" : "answered";
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? "GET";
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (method === "GET" && path === "/metrics") {
      const text = await exposition.render();
      res.writeHead(200, { "content-type": exposition.contentType, "cache-control": "no-store" });
      res.end(text);
      return;
    }
    if (method === "GET" && path === "/health") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(`${JSON.stringify({ ok: true, upstreams: Object.keys(upstreams) })}\n`);
      return;
    }
    const r = route(method, path, req);
    const signal = clientGone(req, res);
    if (r.op === null) {
      sendError(res, notFound(r.provider, method, path));
      metrics.count(r.provider, "not_found");
      return;
    }
    const key = requestKey(req.headers);
    const check = key === null ? checkBinding(null, now()) : await o.keys.check(key, now());
    if (!check.ok) {
      req.resume();
      sendError(res, unauthorized(r.provider, check));
      metrics.count(r.provider, "unauthorized");
      return;
    }
    const outcome = r.op === "models" ? await handleModels(req, res, r.provider, signal) : await handleCall(req, res, r.provider, r.op, check.binding, signal);
    metrics.count(r.provider, outcome);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log.error("gateway: a request failed", { path: req.url, err });
      const p: Provider = req.url?.startsWith("/v1/messages") ? "anthropic" : "openai";
      sendError(res, upstreamFailed(p, "the gateway"));
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port ?? DEFAULT_GATEWAY_PORT, o.host ?? DEFAULT_GATEWAY_HOST, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  const url = `http://${host}:${addr.port}`;
  log.info("gateway: listening", { url, upstreams: Object.fromEntries(Object.entries(upstreams).map(([k, v]) => [k, v.origin])) });
  return {
    url,
    metrics: () => metrics.families(),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
