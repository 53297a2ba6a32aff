/**
 * The pure core of `oz0 gateway` (docs/gateway.md): what a model request asks, read from the
 * body an agent sends to the OpenAI-compatible `POST /v1/chat/completions` or the
 * Anthropic-compatible `POST /v1/messages`, and the request as it is forwarded once capped.
 * No I/O here.
 */
import type { ModelCall } from "../../schemas/types.ts";
import { tokensOf, units } from "../../processors/fit/count.ts";

export type Provider = "openai" | "anthropic";

/** A JSON object as parsed. */
export type JsonObject = Record<string, unknown>;

/** Which of a provider's APIs a request speaks: OpenAI's chat completions or Responses, Anthropic's messages. */
export type Api = "chat" | "responses" | "messages";

/** What the limits need of a model request, and the body it came in. */
export interface ModelRequest {
  readonly provider: Provider;
  readonly api: Api;
  readonly model: string;
  readonly stream: boolean;
  /**
   * The output cap the request asks (OpenAI: the smaller of `max_completion_tokens` and
   * `max_tokens` when both are given; Anthropic: `max_tokens`); null when an OpenAI request
   * gives none.
   */
  readonly maxOutputTokens: number | null;
  /** The request's input tokens by the project's estimate (processors/fit/count.ts). */
  readonly inputTokens: number;
  readonly body: JsonObject;
}

/** Why a body is not a valid request for its API: answered as 400 in the provider's shape (errors.ts). */
export interface RequestError {
  readonly message: string;
  /** The field at fault, as OpenAI's `param` names it; null for the body as a whole. */
  readonly param: string | null;
}

export type ReadRequest = { readonly ok: true; readonly request: ModelRequest } | { readonly ok: false; readonly error: RequestError };

function fail(message: string, param: string | null): ReadRequest {
  return { ok: false, error: { message, param } };
}

function isObject(x: unknown): x is JsonObject {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

/** A positive whole number of tokens, null when absent; a string saying what is wrong otherwise. */
function tokenCap(body: JsonObject, field: string): number | null | string {
  const v = body[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1) return `${field} must be a positive integer; it is ${JSON.stringify(v)}`;
  return v;
}

/** `stream`: true, false or absent. */
function streamed(body: JsonObject): boolean | string {
  const v = body.stream;
  if (v === undefined || v === null) return false;
  if (typeof v !== "boolean") return `stream must be a boolean; it is ${JSON.stringify(v)}`;
  return v;
}

/** The estimate of texts the model reads, each priced on its own and added up in thousandths. */
function estimate(texts: readonly string[]): number {
  let total = 0;
  for (const t of texts) total += units(t);
  return tokensOf(total);
}

/**
 * Reads an OpenAI `POST /v1/chat/completions` body.
 *
 * Input tokens are the estimate over every text the model reads: each message's string
 * content, its `text` and `refusal` parts, an assistant's tool calls (name and arguments), a
 * message's `name`, the JSON of each tool definition (`tools`, and the older `functions`) and
 * of a `json_schema` response format. Left out: image, audio and file parts (priced by the
 * provider by size, not by text), the few tokens the provider's chat format adds around each
 * message, and the difference between the provider's tokenizer and the estimate (cl100k-class,
 * docs/fit.md). The provider's usage settles the call exactly afterwards (usage.ts).
 */
export function readOpenAIChat(body: unknown): ReadRequest {
  if (!isObject(body)) return fail("the request body must be a JSON object", null);
  if (typeof body.model !== "string" || body.model === "") return fail("model is required: a non-empty string naming the model", "model");
  if (!Array.isArray(body.messages) || body.messages.length === 0) return fail("messages is required: a non-empty array of messages", "messages");
  const stream = streamed(body);
  if (typeof stream === "string") return fail(stream, "stream");
  if (body.stream_options !== undefined && body.stream_options !== null && !isObject(body.stream_options)) return fail("stream_options must be an object", "stream_options");
  let cap: number | null = null;
  for (const field of ["max_completion_tokens", "max_tokens"]) {
    const n = tokenCap(body, field);
    if (typeof n === "string") return fail(n, field);
    if (n !== null) cap = cap === null ? n : Math.min(cap, n);
  }
  const texts: string[] = [];
  for (let i = 0; i < body.messages.length; i++) {
    const m: unknown = body.messages[i];
    const at = `messages[${i}]`;
    if (!isObject(m)) return fail(`${at} must be an object`, at);
    if (typeof m.role !== "string" || m.role === "") return fail(`${at}.role is required: a string`, `${at}.role`);
    if (typeof m.name === "string") texts.push(m.name);
    const content = m.content;
    if (typeof content === "string") {
      texts.push(content);
    } else if (Array.isArray(content)) {
      for (let j = 0; j < content.length; j++) {
        const part: unknown = content[j];
        if (!isObject(part) || typeof part.type !== "string") return fail(`${at}.content[${j}] must be an object with a type`, `${at}.content`);
        if (part.type === "text") {
          if (typeof part.text !== "string") return fail(`${at}.content[${j}].text must be a string`, `${at}.content`);
          texts.push(part.text);
        } else if (part.type === "refusal" && typeof part.refusal === "string") {
          texts.push(part.refusal);
        }
      }
    } else if (content !== undefined && content !== null) {
      return fail(`${at}.content must be a string, an array of content parts or null`, `${at}.content`);
    }
    if (m.tool_calls !== undefined && m.tool_calls !== null) {
      if (!Array.isArray(m.tool_calls)) return fail(`${at}.tool_calls must be an array`, `${at}.tool_calls`);
      for (const call of m.tool_calls as unknown[]) {
        const fn = isObject(call) ? call.function : undefined;
        if (isObject(fn)) {
          if (typeof fn.name === "string") texts.push(fn.name);
          if (typeof fn.arguments === "string") texts.push(fn.arguments);
        }
      }
    }
  }
  for (const field of ["tools", "functions"]) {
    const list = body[field];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) return fail(`${field} must be an array`, field);
    for (const tool of list as unknown[]) texts.push(JSON.stringify(tool));
  }
  const format = body.response_format;
  if (isObject(format) && format.type === "json_schema") texts.push(JSON.stringify(format.json_schema ?? null));
  return { ok: true, request: { provider: "openai", api: "chat", model: body.model, stream, maxOutputTokens: cap, inputTokens: estimate(texts), body } };
}

/** The texts of one item of a Responses API `input` (see readOpenAIResponses); a string saying what is wrong otherwise. */
function itemTexts(item: unknown, at: string, texts: string[]): string | null {
  if (!isObject(item)) return `${at} must be an object`;
  const type = typeof item.type === "string" ? item.type : "message";
  if (type === "message" || item.role !== undefined) {
    const content = item.content;
    if (typeof content === "string") texts.push(content);
    else if (Array.isArray(content)) {
      for (let j = 0; j < content.length; j++) {
        const part: unknown = content[j];
        if (!isObject(part) || typeof part.type !== "string") return `${at}.content[${j}] must be an object with a type`;
        if (typeof part.text === "string") texts.push(part.text);
        else if (typeof part.refusal === "string") texts.push(part.refusal);
      }
    } else return `${at}.content must be a string or an array of content parts`;
    return null;
  }
  if (type === "function_call" || type === "custom_tool_call") {
    if (typeof item.name === "string") texts.push(item.name);
    if (typeof item.arguments === "string") texts.push(item.arguments);
    if (typeof item.input === "string") texts.push(item.input);
  } else if (type === "function_call_output" || type === "custom_tool_call_output") {
    if (typeof item.output === "string") texts.push(item.output);
    else if (item.output !== undefined) texts.push(JSON.stringify(item.output));
  } else if (type === "reasoning" && Array.isArray(item.summary)) {
    for (const part of item.summary as unknown[]) if (isObject(part) && typeof part.text === "string") texts.push(part.text);
  }
  // Other items (images, files, a reasoning item's encrypted content, built-in tools' calls): not text the estimate can price.
  return null;
}

/**
 * Reads an OpenAI `POST /v1/responses` body (the Responses API, which Codex CLI and the
 * Agents SDK use).
 *
 * Input tokens are the estimate over every text the model reads: `instructions`, the `input`
 * (a string, or items: messages with their text parts, function calls with their arguments,
 * function call outputs, reasoning summaries), the JSON of each tool, and a `json_schema` text
 * format. Left out, beside what readOpenAIChat leaves out: a conversation the provider keeps
 * (`previous_response_id`, `conversation`), which the request does not carry; the provider's
 * usage settles the call exactly afterwards, so only the reservation is smaller. The output
 * cap is `max_output_tokens`.
 */
export function readOpenAIResponses(body: unknown): ReadRequest {
  if (!isObject(body)) return fail("the request body must be a JSON object", null);
  if (typeof body.model !== "string" || body.model === "") return fail("model is required: a non-empty string naming the model", "model");
  const input = body.input;
  const kept = body.previous_response_id !== undefined && body.previous_response_id !== null;
  if (input === undefined || input === null) {
    if (!kept && (body.conversation === undefined || body.conversation === null)) return fail("input is required: a string or an array of input items", "input");
  } else if (typeof input !== "string" && !Array.isArray(input)) return fail("input must be a string or an array of input items", "input");
  const stream = streamed(body);
  if (typeof stream === "string") return fail(stream, "stream");
  const cap = tokenCap(body, "max_output_tokens");
  if (typeof cap === "string") return fail(cap, "max_output_tokens");
  const texts: string[] = [];
  if (typeof body.instructions === "string") texts.push(body.instructions);
  if (typeof input === "string") texts.push(input);
  else if (Array.isArray(input)) {
    for (let i = 0; i < input.length; i++) {
      const wrong = itemTexts(input[i], `input[${i}]`, texts);
      if (wrong !== null) return fail(wrong, `input[${i}]`);
    }
  }
  const tools = body.tools;
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools)) return fail("tools must be an array", "tools");
    for (const tool of tools as unknown[]) texts.push(JSON.stringify(tool));
  }
  const format = isObject(body.text) ? body.text.format : undefined;
  if (isObject(format) && format.type === "json_schema") texts.push(JSON.stringify(format.schema ?? null));
  return { ok: true, request: { provider: "openai", api: "responses", model: body.model, stream, maxOutputTokens: cap, inputTokens: estimate(texts), body } };
}

/** The texts of Anthropic content blocks the model reads (see readAnthropicMessages). */
function blockTexts(blocks: unknown[], at: string, texts: string[]): string | null {
  for (let j = 0; j < blocks.length; j++) {
    const b: unknown = blocks[j];
    if (!isObject(b) || typeof b.type !== "string") return `${at}[${j}] must be an object with a type`;
    switch (b.type) {
      case "text":
        if (typeof b.text !== "string") return `${at}[${j}].text must be a string`;
        texts.push(b.text);
        break;
      case "thinking":
        if (typeof b.thinking === "string") texts.push(b.thinking);
        break;
      case "tool_use":
      case "server_tool_use":
        if (typeof b.name === "string") texts.push(b.name);
        texts.push(JSON.stringify(b.input ?? {}));
        break;
      case "tool_result":
        if (typeof b.content === "string") texts.push(b.content);
        else if (Array.isArray(b.content)) {
          const wrong = blockTexts(b.content, `${at}[${j}].content`, texts);
          if (wrong !== null) return wrong;
        }
        break;
      default:
        // image, document, redacted_thinking and the rest: not text the estimate can price.
        break;
    }
  }
  return null;
}

/**
 * Reads an Anthropic `POST /v1/messages` body. `max_tokens` is required there, as the
 * Messages API requires it.
 *
 * Input tokens are the estimate over every text the model reads: the system prompt (a string
 * or text blocks), each message's string content and its `text`, `thinking`, `tool_use` (name
 * and input's JSON) and `tool_result` (string or text blocks) blocks, and the JSON of each tool
 * definition. Left out: images and documents (PDFs are priced by the provider per page and
 * image), redacted thinking, the tokens the provider adds around messages and tools, and the
 * difference between the provider's tokenizer and the estimate (cl100k-class, docs/fit.md).
 */
export function readAnthropicMessages(body: unknown): ReadRequest {
  if (!isObject(body)) return fail("the request body must be a JSON object", null);
  if (typeof body.model !== "string" || body.model === "") return fail("model: Field required (a non-empty string naming the model)", "model");
  if (body.max_tokens === undefined || body.max_tokens === null) return fail("max_tokens: Field required", "max_tokens");
  const cap = tokenCap(body, "max_tokens");
  if (typeof cap === "string") return fail(cap, "max_tokens");
  if (!Array.isArray(body.messages) || body.messages.length === 0) return fail("messages: Field required (a non-empty array of messages)", "messages");
  const stream = streamed(body);
  if (typeof stream === "string") return fail(stream, "stream");
  const texts: string[] = [];
  const system = body.system;
  if (typeof system === "string") texts.push(system);
  else if (Array.isArray(system)) {
    const wrong = blockTexts(system, "system", texts);
    if (wrong !== null) return fail(wrong, "system");
  } else if (system !== undefined && system !== null) return fail("system must be a string or an array of text blocks", "system");
  for (let i = 0; i < body.messages.length; i++) {
    const m: unknown = body.messages[i];
    const at = `messages.${i}`;
    if (!isObject(m)) return fail(`${at} must be an object`, at);
    if (m.role !== "user" && m.role !== "assistant") return fail(`${at}.role must be "user" or "assistant"`, `${at}.role`);
    if (typeof m.content === "string") texts.push(m.content);
    else if (Array.isArray(m.content)) {
      const wrong = blockTexts(m.content, `${at}.content`, texts);
      if (wrong !== null) return fail(wrong, `${at}.content`);
    } else return fail(`${at}.content must be a string or an array of content blocks`, `${at}.content`);
  }
  const tools = body.tools;
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools)) return fail("tools must be an array", "tools");
    for (const tool of tools as unknown[]) texts.push(JSON.stringify(tool));
  }
  return { ok: true, request: { provider: "anthropic", api: "messages", model: body.model, stream, maxOutputTokens: cap, inputTokens: estimate(texts), body } };
}

/** Reads a request body as sent (text): JSON that does not parse is a bad request too. `api` defaults to the provider's first (chat, messages). */
export function readRequest(provider: Provider, text: string, api: Api = provider === "openai" ? "chat" : "messages"): ReadRequest {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (e) {
    return fail(`the request body is not valid JSON: ${(e as Error).message}`, null);
  }
  if (provider === "anthropic") return readAnthropicMessages(body);
  return api === "responses" ? readOpenAIResponses(body) : readOpenAIChat(body);
}

/** What the gateway's ask to limits-model-calls carries of a request (the rest is the key's job). */
export function askFields(request: ModelRequest): Pick<ModelCall, "kind" | "model" | "input_tokens" | "max_output_tokens" | "output_tokens" | "cache_read_tokens" | "cache_write_tokens"> {
  // The asked cap goes as asked: the processor reserves at most the agent's max_output_tokens
  // and records what was asked beside it (LIM-1, docs/limits.md).
  return { kind: "ask", model: request.model, input_tokens: request.inputTokens, max_output_tokens: request.maxOutputTokens, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0 };
}

/** The request as forwarded, and what the gateway does with the stream it answers. */
export interface Forward {
  readonly request: ModelRequest;
  /** The cap was lowered (or set) to the agent's max_output_tokens. */
  readonly capped: boolean;
  /**
   * An OpenAI stream whose client did not ask for usage: the gateway asked for it
   * (`stream_options.include_usage: true`), so the usage-only chunk must not be passed on.
   */
  readonly dropUsageChunk: boolean;
}

/**
 * The request with its output cap no higher than the agent's `max_output_tokens` (null: no
 * limit), so what the provider may answer is what limits-model-calls reserved (docs/limits.md,
 * "An ask above the agent's max_output_tokens"). A cap field above the limit is lowered in
 * place (both, for an OpenAI request that gives both); an OpenAI request with no cap gets
 * `max_completion_tokens` (the field OpenAI documents; `max_tokens` is its older name).
 * A streamed OpenAI request gets `stream_options.include_usage: true` when the client did not
 * ask, so the stream ends with the usage that settles the call. Everything else is left as
 * it came: same keys in the same order, same values, so the JSON differs only there.
 */
export function capOutput(request: ModelRequest, agentMax: number | null): Forward {
  const body: JsonObject = { ...request.body };
  let capped = false;
  let cap = request.maxOutputTokens;
  const fields = request.api === "chat" ? ["max_completion_tokens", "max_tokens"] : request.api === "responses" ? ["max_output_tokens"] : ["max_tokens"];
  if (agentMax !== null) {
    for (const field of fields) {
      const v = body[field];
      if (typeof v === "number" && v > agentMax) {
        body[field] = agentMax;
        capped = true;
      }
    }
    if (cap === null) {
      body[request.api === "responses" ? "max_output_tokens" : "max_completion_tokens"] = agentMax;
      capped = true;
    }
    if (cap === null || cap > agentMax) cap = agentMax;
  }
  let dropUsageChunk = false;
  // The Responses API's stream always ends with the response and its usage (response.completed).
  if (request.api === "chat" && request.stream) {
    const options = body.stream_options;
    if (!isObject(options) || options.include_usage !== true) {
      body.stream_options = { ...(isObject(options) ? options : {}), include_usage: true };
      dropUsageChunk = true;
    }
  }
  return { request: { ...request, maxOutputTokens: cap, body }, capped, dropUsageChunk };
}
