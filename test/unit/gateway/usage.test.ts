import { describe, expect, it } from "vitest";
import { anthropicUsage, openAIUsage, responseUsage, StreamUsage, usageFields, type StreamEvent } from "../../../client/gateway/usage.ts";
import { costMicros, type ModelPrice } from "../../../processors/limits/money.ts";
import { count } from "../../../processors/fit/count.ts";
import { fixtureJson, fixtureText } from "./support.ts";

const PRICE: ModelPrice = { input: 2_500_000, output: 10_000_000, cache_read: 1_250_000, cache_write: 3_750_000, max_output_tokens: 16_384 };

/** Feeds a stream in pieces of `size` bytes (1: every byte on its own, inside UTF-8 characters too). */
function feed(parser: StreamUsage, bytes: Uint8Array, size: number): StreamEvent[] {
  const events: StreamEvent[] = [];
  for (let i = 0; i < bytes.length; i += size) events.push(...parser.push(bytes.subarray(i, i + size)));
  return events;
}

const OPENAI_STREAM = fixtureText("openai-chat-stream.txt");
const ANTHROPIC_STREAM = fixtureText("anthropic-messages-stream.txt");

describe("gateway usage: a whole response (LIM-7's settlement)", () => {
  it("OpenAI: prompt_tokens include the cached ones, so input is prompt_tokens less cached_tokens and the cache read is priced once", () => {
    const body = fixtureJson("openai-chat-response.json");
    const u = responseUsage("openai", body);
    expect(u).toEqual({ input: 86, output: 300, cacheRead: 1920, cacheWrite: 0 });
    expect(u!.input + u!.cacheRead).toBe(2006);
    // 86 * 2.5 + 1920 * 1.25 + 300 * 10 dollars per million tokens: 0.005615 USD.
    expect(costMicros(PRICE, u!)).toBe(5615);
    expect(usageFields(u!)).toEqual({ kind: "usage", input_tokens: 86, output_tokens: 300, cache_read_tokens: 1920, cache_write_tokens: 0 });
  });

  it("OpenAI: no details means nothing cached; a cached count above the prompt is held to it", () => {
    expect(openAIUsage({ prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 })).toEqual({ input: 10, output: 3, cacheRead: 0, cacheWrite: 0 });
    expect(openAIUsage({ prompt_tokens: 10, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 12 } })).toEqual({ input: 0, output: 3, cacheRead: 10, cacheWrite: 0 });
    expect(openAIUsage(null)).toBeNull();
  });

  it("Anthropic: input_tokens leave the cache out, so each count maps to its own", () => {
    const u = responseUsage("anthropic", fixtureJson("anthropic-messages-response.json"));
    expect(u).toEqual({ input: 86, output: 41, cacheRead: 1920, cacheWrite: 0 });
    expect(anthropicUsage({ input_tokens: 5, output_tokens: 2, cache_creation_input_tokens: null, cache_read_input_tokens: null })).toEqual({ input: 5, output: 2, cacheRead: 0, cacheWrite: 0 });
    expect(responseUsage("anthropic", { type: "message" })).toBeNull();
    expect(responseUsage("anthropic", "not a body")).toBeNull();
  });
});

describe("gateway usage: a streamed response", () => {
  it("OpenAI: the usage comes from the final chunk, read the same whether the bytes come whole or one by one", () => {
    const bytes = new TextEncoder().encode(OPENAI_STREAM);
    for (const size of [bytes.length, 7, 1]) {
      const p = new StreamUsage("openai");
      const events = [...feed(p, bytes, size), ...p.end()];
      expect(events).toHaveLength(6);
      expect(events.map((e) => e.raw).join("")).toBe(OPENAI_STREAM);
      expect(events.map((e) => e.usageOnly)).toEqual([false, false, false, false, true, false]);
      expect(events[5]!.data).toBe("[DONE]");
      expect(p.complete).toBe(true);
      expect(p.settle(999)).toEqual({ usage: { input: 86, output: 24, cacheRead: 1920, cacheWrite: 0 }, source: "provider" });
    }
  });

  it("OpenAI: CRLF line endings, a CR split from its LF, comments and a last event with no blank line", () => {
    const text = ": keep-alive\r\n\r\n" + OPENAI_STREAM.replace(/\n/g, "\r\n").replace(/\r\n\r\n$/, "");
    const p = new StreamUsage("openai");
    const events: StreamEvent[] = [];
    for (const part of text.split(/(?<=\r)/)) events.push(...p.push(part));
    events.push(...p.end());
    expect(events.map((e) => e.raw).join("")).toBe(text);
    expect(events).toHaveLength(7);
    expect(events[0]!.data).toBe("");
    expect(events.at(-1)!.data).toBe("[DONE]");
    expect(p.settle(999).source).toBe("provider");
  });

  it("Anthropic: message_start's input and cache counts and message_delta's cumulative output, whole or byte by byte", () => {
    const bytes = new TextEncoder().encode(ANTHROPIC_STREAM);
    for (const size of [bytes.length, 5, 1]) {
      const p = new StreamUsage("anthropic");
      const events = [...feed(p, bytes, size), ...p.end()];
      expect(events.map((e) => e.event)).toEqual([
        "message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop",
      ]);
      expect(events.map((e) => e.raw).join("")).toBe(ANTHROPIC_STREAM);
      expect(events.some((e) => e.usageOnly)).toBe(false);
      expect(p.settle(999)).toEqual({ usage: { input: 86, output: 57, cacheRead: 1920, cacheWrite: 312 }, source: "provider" });
    }
  });

  it("Anthropic: counts a message_delta gives for input and cache replace message_start's", () => {
    const p = new StreamUsage("anthropic");
    p.push(ANTHROPIC_STREAM.replace('"usage":{"output_tokens":57}', '"usage":{"input_tokens":90,"cache_read_input_tokens":1920,"cache_creation_input_tokens":0,"output_tokens":57}'));
    p.end();
    expect(p.settle(0).usage).toEqual({ input: 90, output: 57, cacheRead: 1920, cacheWrite: 0 });
  });
});

describe("gateway usage: a stream cut short is charged for what was streamed", () => {
  it("OpenAI: cut before the usage chunk, the output is the estimate of the content streamed and the input the request's estimate", () => {
    const cut = OPENAI_STREAM.slice(0, OPENAI_STREAM.indexOf('"finish_reason":"stop"'));
    const p = new StreamUsage("openai");
    p.push(new TextEncoder().encode(cut));
    p.end();
    expect(p.complete).toBe(false);
    const streamed = "1. Check payments-api and payments-worker health — après le déploiement.\n2. Confirm the ledger migration finished.";
    expect(p.streamedOutputTokens).toBe(count(streamed));
    expect(p.settle(2010)).toEqual({ usage: { input: 2010, output: count(streamed), cacheRead: 0, cacheWrite: 0 }, source: "estimate" });
    expect(count(streamed)).toBeGreaterThan(15);
  });

  it("OpenAI: a stream that stops after its usage chunk but before [DONE] is still settled by that usage's input, the output at least what was counted", () => {
    const cut = OPENAI_STREAM.slice(0, OPENAI_STREAM.indexOf("data: [DONE]"));
    const p = new StreamUsage("openai");
    p.push(cut);
    p.end();
    expect(p.complete).toBe(false);
    expect(p.settle(0)).toEqual({ usage: { input: 86, output: Math.max(24, p.streamedOutputTokens), cacheRead: 1920, cacheWrite: 0 }, source: "estimate" });
  });

  it("Anthropic: cut mid-answer, the input comes from message_start and the output is the estimate of the text and tool input streamed", () => {
    const cut = ANTHROPIC_STREAM.slice(0, ANTHROPIC_STREAM.indexOf("event: message_delta"));
    const p = new StreamUsage("anthropic");
    feed(p, new TextEncoder().encode(cut), 3);
    p.end();
    const streamed = "1. Check payments-api and payments-worker health — après le déploiement.\n2. Confirm the ledger migration finished." + "read_deploy_log" + '{"service": "checkout-edge", "last": 1}';
    expect(p.settle(5000)).toEqual({ usage: { input: 86, output: count(streamed), cacheRead: 1920, cacheWrite: 312 }, source: "estimate" });
  });

  it("a stream cut before anything was streamed is charged its input and no output", () => {
    const p = new StreamUsage("anthropic");
    p.push("event: message_start\ndata: {\"type\":\"message_st");
    p.end();
    expect(p.settle(120)).toEqual({ usage: { input: 120, output: 0, cacheRead: 0, cacheWrite: 0 }, source: "estimate" });
  });
});
