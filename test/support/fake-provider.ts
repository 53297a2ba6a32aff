/**
 * A model provider on loopback for tests and benches, since none is reachable here: an HTTP
 * server compatible with OpenAI's chat completions and Anthropic's messages, answering with the
 * bodies, server-sent event streams, usage and errors of the providers' API references, so the
 * official SDKs read it as they read the providers (test/unit/gateway/fake-provider.test.ts).
 *
 *   POST /v1/chat/completions  a `chat.completion`, or `chat.completion.chunk` events and
 *                              `data: [DONE]`; the usage-only chunk (`choices: []`) only when
 *                              `stream_options.include_usage` is true, and then `"usage": null`
 *                              on every other chunk, as OpenAI sends them
 *   POST /v1/messages          a `message`, or message_start, content_block_start, ping,
 *                              content_block_delta (text_delta), content_block_stop,
 *                              message_delta (cumulative usage), message_stop
 *   GET  /v1/models            OpenAI's list; Anthropic's when the request has anthropic-version
 *
 * The answer is one text (`text`), cut at the request's `max_tokens` / `max_completion_tokens`
 * (finish_reason `length`, stop_reason `max_tokens`). Tokens are counted with gpt-tokenizer
 * (o200k_base for OpenAI, cl100k_base for Anthropic, whose own tokenizer is not public) over
 * every text of the request, with OpenAI's per-message overhead, so usage is realistic and the
 * same for the same request. Each request is recorded (`requests`) with the usage answered
 * (`answered`), to compare with what a gateway settled.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { decode as decodeCl100k, encode as encodeCl100k } from "gpt-tokenizer/encoding/cl100k_base";
import { decode as decodeO200k, encode as encodeO200k } from "gpt-tokenizer/encoding/o200k_base";
import type { TokenCounts } from "../../processors/limits/money.ts";

export type FakeProviderName = "openai" | "anthropic";

export const DEFAULT_TEXT =
  "The deployment finished at 14:02 and every health check has passed since. " +
  "Two services restarted once while the new configuration was read, which is expected. " +
  "Nothing else needs your attention; the next step is to confirm the ledger migration.";

export interface FakeProviderOptions {
  /** The provider key OpenAI clients must send (`Authorization: Bearer`). */
  openaiKey?: string;
  /** The provider key Anthropic clients must send (`x-api-key`, or `Authorization: Bearer` as the 1.x SDKs send it). */
  anthropicKey?: string;
  /** The answer's text, before any cut at the request's max tokens. */
  text?: string;
  /** OpenAI: prompt tokens read from the cache (`prompt_tokens_details.cached_tokens`), at most the prompt. */
  cachedTokens?: number;
  /** Anthropic: tokens read from the cache (`cache_read_input_tokens`). */
  cacheReadTokens?: number;
  /** Anthropic: tokens written to the cache (`cache_creation_input_tokens`). */
  cacheWriteTokens?: number;
  /** Milliseconds before anything of an answer is sent (the model's time to its first token). */
  delayMs?: number;
  /** Milliseconds between two events of a stream. */
  chunkDelayMs?: number;
  /** Anthropic requests must carry `anthropic-version`, as the API requires (default true). */
  requireAnthropicVersion?: boolean;
}

/** One request as it came. */
export interface RecordedRequest {
  readonly method: string;
  /** The path without its query. */
  readonly path: string;
  readonly query: string;
  readonly headers: IncomingHttpHeaders;
  /** The body as text ("" when none). */
  readonly raw: string;
  /** The body parsed as JSON; undefined when it was not JSON. */
  readonly body: unknown;
}

/** What was answered to one request, in order. */
export interface AnsweredRequest {
  readonly provider: FakeProviderName;
  readonly path: string;
  readonly stream: boolean;
  readonly status: number;
  readonly model: string | null;
  /** The usage as the provider states it (OpenAI's or Anthropic's object); null for an error. */
  readonly usage: Record<string, unknown> | null;
  /** The same as the four counts money.ts prices (no token in two of them); null for an error. */
  readonly counts: TokenCounts | null;
  /** The whole answer's text (after the max tokens cut). */
  readonly text: string;
  /** The text written to the client so far (a stream the client left is shorter). */
  sent: string;
  /** Whether the whole answer was written (false while writing, or when the client went away). */
  completed: boolean;
  /** Whether the usage reached the client: always for a body; in a stream, the usage chunk or message_delta written. */
  usageSent: boolean;
}

export interface FakeProvider {
  /** The base URL, without /v1: OpenAI clients use `${url}/v1`, Anthropic clients `${url}`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  readonly answered: AnsweredRequest[];
  /** The options now in force; `configure` changes them for the requests that follow. */
  readonly options: Readonly<Required<FakeProviderOptions>>;
  configure(o: FakeProviderOptions): void;
  /**
   * The next request whose provider key passed (after any failures already queued) is answered
   * `status` with `body`: an object is sent as it is; a string, or nothing, is put in the
   * provider's error shape for that status.
   */
  failNext(status: number, body?: string | Record<string, unknown>): void;
  /**
   * The next streamed answer breaks off after `events` of its events (the upstream failing
   * mid-stream): the connection is destroyed without the stream's end, so no usage follows
   * unless it came before (Anthropic's message_start). Its `answered` entry stays not completed.
   */
  cutNextStream(events: number): void;
  close(): Promise<void>;
}

const DEFAULTS: Required<FakeProviderOptions> = {
  openaiKey: "sk-fake-openai-0000",
  anthropicKey: "sk-ant-fake-0000",
  text: DEFAULT_TEXT,
  cachedTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  delayMs: 0,
  chunkDelayMs: 0,
  requireAnthropicVersion: true,
};

interface Tokenizer {
  encode(text: string): number[];
  decode(tokens: number[]): string;
}
const TOKENIZERS: Record<FakeProviderName, Tokenizer> = {
  openai: { encode: (t) => encodeO200k(t), decode: (t) => decodeO200k(t) },
  anthropic: { encode: (t) => encodeCl100k(t), decode: (t) => decodeCl100k(t) },
};

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve();
}

function id(prefix: string, n: number): string {
  return prefix + randomBytes(n).toString("base64url").replace(/[-_]/g, "x");
}

// ---------------------------------------------------------------------------------------------
// Errors, in each provider's shape

const OPENAI_ERRORS: Record<number, { type: string; code: string | null; message: string }> = {
  400: { type: "invalid_request_error", code: null, message: "Invalid request." },
  401: { type: "invalid_request_error", code: "invalid_api_key", message: "Incorrect API key provided." },
  403: { type: "invalid_request_error", code: "unsupported_country_region_territory", message: "Country, region, or territory not supported" },
  404: { type: "invalid_request_error", code: "model_not_found", message: "The model does not exist or you do not have access to it." },
  429: { type: "requests", code: "rate_limit_exceeded", message: "Rate limit reached for requests. Please try again in 1s." },
  500: { type: "server_error", code: null, message: "The server had an error while processing your request. Sorry about that!" },
  503: { type: "server_error", code: null, message: "The engine is currently overloaded, please try again later." },
};

const ANTHROPIC_ERRORS: Record<number, { type: string; message: string }> = {
  400: { type: "invalid_request_error", message: "Invalid request." },
  401: { type: "authentication_error", message: "invalid x-api-key" },
  402: { type: "billing_error", message: "Your credit balance is too low to access the Anthropic API." },
  403: { type: "permission_error", message: "Your API key does not have permission to use the specified resource." },
  404: { type: "not_found_error", message: "Not found." },
  413: { type: "request_too_large", message: "Request exceeds the maximum allowed number of bytes." },
  429: { type: "rate_limit_error", message: "Number of request tokens has exceeded your per-minute rate limit." },
  500: { type: "api_error", message: "Internal server error" },
  504: { type: "timeout_error", message: "Request timeout" },
  529: { type: "overloaded_error", message: "Overloaded" },
};

/** An error body in the provider's shape for `status`, with `message` when given. */
export function providerError(provider: FakeProviderName, status: number, message?: string, param: string | null = null): Record<string, unknown> {
  if (provider === "openai") {
    const e = OPENAI_ERRORS[status] ?? (status >= 500 ? OPENAI_ERRORS[500]! : OPENAI_ERRORS[400]!);
    return { error: { message: message ?? e.message, type: e.type, param, code: e.code } };
  }
  const e = ANTHROPIC_ERRORS[status] ?? (status >= 500 ? ANTHROPIC_ERRORS[500]! : ANTHROPIC_ERRORS[400]!);
  return { type: "error", error: { type: e.type, message: message ?? e.message }, request_id: id("req_011C", 18) };
}

// ---------------------------------------------------------------------------------------------
// What a request asks and reads

interface Asked {
  readonly model: string;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  /** OpenAI: whether chunks carry `obfuscation` (stream_options.include_obfuscation, true unless false). */
  readonly obfuscation: boolean;
  /** The output cap asked; null when none. */
  readonly maxTokens: number | null;
  readonly promptTokens: number;
}

/** Every text of an OpenAI or Anthropic content: a string, or parts and blocks of text, tool calls and results. */
function texts(content: unknown, out: string[]): void {
  if (typeof content === "string") {
    out.push(content);
    return;
  }
  if (Array.isArray(content)) {
    for (const part of content) texts(part, out);
    return;
  }
  if (!isObject(content)) return;
  for (const key of ["text", "thinking", "refusal", "name", "arguments"]) if (typeof content[key] === "string") out.push(content[key]);
  if (content.input !== undefined) out.push(JSON.stringify(content.input));
  if (content.content !== undefined) texts(content.content, out);
  if (content.function !== undefined) texts(content.function, out);
  if (Array.isArray(content.tool_calls)) texts(content.tool_calls, out);
}

function maxOf(...xs: unknown[]): number | null {
  const caps = xs.filter((x): x is number => typeof x === "number" && Number.isInteger(x) && x >= 0);
  return caps.length === 0 ? null : Math.min(...caps);
}

/** OpenAI's prompt tokens: each message's texts plus 3 (and 1 for a name), 3 to prime the answer, and the tools' JSON. */
function readOpenAI(body: Record<string, unknown>): Asked | { error: string; param: string } {
  if (typeof body.model !== "string" || body.model === "") return { error: "you must provide a model parameter", param: "model" };
  if (!Array.isArray(body.messages) || body.messages.length === 0) return { error: "Missing required parameter: 'messages'.", param: "messages" };
  const enc = TOKENIZERS.openai;
  let prompt = 3;
  for (const m of body.messages as unknown[]) {
    if (!isObject(m)) return { error: "Invalid type for 'messages': expected an array of objects.", param: "messages" };
    const t: string[] = [];
    texts(m.content, t);
    if (Array.isArray(m.tool_calls)) texts(m.tool_calls, t);
    prompt += 3 + (typeof m.role === "string" ? enc.encode(m.role).length : 0) + (typeof m.name === "string" ? 1 + enc.encode(m.name).length : 0);
    for (const s of t) prompt += enc.encode(s).length;
  }
  if (body.tools !== undefined) prompt += enc.encode(JSON.stringify(body.tools)).length;
  const streamOptions = body.stream_options;
  return {
    model: body.model,
    stream: body.stream === true,
    includeUsage: isObject(streamOptions) && streamOptions.include_usage === true,
    obfuscation: !(isObject(streamOptions) && streamOptions.include_obfuscation === false),
    maxTokens: maxOf(body.max_completion_tokens, body.max_tokens),
    promptTokens: prompt,
  };
}

/** Anthropic's input tokens: the system prompt, each message's texts plus 3, and the tools' JSON. */
function readAnthropic(body: Record<string, unknown>, version: string): Asked | { error: string; param: string } {
  if (typeof body.model !== "string" || body.model === "") return { error: "model: Field required", param: "model" };
  // API version 2026-10-21 removed the sampling parameters: a request that sends one is refused.
  if (version >= "2026-10-21") for (const p of ["temperature", "top_p", "top_k"]) if (body[p] !== undefined) return { error: `${p}: Extra inputs are not permitted`, param: p };
  if (!Array.isArray(body.messages)) return { error: "messages: Field required", param: "messages" };
  if (typeof body.max_tokens !== "number" || !Number.isInteger(body.max_tokens) || body.max_tokens < 1) return { error: "max_tokens: Field required", param: "max_tokens" };
  const enc = TOKENIZERS.anthropic;
  let prompt = 0;
  const sys: string[] = [];
  texts(body.system, sys);
  for (const s of sys) prompt += enc.encode(s).length;
  for (const m of body.messages as unknown[]) {
    if (!isObject(m)) return { error: "messages.0: Input should be a valid dictionary", param: "messages" };
    const t: string[] = [];
    texts(m.content, t);
    prompt += 3;
    for (const s of t) prompt += enc.encode(s).length;
  }
  if (body.tools !== undefined) prompt += enc.encode(JSON.stringify(body.tools)).length;
  return { model: body.model, stream: body.stream === true, includeUsage: true, obfuscation: false, maxTokens: body.max_tokens, promptTokens: Math.max(1, prompt) };
}

/** Answers already cut, by provider, cap and text: the same few are answered again and again. */
const PIECES = new Map<string, { pieces: string[]; tokens: number; cut: boolean }>();

/** The answer's text cut at `max` tokens, in pieces of about one token each (as streamed). */
function answerPieces(provider: FakeProviderName, text: string, max: number | null): { pieces: string[]; tokens: number; cut: boolean } {
  const key = `${provider}\u0000${max ?? ""}\u0000${text}`;
  const known = PIECES.get(key);
  if (known) return known;
  const made = cutPieces(provider, text, max);
  if (PIECES.size >= 256) PIECES.clear();
  PIECES.set(key, made);
  return made;
}

function cutPieces(provider: FakeProviderName, text: string, max: number | null): { pieces: string[]; tokens: number; cut: boolean } {
  const enc = TOKENIZERS[provider];
  const all = enc.encode(text);
  const cut = max !== null && all.length > max;
  const tokens = cut ? all.slice(0, max) : all;
  const pieces: string[] = [];
  let pending: number[] = [];
  for (const t of tokens) {
    pending.push(t);
    const s = enc.decode(pending);
    // A token may end inside a character: keep it until the character is whole.
    if (!s.includes("\uFFFD")) {
      pieces.push(s);
      pending = [];
    }
  }
  return { pieces, tokens: tokens.length, cut };
}

// ---------------------------------------------------------------------------------------------
// The server

export async function startFakeProvider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  const o: Required<FakeProviderOptions> = { ...DEFAULTS };
  for (const [k, v] of Object.entries(options)) if (v !== undefined) (o as Record<string, unknown>)[k] = v;
  const requests: RecordedRequest[] = [];
  const answered: AnsweredRequest[] = [];
  const failures: Array<{ status: number; body: string | Record<string, unknown> | undefined }> = [];
  const cuts: number[] = [];

  const json = (res: ServerResponse, status: number, body: unknown, provider: FakeProviderName): void => {
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...requestIdHeader(provider) });
    res.end(text);
  };

  const fail = (res: ServerResponse, provider: FakeProviderName, path: string, stream: boolean, model: string | null, status: number, body: string | Record<string, unknown> | undefined, param: string | null = null): void => {
    const errorBody = isObject(body) ? body : providerError(provider, status, body, param);
    answered.push({ provider, path, stream, status, model, usage: null, counts: null, text: "", sent: "", completed: true, usageSent: false });
    json(res, status, errorBody, provider);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    let body: unknown;
    try {
      body = raw === "" ? undefined : JSON.parse(raw);
    } catch {
      body = undefined;
    }
    const [path = "/", query = ""] = (req.url ?? "/").split("?", 2);
    const method = req.method ?? "GET";
    requests.push({ method, path, query, headers: req.headers, raw, body });

    const anthropicAsked = path === "/v1/messages" || (path === "/v1/models" && req.headers["anthropic-version"] !== undefined);
    const provider: FakeProviderName = anthropicAsked ? "anthropic" : "openai";
    const known = (method === "POST" && (path === "/v1/chat/completions" || path === "/v1/responses" || path === "/v1/messages")) || (method === "GET" && path === "/v1/models");
    const responsesApi = path === "/v1/responses";
    if (!known) {
      const message = provider === "openai" ? `Invalid URL (${method} ${path})` : `Not found: ${method} ${path}`;
      return fail(res, provider, path, false, null, 404, message);
    }

    // The key first, as the providers check it before anything else.
    if (provider === "openai") {
      const auth = req.headers.authorization ?? "";
      const m = /^Bearer\s+(\S+)$/i.exec(auth);
      if (!m || m[1] !== o.openaiKey) {
        const shown = m?.[1] ? `${m[1].slice(0, 3)}*****${m[1].slice(-4)}` : "";
        const message = m ? `Incorrect API key provided: ${shown}. You can find your API key at https://platform.openai.com/account/api-keys.` : "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).";
        return fail(res, provider, path, false, null, 401, message);
      }
    } else {
      // The SDKs of API version 2026-10-21 (TypeScript 1.x) send the key as a bearer token; older ones and curl as x-api-key.
      const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "")?.[1];
      const key = req.headers["x-api-key"] ?? bearer;
      if (key !== o.anthropicKey) return fail(res, provider, path, false, null, 401, key === undefined ? "x-api-key header is required" : "invalid x-api-key");
      if (o.requireAnthropicVersion && req.headers["anthropic-version"] === undefined) return fail(res, provider, path, false, null, 400, "anthropic-version: header is required");
    }

    // An injected failure answers the next request whose key passed, whatever it asks.
    const failure = failures.shift();
    if (failure) {
      const b = isObject(body) ? body : {};
      return fail(res, provider, path, b.stream === true, typeof b.model === "string" ? b.model : null, failure.status, failure.body);
    }
    if (path === "/v1/models") return json(res, 200, models(provider), provider);

    if (!isObject(body)) {
      const message = provider === "openai" ? "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)" : "There was an issue with your request body: it must be a JSON object.";
      return fail(res, provider, path, false, null, 400, message);
    }
    const asked = provider === "anthropic" ? readAnthropic(body, String(req.headers["anthropic-version"] ?? "")) : responsesApi ? readResponses(body) : readOpenAI(body);
    const stream = body.stream === true;
    if ("error" in asked) return fail(res, provider, path, stream, typeof body.model === "string" ? body.model : null, 400, asked.error, asked.param);

    await sleep(o.delayMs);
    const { pieces, tokens, cut } = answerPieces(provider, o.text, asked.maxTokens);
    const text = pieces.join("");
    const usage = provider === "anthropic" ? anthropicUsage(asked.promptTokens, tokens, o.cacheReadTokens, o.cacheWriteTokens) : responsesApi ? responsesUsage(asked.promptTokens, tokens, o.cachedTokens) : openAIUsage(asked.promptTokens, tokens, o.cachedTokens);
    const entry: AnsweredRequest = { provider, path, stream, status: 200, model: asked.model, usage: usage.body, counts: usage.counts, text, sent: "", completed: false, usageSent: false };
    answered.push(entry);

    if (!stream) {
      const out = provider === "anthropic" ? anthropicBody(asked.model, text, cut, usage.body) : responsesApi ? responsesBody(asked, text, cut, usage.body) : openAIBody(asked.model, text, cut, usage.body);
      entry.sent = text;
      entry.usageSent = true;
      entry.completed = true;
      return json(res, 200, out, provider);
    }

    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive", ...requestIdHeader(provider) });
    let gone = false;
    res.on("close", () => {
      if (!res.writableFinished) gone = true;
    });
    const events = provider === "anthropic" ? anthropicEvents(asked.model, pieces, cut, usage.body) : responsesApi ? responsesEvents(asked, pieces, cut, usage.body) : openAIEvents(asked, pieces, cut, usage.body);
    const breakAt = cuts.shift() ?? Infinity;
    for (let i = 0; i < events.length; i++) {
      if (i > 0) await sleep(o.chunkDelayMs);
      if (gone || res.destroyed) return;
      if (i >= breakAt) {
        // What was written goes out first (the headers and the events before the break), then the connection breaks.
        await new Promise<void>((r) => res.write("", () => r()));
        res.destroy();
        return;
      }
      const e = events[i]!;
      const more = res.write(e.raw);
      entry.sent += e.text;
      if (e.usage) entry.usageSent = true;
      if (!more && !gone) await new Promise<void>((r) => res.once("drain", r).once("close", r));
    }
    entry.completed = true;
    res.end();
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) json(res, 500, providerError("openai", 500, String(err)), "openai");
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    answered,
    options: o,
    configure(next: FakeProviderOptions): void {
      for (const [k, v] of Object.entries(next)) if (v !== undefined) (o as Record<string, unknown>)[k] = v;
    },
    failNext(status: number, body?: string | Record<string, unknown>): void {
      if (!Number.isInteger(status) || status < 400 || status > 599) throw new Error(`failNext: ${status} is not an error status (400 to 599)`);
      failures.push({ status, body });
    },
    cutNextStream(events: number): void {
      if (!Number.isInteger(events) || events < 0) throw new Error(`cutNextStream: ${events} is not a number of events (a whole number, 0 or more)`);
      cuts.push(events);
    },
    close(): Promise<void> {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function requestIdHeader(provider: FakeProviderName): Record<string, string> {
  return provider === "openai" ? { "x-request-id": id("req_", 16), "openai-processing-ms": "1" } : { "request-id": id("req_011C", 18) };
}

function models(provider: FakeProviderName): Record<string, unknown> {
  if (provider === "openai") {
    const data = [
      { id: "gpt-4o", object: "model", created: 1715367049, owned_by: "system" },
      { id: "gpt-4o-mini", object: "model", created: 1721172741, owned_by: "system" },
      { id: "gpt-4.1", object: "model", created: 1744316542, owned_by: "system" },
    ];
    return { object: "list", data };
  }
  const data = [
    { type: "model", id: "claude-sonnet-4-5-20250929", display_name: "Claude Sonnet 4.5", created_at: "2025-09-29T00:00:00Z" },
    { type: "model", id: "claude-haiku-4-5-20251001", display_name: "Claude Haiku 4.5", created_at: "2025-10-01T00:00:00Z" },
  ];
  return { data, has_more: false, first_id: data[0]!.id, last_id: data[data.length - 1]!.id };
}

// ---------------------------------------------------------------------------------------------
// OpenAI's bodies

function openAIUsage(prompt: number, completion: number, cached: number): { body: Record<string, unknown>; counts: TokenCounts } {
  const c = Math.max(0, Math.min(prompt, Math.floor(cached)));
  const body = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: c, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
  return { body, counts: { input: prompt - c, output: completion, cacheRead: c, cacheWrite: 0 } };
}

const FINGERPRINT = "fp_f33640a400";

function openAIBody(model: string, text: string, cut: boolean, usage: Record<string, unknown>): Record<string, unknown> {
  return {
    id: id("chatcmpl-", 21),
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: "assistant", content: text, refusal: null, annotations: [] }, logprobs: null, finish_reason: cut ? "length" : "stop" }],
    usage,
    service_tier: "default",
    system_fingerprint: FINGERPRINT,
  };
}

interface SseEvent {
  readonly raw: string;
  /** The answer's text it carries. */
  readonly text: string;
  /** Whether it carries the final usage. */
  readonly usage: boolean;
}

function openAIEvents(asked: Asked, pieces: readonly string[], cut: boolean, usage: Record<string, unknown>): SseEvent[] {
  const base = { id: id("chatcmpl-", 21), object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), model: asked.model, service_tier: "default", system_fingerprint: FINGERPRINT };
  const chunk = (choices: unknown[], text: string, u?: Record<string, unknown>): SseEvent => {
    // OpenAI pads each delta chunk with random characters (`obfuscation`) unless asked not to.
    const pad = asked.obfuscation && choices.length > 0 ? { obfuscation: id("", 3 + (text.length % 6)) } : {};
    const body = asked.includeUsage ? { ...base, choices, usage: u ?? null, ...pad } : { ...base, choices, ...pad };
    return { raw: `data: ${JSON.stringify(body)}\n\n`, text, usage: u !== undefined };
  };
  const choice = (delta: Record<string, unknown>, finish: string | null) => ({ index: 0, delta, logprobs: null, finish_reason: finish });
  const out: SseEvent[] = [chunk([choice({ role: "assistant", content: "", refusal: null }, null)], "")];
  for (const p of pieces) out.push(chunk([choice({ content: p }, null)], p));
  out.push(chunk([choice({}, cut ? "length" : "stop")], ""));
  if (asked.includeUsage) out.push(chunk([], "", usage));
  out.push({ raw: "data: [DONE]\n\n", text: "", usage: false });
  return out;
}

// ---------------------------------------------------------------------------------------------
// OpenAI's Responses API

/** The Responses API's input tokens: instructions, the input (a string or items), the tools' JSON. */
function readResponses(body: Record<string, unknown>): Asked | { error: string; param: string } {
  if (typeof body.model !== "string" || body.model === "") return { error: "Missing required parameter: 'model'.", param: "model" };
  if (body.input === undefined || body.input === null) return { error: "Missing required parameter: 'input'.", param: "input" };
  const enc = TOKENIZERS.openai;
  const t: string[] = [];
  if (typeof body.instructions === "string") t.push(body.instructions);
  texts(body.input, t);
  if (Array.isArray(body.input)) for (const item of body.input as unknown[]) if (isObject(item) && typeof item.output === "string") t.push(item.output);
  let prompt = 3 + (Array.isArray(body.input) ? 3 * body.input.length : 3);
  for (const x of t) prompt += enc.encode(x).length;
  if (body.tools !== undefined) prompt += enc.encode(JSON.stringify(body.tools)).length;
  return { model: body.model, stream: body.stream === true, includeUsage: true, obfuscation: false, maxTokens: maxOf(body.max_output_tokens), promptTokens: prompt };
}

function responsesUsage(prompt: number, output: number, cached: number): { body: Record<string, unknown>; counts: TokenCounts } {
  const c = Math.max(0, Math.min(prompt, Math.floor(cached)));
  const body = { input_tokens: prompt, input_tokens_details: { cached_tokens: c }, output_tokens: output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: prompt + output };
  return { body, counts: { input: prompt - c, output, cacheRead: c, cacheWrite: 0 } };
}

/** The response object, as `POST /v1/responses` answers it and as its stream's first and last events carry it. */
function responseObject(asked: Asked, respId: string, msgId: string, status: "in_progress" | "completed" | "incomplete", text: string | null, usage: Record<string, unknown> | null): Record<string, unknown> {
  const output = text === null ? [] : [{ id: msgId, type: "message", status: status === "incomplete" ? "incomplete" : "completed", role: "assistant", content: [{ type: "output_text", text, annotations: [], logprobs: [] }] }];
  return {
    id: respId,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
    instructions: null,
    max_output_tokens: asked.maxTokens,
    model: asked.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    store: true,
    temperature: 1,
    tool_choice: "auto",
    tools: [],
    top_p: 1,
    truncation: "disabled",
    usage,
    metadata: {},
  };
}

function responsesBody(asked: Asked, text: string, cut: boolean, usage: Record<string, unknown>): Record<string, unknown> {
  return responseObject(asked, id("resp_", 24), id("msg_", 24), cut ? "incomplete" : "completed", text, usage);
}

function responsesEvents(asked: Asked, pieces: readonly string[], cut: boolean, usage: Record<string, unknown>): SseEvent[] {
  const respId = id("resp_", 24);
  const msgId = id("msg_", 24);
  let seq = 0;
  const ev = (type: string, data: Record<string, unknown>, text = "", u = false): SseEvent => ({ raw: `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`, text, usage: u });
  const text = pieces.join("");
  const out: SseEvent[] = [
    ev("response.created", { response: responseObject(asked, respId, msgId, "in_progress", null, null) }),
    ev("response.in_progress", { response: responseObject(asked, respId, msgId, "in_progress", null, null) }),
    ev("response.output_item.added", { output_index: 0, item: { id: msgId, type: "message", status: "in_progress", role: "assistant", content: [] } }),
    ev("response.content_part.added", { item_id: msgId, output_index: 0, content_index: 0, part: { type: "output_text", text: "", annotations: [] } }),
  ];
  for (const p of pieces) out.push(ev("response.output_text.delta", { item_id: msgId, output_index: 0, content_index: 0, delta: p, logprobs: [] }, p));
  out.push(ev("response.output_text.done", { item_id: msgId, output_index: 0, content_index: 0, text, logprobs: [] }));
  out.push(ev("response.content_part.done", { item_id: msgId, output_index: 0, content_index: 0, part: { type: "output_text", text, annotations: [] } }));
  out.push(ev("response.output_item.done", { output_index: 0, item: { id: msgId, type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text, annotations: [] }] } }));
  const status = cut ? "incomplete" : "completed";
  out.push(ev(`response.${status}`, { response: responseObject(asked, respId, msgId, status, text, usage) }, "", true));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Anthropic's bodies

function anthropicUsage(prompt: number, output: number, read: number, write: number): { body: Record<string, unknown>; counts: TokenCounts } {
  const r = Math.max(0, Math.floor(read));
  const w = Math.max(0, Math.floor(write));
  // input_tokens are the prompt's tokens after the last cache breakpoint: what is neither read nor written.
  const input = Math.max(0, prompt - r - w);
  const body = {
    input_tokens: input,
    cache_creation_input_tokens: w,
    cache_read_input_tokens: r,
    cache_creation: { ephemeral_5m_input_tokens: w, ephemeral_1h_input_tokens: 0 },
    output_tokens: output,
    service_tier: "standard",
  };
  return { body, counts: { input, output, cacheRead: r, cacheWrite: w } };
}

function anthropicBody(model: string, text: string, cut: boolean, usage: Record<string, unknown>): Record<string, unknown> {
  return {
    id: id("msg_01", 18),
    type: "message",
    role: "assistant",
    model,
    content: [{ type: "text", text }],
    stop_reason: cut ? "max_tokens" : "end_turn",
    stop_sequence: null,
    usage,
  };
}

function anthropicEvents(model: string, pieces: readonly string[], cut: boolean, usage: Record<string, unknown>): SseEvent[] {
  const ev = (event: string, data: Record<string, unknown>, text = "", u = false): SseEvent => ({ raw: `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`, text, usage: u });
  // message_start: the input counts, and one output token so far, as the API sends it.
  const startUsage = { ...usage, output_tokens: Math.min(1, Number(usage.output_tokens)) };
  const out: SseEvent[] = [
    ev("message_start", { type: "message_start", message: { id: id("msg_01", 18), type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: startUsage } }),
    ev("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
    ev("ping", { type: "ping" }),
  ];
  for (const p of pieces) out.push(ev("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: p } }, p));
  out.push(ev("content_block_stop", { type: "content_block_stop", index: 0 }));
  // message_delta: the counts of the whole message (output cumulative), input and cache included as the API now sends them.
  const deltaUsage = { input_tokens: usage.input_tokens, cache_creation_input_tokens: usage.cache_creation_input_tokens, cache_read_input_tokens: usage.cache_read_input_tokens, output_tokens: usage.output_tokens };
  out.push(ev("message_delta", { type: "message_delta", delta: { stop_reason: cut ? "max_tokens" : "end_turn", stop_sequence: null }, usage: deltaUsage }, "", true));
  out.push(ev("message_stop", { type: "message_stop" }));
  return out;
}
