/**
 * OpenAI's Responses API through the gateway (`POST /v1/responses`, which Codex CLI and the
 * Agents SDK speak): the body read for the ask, its cap forwarded, its usage read from a whole
 * response and from its stream's last event, and the official SDK's `responses.create` through
 * the server, streamed and not, with decisions scripted (the real pipeline's are
 * test/integration/gateway.test.ts).
 */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capOutput, readOpenAIResponses, readRequest, type ModelRequest, type ReadRequest } from "../../../client/gateway/requests.ts";
import { startGateway, type Gateway, type GatewayRuntime } from "../../../client/gateway/server.ts";
import { openAIUsage, responseUsage, StreamUsage } from "../../../client/gateway/usage.ts";
import { tokensOf, units } from "../../../processors/fit/count.ts";
import { createLogger } from "../../../processors/runner/log.ts";
import type { Decision, ModelCall } from "../../../schemas/types.ts";
import { memoryKeyStore } from "../../../client/gateway/memory-store.ts";
import { startFakeProvider, type FakeProvider } from "../../support/fake-provider.ts";

function ok(r: ReadRequest): ModelRequest {
  if (!r.ok) throw new Error(`expected a request, got: ${r.error.message}`);
  return r.request;
}

const estimate = (texts: string[]) => tokensOf(texts.reduce((sum, t) => sum + units(t), 0));

describe("gateway requests: a Responses API body", () => {
  it("LIM-7 gives the model, max_output_tokens, and input tokens over instructions, input items, tool calls and outputs, and tools", () => {
    const tool = { type: "function", name: "get_page", parameters: { type: "object", properties: { path: { type: "string" } } } };
    const body = {
      model: "gpt-5",
      instructions: "You review code.",
      input: [
        { role: "user", content: "Review the diff." },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "Reading it." }] },
        { type: "function_call", call_id: "c1", name: "get_page", arguments: '{"path":"a.ts"}' },
        { type: "function_call_output", call_id: "c1", output: "export const a = 1;" },
        { role: "user", content: [{ type: "input_text", text: "And now?" }, { type: "input_image", image_url: "https://example.com/x.png" }] },
      ],
      tools: [tool],
      max_output_tokens: 500,
      stream: true,
    };
    const r = ok(readOpenAIResponses(body));
    expect([r.provider, r.api, r.model, r.stream, r.maxOutputTokens]).toEqual(["openai", "responses", "gpt-5", true, 500]);
    expect(r.inputTokens).toBe(estimate(["You review code.", "Review the diff.", "Reading it.", "get_page", '{"path":"a.ts"}', "export const a = 1;", "And now?", JSON.stringify(tool)]));
    expect(ok(readRequest("openai", JSON.stringify({ model: "gpt-5", input: "hi" }), "responses")).inputTokens).toBe(estimate(["hi"]));
  });

  it("refuses a body without input (unless it continues a kept conversation), naming the field", () => {
    const missing = readOpenAIResponses({ model: "gpt-5" });
    expect(missing.ok ? null : missing.error.param).toBe("input");
    expect(readOpenAIResponses({ model: "gpt-5", previous_response_id: "resp_1", input: [] }).ok).toBe(true);
    const cap = readOpenAIResponses({ model: "gpt-5", input: "x", max_output_tokens: 0 });
    expect(cap.ok ? null : cap.error.param).toBe("max_output_tokens");
  });

  it("LIM-1 the agent's cap is forwarded as max_output_tokens, and a stream is not asked for stream_options", () => {
    const r = ok(readOpenAIResponses({ model: "gpt-5", input: "x", stream: true }));
    const f = capOutput(r, 300);
    expect(f.request.body).toEqual({ model: "gpt-5", input: "x", stream: true, max_output_tokens: 300 });
    expect([f.capped, f.dropUsageChunk, f.request.maxOutputTokens]).toEqual([true, false, 300]);
    expect(capOutput(ok(readOpenAIResponses({ model: "gpt-5", input: "x", max_output_tokens: 9000 })), 300).request.body.max_output_tokens).toBe(300);
  });

  it("reads a response's usage (cached input apart) and a stream's from its last event", () => {
    const usage = { input_tokens: 120, input_tokens_details: { cached_tokens: 20 }, output_tokens: 40, output_tokens_details: { reasoning_tokens: 10 }, total_tokens: 160 };
    expect(openAIUsage(usage)).toEqual({ input: 100, output: 40, cacheRead: 20, cacheWrite: 0 });
    expect(responseUsage("openai", { object: "response", usage })).toEqual({ input: 100, output: 40, cacheRead: 20, cacheWrite: 0 });
    const s = new StreamUsage("openai");
    s.push(`event: response.output_text.delta\ndata: ${JSON.stringify({ type: "response.output_text.delta", delta: "Hello there" })}\n\n`);
    expect(s.complete).toBe(false);
    expect(s.settle(7).source).toBe("estimate");
    s.push(`event: response.completed\ndata: ${JSON.stringify({ type: "response.completed", response: { object: "response", usage } })}\n\n`);
    expect(s.complete).toBe(true);
    expect(s.settle(7)).toEqual({ usage: { input: 100, output: 40, cacheRead: 20, cacheWrite: 0 }, source: "provider" });
  });
});

class AllowAll implements GatewayRuntime {
  readonly asks: ModelCall[] = [];
  readonly published: ModelCall[] = [];
  askModelCall(ask: ModelCall): Promise<Decision> {
    this.asks.push(ask);
    const d: Decision = { id: `d-${ask.id}`, input_id: ask.id, processor: "limits-model-calls", tenant: ask.tenant, tree_id: ask.tree_id, job_id: ask.job_id, run_id: ask.run_id, subject: ask.request_id, verdict: "allow", reason_code: null, limit: null, numbers: { max_output_tokens: 64 }, message: "", evidence: null, ts: Date.now() };
    return Promise.resolve(d);
  }
  awaitAdmission(): Promise<Decision> {
    return Promise.reject(new Error("no wait in this test"));
  }
  publishModelCalls(calls: readonly ModelCall[]): Promise<void> {
    this.published.push(...calls);
    return Promise.resolve();
  }
}

describe("oz0 gateway: the Responses API with the official SDK", () => {
  const runtime = new AllowAll();
  let provider: FakeProvider;
  let gateway: Gateway;
  let client: OpenAI;

  beforeAll(async () => {
    provider = await startFakeProvider();
    const keys = memoryKeyStore();
    gateway = await startGateway({ port: 0, upstreams: { openai: `${provider.url}/v1` }, credentials: { openai: provider.options.openaiKey }, keys, runtime, log: createLogger({}, () => undefined) });
    const { key } = await keys.create({ tenant: "acme", agent: "acme-coder", tree_id: "t1", job_id: "t1", run_id: "t1-run", created_by: "test", expires_at: Date.now() + 60_000 }, Date.now());
    client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
  });

  afterAll(async () => {
    await gateway.close();
    await provider.close();
  });

  it("LIM-1 not streamed: the SDK reads the answer; the call went with the decision's cap and its usage settles it", async () => {
    const res = await client.responses.create({ model: "gpt-5", input: "How did the deployment go?" });
    const answered = provider.answered.at(-1);
    expect(res.output_text).toBe(answered?.text);
    expect(provider.requests.at(-1)).toMatchObject({ path: "/v1/responses", body: { max_output_tokens: 64 } });
    expect(runtime.asks.at(-1)).toMatchObject({ kind: "ask", model: "gpt-5", max_output_tokens: null, job_id: "t1" });
    expect(runtime.published.at(-1)).toMatchObject({ kind: "usage", request_id: runtime.asks.at(-1)?.request_id, input_tokens: answered?.counts?.input, output_tokens: answered?.counts?.output });
  });

  it("LIM-1 streamed: every event reaches the SDK as sent, and the usage of response.completed settles the call", async () => {
    const stream = await client.responses.create({ model: "gpt-5", input: "Stream it.", stream: true });
    let text = "";
    let last = "";
    for await (const event of stream) {
      if (event.type === "response.output_text.delta") text += event.delta;
      last = event.type;
    }
    const answered = provider.answered.at(-1);
    expect(text).toBe(answered?.text);
    expect(["response.completed", "response.incomplete"]).toContain(last);
    expect(runtime.published.at(-1)).toMatchObject({ kind: "usage", input_tokens: answered?.counts?.input, output_tokens: answered?.counts?.output });
  });
});
