import { describe, expect, it } from "vitest";
import { askFields, capOutput, readAnthropicMessages, readOpenAIChat, readRequest, type ModelRequest, type ReadRequest } from "../../../client/gateway/requests.ts";
import { count, tokensOf, units } from "../../../processors/fit/count.ts";
import { fixtureJson } from "./support.ts";

function ok(r: ReadRequest): ModelRequest {
  if (!r.ok) throw new Error(`expected a request, got: ${r.error.message}`);
  return r.request;
}

function err(r: ReadRequest): { message: string; param: string | null } {
  if (r.ok) throw new Error("expected the body to be refused");
  return r.error;
}

function estimate(texts: string[]): number {
  return tokensOf(texts.reduce((sum, t) => sum + units(t), 0));
}

describe("gateway requests: an OpenAI chat completion body", () => {
  it("gives the model, the asked max_completion_tokens, not streamed, and input tokens by the project's estimate over every text the model reads", () => {
    const body = fixtureJson("openai-chat-request.json");
    const r = ok(readOpenAIChat(body));
    expect(r.provider).toBe("openai");
    expect(r.model).toBe("gpt-4o");
    expect(r.stream).toBe(false);
    expect(r.maxOutputTokens).toBe(16384);
    const tool = (body.tools as unknown[])[0];
    const expected = estimate([
      "You are a release assistant. Answer with the steps to take, in order, and nothing else.",
      "Which services did the last deploy of payments touch? The deploy log is attached.",
      "read_deploy_log",
      '{"service":"payments","last":1}',
      "2026-11-30T14:02:11Z deploy payments@4.18.2: migrated ledger, restarted payments-api, payments-worker; invalidated cache checkout-edge",
      JSON.stringify(tool),
    ]);
    expect(r.inputTokens).toBe(expected);
    expect(r.inputTokens).toBeGreaterThan(100);
    expect(r.body).toBe(body);
  });

  it("counts the tool definitions' JSON and leaves image parts out", () => {
    const body = fixtureJson("openai-chat-request.json");
    const withTools = ok(readOpenAIChat(body)).inputTokens;
    const noTools = ok(readOpenAIChat({ ...body, tools: undefined })).inputTokens;
    expect(withTools - noTools).toBeGreaterThanOrEqual(count(JSON.stringify((body.tools as unknown[])[0])) - 1);
    const messages = structuredClone(body.messages) as Array<{ content: unknown }>;
    (messages[1]!.content as Array<Record<string, unknown>>)[1] = { type: "image_url", image_url: { url: "https://example.com/" + "a-much-longer-name/".repeat(40) + "x.png" } };
    expect(ok(readOpenAIChat({ ...body, messages })).inputTokens).toBe(withTools);
  });

  it("takes max_tokens when max_completion_tokens is absent, the smaller when both are given, and none when neither is", () => {
    const base = { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] };
    expect(ok(readOpenAIChat({ ...base, max_tokens: 512 })).maxOutputTokens).toBe(512);
    expect(ok(readOpenAIChat({ ...base, max_tokens: 512, max_completion_tokens: 300 })).maxOutputTokens).toBe(300);
    expect(ok(readOpenAIChat({ ...base, max_tokens: 200, max_completion_tokens: 300 })).maxOutputTokens).toBe(200);
    expect(ok(readOpenAIChat({ ...base, max_tokens: null })).maxOutputTokens).toBeNull();
    expect(ok(readOpenAIChat(base)).maxOutputTokens).toBeNull();
    expect(ok(readOpenAIChat({ ...base, stream: true })).stream).toBe(true);
  });

  it("refuses a body that is not a chat completion request, naming the field", () => {
    const base = { model: "gpt-4o", messages: [{ role: "user", content: "hi" }] };
    expect(err(readOpenAIChat([base])).param).toBeNull();
    expect(err(readOpenAIChat(null)).message).toMatch(/JSON object/);
    expect(err(readOpenAIChat("hi")).param).toBeNull();
    expect(err(readOpenAIChat({ messages: base.messages })).param).toBe("model");
    expect(err(readOpenAIChat({ ...base, model: 4 })).param).toBe("model");
    expect(err(readOpenAIChat({ model: "gpt-4o" })).param).toBe("messages");
    expect(err(readOpenAIChat({ ...base, messages: [] })).param).toBe("messages");
    expect(err(readOpenAIChat({ ...base, messages: ["hi"] })).param).toBe("messages[0]");
    expect(err(readOpenAIChat({ ...base, messages: [{ content: "hi" }] })).param).toBe("messages[0].role");
    expect(err(readOpenAIChat({ ...base, messages: [{ role: "user", content: 3 }] })).param).toBe("messages[0].content");
    expect(err(readOpenAIChat({ ...base, messages: [{ role: "user", content: [{ type: "text", text: 3 }] }] })).param).toBe("messages[0].content");
    expect(err(readOpenAIChat({ ...base, max_tokens: "100" })).param).toBe("max_tokens");
    expect(err(readOpenAIChat({ ...base, max_completion_tokens: 0 })).param).toBe("max_completion_tokens");
    expect(err(readOpenAIChat({ ...base, max_completion_tokens: 1.5 })).param).toBe("max_completion_tokens");
    expect(err(readOpenAIChat({ ...base, stream: "yes" })).param).toBe("stream");
    expect(err(readOpenAIChat({ ...base, stream_options: true })).param).toBe("stream_options");
    expect(err(readOpenAIChat({ ...base, tools: {} })).param).toBe("tools");
  });

  it("refuses text that is not JSON", () => {
    const e = err(readRequest("openai", '{"model": "gpt-4o", '));
    expect(e.message).toMatch(/not valid JSON/);
    expect(e.param).toBeNull();
    expect(ok(readRequest("openai", JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }))).model).toBe("gpt-4o");
  });
});

describe("gateway requests: an Anthropic messages body", () => {
  it("gives the model, the required max_tokens, and input tokens over the system prompt, messages' text, tool use and results, and tool definitions", () => {
    const body = fixtureJson("anthropic-messages-request.json");
    const r = ok(readAnthropicMessages(body));
    expect(r.provider).toBe("anthropic");
    expect(r.model).toBe("claude-sonnet-4-5-20250929");
    expect(r.stream).toBe(false);
    expect(r.maxOutputTokens).toBe(32000);
    const expected = estimate([
      "You are a release assistant. Answer with the steps to take, in order, and nothing else.",
      "Which services did the last deploy of payments touch?",
      "I'll read the deploy log.",
      "read_deploy_log",
      JSON.stringify({ service: "payments", last: 1 }),
      "2026-11-30T14:02:11Z deploy payments@4.18.2: migrated ledger, restarted payments-api, payments-worker; invalidated cache checkout-edge",
      JSON.stringify((body.tools as unknown[])[0]),
    ]);
    expect(r.inputTokens).toBe(expected);
    expect(ok(readAnthropicMessages({ ...body, system: "short" })).inputTokens).toBeLessThan(r.inputTokens);
    expect(ok(readAnthropicMessages({ ...body, stream: true })).stream).toBe(true);
  });

  it("refuses a body without max_tokens, as the Messages API does, and bodies of the wrong types", () => {
    const base = { model: "claude-sonnet-4", max_tokens: 1024, messages: [{ role: "user", content: "hi" }] };
    expect(ok(readAnthropicMessages(base)).maxOutputTokens).toBe(1024);
    const { max_tokens: _, ...noMax } = base;
    expect(err(readAnthropicMessages(noMax))).toEqual({ message: "max_tokens: Field required", param: "max_tokens" });
    expect(err(readAnthropicMessages({ ...base, max_tokens: -1 })).param).toBe("max_tokens");
    expect(err(readAnthropicMessages([])).param).toBeNull();
    expect(err(readAnthropicMessages({ ...base, model: "" })).param).toBe("model");
    expect(err(readAnthropicMessages({ ...base, messages: [] })).param).toBe("messages");
    expect(err(readAnthropicMessages({ ...base, messages: [{ role: "system", content: "hi" }] })).param).toBe("messages.0.role");
    expect(err(readAnthropicMessages({ ...base, messages: [{ role: "user" }] })).param).toBe("messages.0.content");
    expect(err(readAnthropicMessages({ ...base, messages: [{ role: "user", content: [{ text: "no type" }] }] })).param).toBe("messages.0.content");
    expect(err(readAnthropicMessages({ ...base, system: 7 })).param).toBe("system");
    expect(err(readAnthropicMessages({ ...base, stream: 1 })).param).toBe("stream");
    expect(err(readAnthropicMessages({ ...base, tools: "read" })).param).toBe("tools");
    expect(err(readRequest("anthropic", "")).message).toMatch(/not valid JSON/);
  });
});

describe("gateway requests: the ask and the forwarded request (LIM-1, LIM-7)", () => {
  it("LIM-7: the ask carries the estimate and the cap as asked; limits-model-calls caps its reservation (LIM-1)", () => {
    const r = ok(readOpenAIChat(fixtureJson("openai-chat-request.json")));
    expect(askFields(r)).toEqual({ kind: "ask", model: "gpt-4o", input_tokens: r.inputTokens, max_output_tokens: 16384, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0 });
  });

  it("LIM-1: an OpenAI request above the agent's max_output_tokens is forwarded with the agent's limit, the rest of its JSON unchanged", () => {
    const body = fixtureJson("openai-chat-request.json");
    const before = JSON.stringify(body);
    const f = capOutput(ok(readOpenAIChat(body)), 4096);
    expect(f.capped).toBe(true);
    expect(f.dropUsageChunk).toBe(false);
    expect(f.request.maxOutputTokens).toBe(4096);
    expect(JSON.stringify(f.request.body)).toBe(before.replace('"max_completion_tokens":16384', '"max_completion_tokens":4096'));
    expect(JSON.stringify(body)).toBe(before);
  });

  it("LIM-1: a request within the agent's limit, or an agent with none, is forwarded as it came", () => {
    const body = fixtureJson("openai-chat-request.json");
    for (const agentMax of [16384, 32000, null]) {
      const f = capOutput(ok(readOpenAIChat(body)), agentMax);
      expect(f.capped).toBe(false);
      expect(JSON.stringify(f.request.body)).toBe(JSON.stringify(body));
      expect(f.request.maxOutputTokens).toBe(16384);
    }
  });

  it("LIM-1: an OpenAI request with no cap gets max_completion_tokens at the agent's limit; both caps above it are both lowered", () => {
    const base = { model: "gpt-4o", messages: [{ role: "user", content: "hi" }] };
    const none = capOutput(ok(readOpenAIChat(base)), 2000);
    expect(none.request.body).toEqual({ ...base, max_completion_tokens: 2000 });
    expect(none.request.maxOutputTokens).toBe(2000);
    expect(capOutput(ok(readOpenAIChat(base)), null).request.body).toEqual(base);
    const both = capOutput(ok(readOpenAIChat({ ...base, max_tokens: 8000, max_completion_tokens: 1000 })), 2000);
    expect(both.request.body).toEqual({ ...base, max_tokens: 2000, max_completion_tokens: 1000 });
    expect(both.request.maxOutputTokens).toBe(1000);
  });

  it("LIM-1: an Anthropic request's max_tokens is lowered to the agent's limit", () => {
    const body = fixtureJson("anthropic-messages-request.json");
    const f = capOutput(ok(readAnthropicMessages({ ...body, stream: true })), 8192);
    expect(f.capped).toBe(true);
    expect(f.dropUsageChunk).toBe(false);
    expect(f.request.body).toEqual({ ...body, stream: true, max_tokens: 8192 });
    expect(JSON.stringify(f.request.body)).toBe(JSON.stringify({ ...body, stream: true }).replace('"max_tokens":32000', '"max_tokens":8192'));
  });

  it("a streamed OpenAI request is asked for its usage when the client did not ask, and the usage chunk is marked not to be passed on", () => {
    const base = { model: "gpt-4o", messages: [{ role: "user", content: "hi" }], stream: true };
    const asked = capOutput(ok(readOpenAIChat(base)), null);
    expect(asked.dropUsageChunk).toBe(true);
    expect(asked.request.body).toEqual({ ...base, stream_options: { include_usage: true } });
    const off = capOutput(ok(readOpenAIChat({ ...base, stream_options: { include_usage: false, include_obfuscation: false } })), null);
    expect(off.dropUsageChunk).toBe(true);
    expect(off.request.body.stream_options).toEqual({ include_usage: true, include_obfuscation: false });
    const own = { ...base, stream_options: { include_usage: true } };
    const kept = capOutput(ok(readOpenAIChat(own)), null);
    expect(kept.dropUsageChunk).toBe(false);
    expect(JSON.stringify(kept.request.body)).toBe(JSON.stringify(own));
    const plain = capOutput(ok(readOpenAIChat({ ...base, stream: false })), null);
    expect(plain.request.body.stream_options).toBeUndefined();
    expect(plain.dropUsageChunk).toBe(false);
  });
});
