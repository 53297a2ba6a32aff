/**
 * What a model call used, read from the provider's answer: a whole response body, or a
 * stream of server-sent events fed as bytes arrive (docs/gateway.md). No I/O here.
 *
 * The four counts are the ones processors/limits/money.ts prices, each at its own price and
 * added up (`costMicros`), so no token may be in two of them:
 *   - Anthropic: `input_tokens` already leaves out the cached tokens, so input = input_tokens,
 *     cacheRead = cache_read_input_tokens, cacheWrite = cache_creation_input_tokens, output =
 *     output_tokens.
 *   - OpenAI: `prompt_tokens` counts every prompt token, the cached ones
 *     (`prompt_tokens_details.cached_tokens`) included, so input = prompt_tokens - cached_tokens
 *     and cacheRead = cached_tokens; cacheWrite = 0 (OpenAI charges nothing to write its cache);
 *     output = completion_tokens (reasoning tokens are part of it and billed as output).
 * Anthropic's cache writes of one hour cost more than those of five minutes; the price table
 * has one cache-write price, so both are counted there.
 */
import type { ModelCall } from "../../schemas/types.ts";
import type { TokenCounts } from "../../processors/limits/money.ts";
import { count } from "../../processors/fit/count.ts";
import type { Provider } from "./requests.ts";

export type Usage = TokenCounts;

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

/** A count the provider gave: a non-negative whole number, else 0. */
function n(x: unknown): number {
  return typeof x === "number" && Number.isInteger(x) && x >= 0 ? x : 0;
}

/**
 * OpenAI's `usage` object as counts; null when there is none. Chat completions name the counts
 * `prompt_tokens` (with `prompt_tokens_details.cached_tokens`) and `completion_tokens`; the
 * Responses API `input_tokens` (with `input_tokens_details.cached_tokens`) and `output_tokens`.
 */
export function openAIUsage(usage: unknown): Usage | null {
  if (!isObject(usage)) return null;
  const responses = usage.prompt_tokens === undefined && (usage.input_tokens !== undefined || usage.output_tokens !== undefined);
  const prompt = n(responses ? usage.input_tokens : usage.prompt_tokens);
  const details = responses ? usage.input_tokens_details : usage.prompt_tokens_details;
  const cached = Math.min(prompt, isObject(details) ? n(details.cached_tokens) : 0);
  return { input: prompt - cached, output: n(responses ? usage.output_tokens : usage.completion_tokens), cacheRead: cached, cacheWrite: 0 };
}

/** Anthropic's `usage` object as counts; null when there is none. */
export function anthropicUsage(usage: unknown): Usage | null {
  if (!isObject(usage)) return null;
  return { input: n(usage.input_tokens), output: n(usage.output_tokens), cacheRead: n(usage.cache_read_input_tokens), cacheWrite: n(usage.cache_creation_input_tokens) };
}

/** The usage of a whole (not streamed) response body, parsed; null when it carries none. */
export function responseUsage(provider: Provider, body: unknown): Usage | null {
  if (!isObject(body)) return null;
  return provider === "openai" ? openAIUsage(body.usage) : anthropicUsage(body.usage);
}

/** The fields of a ModelCall of kind usage that the counts fill. */
export function usageFields(u: Usage): Pick<ModelCall, "kind" | "input_tokens" | "output_tokens" | "cache_read_tokens" | "cache_write_tokens"> {
  return { kind: "usage", input_tokens: u.input, output_tokens: u.output, cache_read_tokens: u.cacheRead, cache_write_tokens: u.cacheWrite };
}

/** One server-sent event, as read. */
export interface StreamEvent {
  /** The `event:` field, "" when none (OpenAI names none; Anthropic names each). */
  readonly event: string;
  /** The `data:` lines joined with newlines. */
  readonly data: string;
  /** The event's text as it came, its closing blank line included, to pass on unchanged. */
  readonly raw: string;
  /** An OpenAI chunk that carries only the usage (`choices: []`, the one include_usage adds). */
  readonly usageOnly: boolean;
}

/** How a stream is settled. */
export interface StreamSettlement {
  readonly usage: Usage;
  /**
   * `provider`: the stream ended with the provider's own usage. `estimate`: it was cut short
   * (the client went away, the upstream broke), so the output is what was streamed by the
   * project's estimate, and the input the provider's count when it gave one before the cut
   * (Anthropic's message_start) or else the request's estimate.
   */
  readonly source: "provider" | "estimate";
}

/**
 * Reads a provider's stream of server-sent events incrementally: `push` takes the bytes as
 * they arrive, cut anywhere (inside a line, inside a UTF-8 character), and returns the events
 * completed by them.
 *
 * OpenAI (`/v1/chat/completions`, `stream: true`): the usage comes in the last chunk, whose
 * `choices` is empty, when `stream_options.include_usage` is true, before `data: [DONE]`.
 * Anthropic (`/v1/messages`): `message_start` carries the input counts in `message.usage`,
 * and each `message_delta` the counts so far (output cumulative); `message_stop` ends it.
 * The text the model streamed (content, refusals, tool-call arguments, thinking) is kept for
 * the estimate of a stream cut short.
 */
export class StreamUsage {
  private readonly decoder = new TextDecoder("utf-8");
  private buffer = "";
  private lines: string[] = [];
  private raw = "";
  private streamed = "";
  private usage: Usage | null = null;
  private startOutput = 0;
  private ended = false;

  readonly provider: Provider;

  constructor(provider: Provider) {
    this.provider = provider;
  }

  /** Feeds bytes (or text) as they arrive; returns the events they complete. */
  push(chunk: Uint8Array | string): StreamEvent[] {
    const text = typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    return this.take(text, false);
  }

  /** The stream is over: any event left without its blank line is read as complete. */
  end(): StreamEvent[] {
    return this.take(this.decoder.decode(), true);
  }

  /** Whether the provider's own end was seen (`[DONE]` or `message_stop`) with its usage. */
  get complete(): boolean {
    return this.ended && this.usage !== null;
  }

  /** The provider's usage so far (null before any). */
  get providerUsage(): Usage | null {
    return this.usage;
  }

  /** The output streamed so far by the project's estimate of the text deltas seen. */
  get streamedOutputTokens(): number {
    return count(this.streamed);
  }

  /**
   * The usage that settles the call: the provider's when the stream reached its end, else
   * (cut short) what was streamed, at least what the provider had already counted.
   * `requestInputTokens` is the request's estimate (requests.ts), for a stream cut before the
   * provider said its input.
   */
  settle(requestInputTokens: number): StreamSettlement {
    if (this.complete && this.usage !== null) return { usage: this.usage, source: "provider" };
    const output = Math.max(this.streamedOutputTokens, this.usage?.output ?? 0, this.startOutput);
    const counted = this.usage;
    if (counted !== null) return { usage: { ...counted, output }, source: "estimate" };
    return { usage: { input: requestInputTokens, output, cacheRead: 0, cacheWrite: 0 }, source: "estimate" };
  }

  private take(text: string, last: boolean): StreamEvent[] {
    const out: StreamEvent[] = [];
    this.buffer += text;
    let from = 0;
    for (;;) {
      let i = from;
      while (i < this.buffer.length && this.buffer.charCodeAt(i) !== 10 && this.buffer.charCodeAt(i) !== 13) i++;
      if (i >= this.buffer.length) break;
      // A CR at the end of what has come may be the first half of a CRLF: wait for the next byte.
      if (this.buffer.charCodeAt(i) === 13 && i + 1 >= this.buffer.length && !last) break;
      const end = this.buffer.charCodeAt(i) === 13 && this.buffer.charCodeAt(i + 1) === 10 ? i + 2 : i + 1;
      this.line(this.buffer.slice(from, i), this.buffer.slice(from, end), out);
      from = end;
    }
    this.buffer = this.buffer.slice(from);
    if (last) {
      if (this.buffer !== "") this.line(this.buffer, this.buffer, out);
      this.buffer = "";
      this.line("", "", out);
    }
    return out;
  }

  private line(line: string, raw: string, out: StreamEvent[]): void {
    if (line === "") {
      if (this.lines.length > 0) out.push(this.event(this.lines, this.raw + raw));
      this.lines = [];
      this.raw = "";
      return;
    }
    this.lines.push(line);
    this.raw += raw;
  }

  private event(lines: readonly string[], raw: string): StreamEvent {
    let event = "";
    const data: string[] = [];
    for (const l of lines) {
      if (l.startsWith(":")) continue; // a comment (keep-alive)
      const colon = l.indexOf(":");
      const field = colon < 0 ? l : l.slice(0, colon);
      let value = colon < 0 ? "" : l.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    const text = data.join("\n");
    const usageOnly = this.provider === "openai" ? this.openAI(text) : (this.anthropic(event, text), false);
    return { event, data: text, raw, usageOnly };
  }

  /** Reads an OpenAI chunk; true when it is the usage-only chunk. */
  private openAI(data: string): boolean {
    if (data === "[DONE]") {
      this.ended = true;
      return false;
    }
    const chunk = parse(data);
    if (!isObject(chunk)) return false;
    if (typeof chunk.type === "string" && chunk.type.startsWith("response.")) {
      this.responsesEvent(chunk.type, chunk);
      return false;
    }
    const choices = Array.isArray(chunk.choices) ? (chunk.choices as unknown[]) : [];
    for (const choice of choices) {
      const delta = isObject(choice) ? choice.delta : undefined;
      if (!isObject(delta)) continue;
      for (const key of ["content", "refusal", "reasoning_content"]) if (typeof delta[key] === "string") this.streamed += delta[key];
      if (Array.isArray(delta.tool_calls)) {
        for (const call of delta.tool_calls as unknown[]) {
          const fn = isObject(call) ? call.function : undefined;
          if (!isObject(fn)) continue;
          if (typeof fn.name === "string") this.streamed += fn.name;
          if (typeof fn.arguments === "string") this.streamed += fn.arguments;
        }
      }
    }
    const usage = openAIUsage(chunk.usage);
    if (usage === null) return false;
    this.usage = usage;
    return choices.length === 0;
  }

  /**
   * Reads a Responses API event: the text deltas (output text, refusals, function call
   * arguments, reasoning) for a cut stream's estimate, and the usage of the response that ends
   * the stream (`response.completed`, `response.incomplete` or `response.failed`; there is no
   * `[DONE]`).
   */
  private responsesEvent(type: string, event: Record<string, unknown>): void {
    if (type.endsWith(".delta")) {
      if (typeof event.delta === "string") this.streamed += event.delta;
      return;
    }
    if (type === "response.completed" || type === "response.incomplete" || type === "response.failed") {
      const response = event.response;
      const usage = isObject(response) ? openAIUsage(response.usage) : null;
      if (usage !== null) this.usage = usage;
      this.ended = true;
    }
  }

  /** Reads an Anthropic event. */
  private anthropic(event: string, data: string): void {
    const body = parse(data);
    if (!isObject(body)) return;
    const type = typeof body.type === "string" ? body.type : event;
    if (type === "message_start") {
      const message = body.message;
      const usage = isObject(message) ? anthropicUsage(message.usage) : null;
      if (usage !== null) {
        this.usage = usage;
        this.startOutput = usage.output;
      }
    } else if (type === "message_delta") {
      // Counts here are cumulative; the input and cache counts appear only in newer answers.
      const u = body.usage;
      if (!isObject(u)) return;
      const before = this.usage ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
      const pick = (field: string, was: number): number => (typeof u[field] === "number" ? n(u[field]) : was);
      this.usage = { input: pick("input_tokens", before.input), output: pick("output_tokens", before.output), cacheRead: pick("cache_read_input_tokens", before.cacheRead), cacheWrite: pick("cache_creation_input_tokens", before.cacheWrite) };
    } else if (type === "content_block_start") {
      const block = body.content_block;
      if (isObject(block)) {
        if (typeof block.text === "string") this.streamed += block.text;
        if (typeof block.name === "string") this.streamed += block.name;
      }
    } else if (type === "content_block_delta") {
      const delta = body.delta;
      if (!isObject(delta)) return;
      for (const key of ["text", "partial_json", "thinking"]) if (typeof delta[key] === "string") this.streamed += delta[key];
    } else if (type === "message_stop") {
      this.ended = true;
    }
  }
}

function parse(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}
