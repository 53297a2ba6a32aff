/**
 * The fake provider of test/support/fake-provider.ts read by the official `openai` and
 * `@anthropic-ai/sdk` clients as they read the providers: bodies, streams, usage, the max tokens
 * cut and errors. And its raw streams read by the gateway's own StreamUsage, to the same usage.
 * No services: a loopback server only.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { responseUsage, StreamUsage } from "../../../client/gateway/usage.ts";
import { startFakeProvider, type FakeProvider } from "../../support/fake-provider.ts";

let fake: FakeProvider;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  fake = await startFakeProvider({ openaiKey: "sk-test-openai", anthropicKey: "sk-ant-test" });
  openai = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "sk-test-openai", maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: fake.url, apiKey: "sk-ant-test", maxRetries: 0 });
});
afterAll(async () => {
  await fake?.close();
});
beforeEach(() => {
  fake.configure({ text: fake.options.text, cachedTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 });
});

const MESSAGES = [
  { role: "system" as const, content: "You are the deploy assistant of the payments team." },
  { role: "user" as const, content: "Did the deployment of payments-api finish, and what is left to do?" },
];

function last<T>(xs: readonly T[]): T {
  const x = xs[xs.length - 1];
  if (x === undefined) throw new Error("empty");
  return x;
}

describe("the fake provider through the official OpenAI client", () => {
  it("SYS-7 a chat completion: the text, finish_reason stop, usage with the cached tokens in prompt_tokens_details, and the request recorded with its key", async () => {
    fake.configure({ cachedTokens: 12 });
    const r = await openai.chat.completions.create({ model: "gpt-4o", messages: MESSAGES });
    const a = last(fake.answered);
    expect(r.object).toBe("chat.completion");
    expect(r.choices[0]?.message.content).toBe(fake.options.text);
    expect(r.choices[0]?.finish_reason).toBe("stop");
    expect(r.usage?.prompt_tokens).toBeGreaterThan(30);
    expect(r.usage?.prompt_tokens_details?.cached_tokens).toBe(12);
    expect(r.usage?.total_tokens).toBe((r.usage?.prompt_tokens ?? 0) + (r.usage?.completion_tokens ?? 0));
    expect(a).toMatchObject({ provider: "openai", path: "/v1/chat/completions", stream: false, status: 200, completed: true });
    expect(r.usage).toEqual(a.usage);
    expect(a.counts).toEqual({ input: (r.usage?.prompt_tokens ?? 0) - 12, output: r.usage?.completion_tokens, cacheRead: 12, cacheWrite: 0 });
    // The gateway's reader maps the body to the same counts as the fake says it answered.
    expect(responseUsage("openai", r)).toEqual(a.counts);
    const req = last(fake.requests);
    expect(req.headers.authorization).toBe("Bearer sk-test-openai");
    expect((req.body as { model: string }).model).toBe("gpt-4o");
  });

  it("SYS-7 the same request is counted the same each time, and a longer prompt counts more", async () => {
    const a = await openai.chat.completions.create({ model: "gpt-4o", messages: MESSAGES });
    const b = await openai.chat.completions.create({ model: "gpt-4o", messages: MESSAGES });
    const c = await openai.chat.completions.create({ model: "gpt-4o", messages: [...MESSAGES, { role: "user", content: "And the ledger migration, did it finish too?" }] });
    expect(b.usage).toEqual(a.usage);
    expect(c.usage?.prompt_tokens).toBeGreaterThan(a.usage?.prompt_tokens ?? Infinity);
  });

  it("LIM-1 max_completion_tokens cuts the answer: finish_reason length and exactly that many completion tokens", async () => {
    const r = await openai.chat.completions.create({ model: "gpt-4o", messages: MESSAGES, max_completion_tokens: 7 });
    expect(r.choices[0]?.finish_reason).toBe("length");
    expect(r.usage?.completion_tokens).toBe(7);
    expect(fake.options.text.startsWith(r.choices[0]?.message.content ?? "x")).toBe(true);
    expect((r.choices[0]?.message.content ?? "").length).toBeLessThan(fake.options.text.length);
    const old = await openai.chat.completions.create({ model: "gpt-4o", messages: MESSAGES, max_tokens: 5 });
    expect(old.usage?.completion_tokens).toBe(5);
  });

  it("SYS-7 streamed with include_usage: chunks with usage null, then the usage-only chunk with choices [], read by the SDK's stream", async () => {
    const stream = await openai.chat.completions.create({ model: "gpt-4o", messages: MESSAGES, stream: true, stream_options: { include_usage: true } });
    let text = "";
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const c of stream) {
      chunks.push(c);
      text += c.choices[0]?.delta.content ?? "";
    }
    expect(text).toBe(fake.options.text);
    expect(chunks.length).toBeGreaterThan(10);
    const u = last(chunks);
    expect(u.choices).toEqual([]);
    expect(u.usage).toEqual(last(fake.answered).usage);
    expect(chunks.slice(0, -1).every((c) => c.usage === null && c.object === "chat.completion.chunk")).toBe(true);
    expect(chunks[chunks.length - 2]?.choices[0]?.finish_reason).toBe("stop");
    expect(last(fake.answered)).toMatchObject({ stream: true, completed: true, usageSent: true, sent: fake.options.text });
  });

  it("SYS-7 streamed without include_usage: no usage chunk and no usage field, as OpenAI streams it", async () => {
    const stream = await openai.chat.completions.create({ model: "gpt-4o", messages: MESSAGES, stream: true });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks.every((c) => c.choices.length === 1 && !("usage" in c))).toBe(true);
    expect(last(fake.answered).usageSent).toBe(false);
  });

  it("SYS-7 the stream helper's finalChatCompletion and a streamed max_tokens cut", async () => {
    const s = openai.chat.completions.stream({ model: "gpt-4o", messages: MESSAGES, max_completion_tokens: 4, stream_options: { include_usage: true } });
    const done = await s.finalChatCompletion();
    expect(done.choices[0]?.finish_reason).toBe("length");
    expect(done.usage?.completion_tokens).toBe(4);
    expect(done.choices[0]?.message.content).toBe(last(fake.answered).text);
  });

  it("SYS-7 models.list reads the OpenAI list", async () => {
    const ids: string[] = [];
    for await (const m of openai.models.list()) ids.push(m.id);
    expect(ids).toContain("gpt-4o");
  });

  it("SYS-7 a wrong key raises AuthenticationError (401, invalid_api_key), and nothing is answered with usage", async () => {
    const bad = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "sk-wrong-key-1234", maxRetries: 0 });
    const err = await bad.chat.completions.create({ model: "gpt-4o", messages: MESSAGES }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((err as InstanceType<typeof OpenAI.AuthenticationError>).status).toBe(401);
    expect((err as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe("invalid_api_key");
    expect(String((err as Error).message)).not.toContain("sk-wrong-key-1234");
    expect(last(fake.answered)).toMatchObject({ status: 401, usage: null });
  });

  it("SYS-7 failNext answers the next request with the status in OpenAI's shape (500 InternalServerError, a body of one's own for 429), then answers again", async () => {
    fake.failNext(500);
    const err = await openai.chat.completions.create({ model: "gpt-4o", messages: MESSAGES }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(500);
    expect((err as InstanceType<typeof OpenAI.APIError>).type).toBe("server_error");
    fake.failNext(429, { error: { message: "You exceeded your current quota.", type: "insufficient_quota", param: null, code: "insufficient_quota" } });
    const quota = await openai.chat.completions.create({ model: "gpt-4o", messages: MESSAGES, stream: true }).catch((e: unknown) => e);
    expect(quota).toBeInstanceOf(OpenAI.RateLimitError);
    expect((quota as InstanceType<typeof OpenAI.APIError>).code).toBe("insufficient_quota");
    const ok = await openai.chat.completions.create({ model: "gpt-4o", messages: MESSAGES });
    expect(ok.choices[0]?.message.content).toBe(fake.options.text);
  });

  it("SYS-7 a body that is no chat completion request is a 400 naming the field", async () => {
    const err = await openai.chat.completions.create({ model: "gpt-4o", messages: [] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.APIError>).param).toBe("messages");
  });
});

describe("the fake provider through the official Anthropic client", () => {
  const SYSTEM = "You are the deploy assistant of the payments team.";
  const USER = [{ role: "user" as const, content: "Did the deployment of payments-api finish, and what is left to do?" }];

  it("SYS-7 a message: the text, stop_reason end_turn, usage with cache read and write, the key and version headers recorded", async () => {
    fake.configure({ cacheReadTokens: 9, cacheWriteTokens: 4 });
    const m = await anthropic.messages.create({ model: "claude-sonnet-4-5", max_tokens: 1024, system: SYSTEM, messages: USER });
    const a = last(fake.answered);
    expect(m.type).toBe("message");
    expect(m.content[0]?.type === "text" && m.content[0].text).toBe(fake.options.text);
    expect(m.stop_reason).toBe("end_turn");
    expect(m.usage.cache_read_input_tokens).toBe(9);
    expect(m.usage.cache_creation_input_tokens).toBe(4);
    expect(m.usage.input_tokens).toBeGreaterThan(10);
    expect(a.counts).toEqual({ input: m.usage.input_tokens, output: m.usage.output_tokens, cacheRead: 9, cacheWrite: 4 });
    expect(responseUsage("anthropic", m)).toEqual(a.counts);
    const req = last(fake.requests);
    // The 1.x SDK (API version 2026-10-21) sends the key as a bearer token, not as x-api-key.
    expect(req.headers.authorization).toBe("Bearer sk-ant-test");
    expect(req.headers["x-api-key"]).toBeUndefined();
    expect(req.headers["anthropic-version"]).toBe("2026-10-21");
  });

  it("SYS-7 x-api-key is taken too (older SDKs, curl); anthropic-version is required; 2026-10-21 refuses temperature", async () => {
    const post = (headers: Record<string, string>, body: Record<string, unknown>) => fetch(`${fake.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 20, messages: USER, ...body }) });
    const old = await post({ "x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01" }, { temperature: 0.2 });
    expect(old.status).toBe(200);
    expect(((await old.json()) as { type: string }).type).toBe("message");
    const noVersion = await post({ "x-api-key": "sk-ant-test" }, {});
    expect(noVersion.status).toBe(400);
    expect(await noVersion.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: "anthropic-version: header is required" } });
    const err = await anthropic.messages.create({ model: "claude-sonnet-4-5", max_tokens: 20, messages: USER, temperature: 0.2 } as Anthropic.MessageCreateParamsNonStreaming).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(String((err as Error).message)).toContain("temperature");
  });

  it("LIM-1 max_tokens cuts the answer: stop_reason max_tokens and exactly that many output tokens", async () => {
    const m = await anthropic.messages.create({ model: "claude-sonnet-4-5", max_tokens: 6, messages: USER });
    expect(m.stop_reason).toBe("max_tokens");
    expect(m.usage.output_tokens).toBe(6);
  });

  it("SYS-7 streamed with stream: true: every event type in order, message_delta's cumulative usage equal to what was answered", async () => {
    fake.configure({ cacheReadTokens: 5 });
    const stream = await anthropic.messages.create({ model: "claude-sonnet-4-5", max_tokens: 1024, messages: USER, stream: true });
    const types: string[] = [];
    let text = "";
    let delta: Anthropic.MessageDeltaUsage | undefined;
    let start: Anthropic.Usage | undefined;
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === "message_start") start = e.message.usage;
      if (e.type === "content_block_delta" && e.delta.type === "text_delta") text += e.delta.text;
      if (e.type === "message_delta") delta = e.usage;
    }
    // The SDK gives ping to nobody (it skips it), so it is not among the events read.
    expect(types[0]).toBe("message_start");
    expect(types.slice(1, 2)).toEqual(["content_block_start"]);
    expect(types.slice(-3)).toEqual(["content_block_stop", "message_delta", "message_stop"]);
    expect(text).toBe(fake.options.text);
    const a = last(fake.answered);
    expect(start?.input_tokens).toBe(a.counts?.input);
    expect(start?.cache_read_input_tokens).toBe(5);
    expect(start?.output_tokens).toBe(1);
    expect(delta?.output_tokens).toBe(a.counts?.output);
    expect(a).toMatchObject({ stream: true, completed: true, usageSent: true });
  });

  it("SYS-7 messages.stream and finalMessage(): the whole message and its usage, and a streamed max_tokens cut", async () => {
    const s = anthropic.messages.stream({ model: "claude-sonnet-4-5", max_tokens: 8, messages: USER });
    let streamed = "";
    s.on("text", (t) => {
      streamed += t;
    });
    const m = await s.finalMessage();
    expect(m.stop_reason).toBe("max_tokens");
    expect(m.usage.output_tokens).toBe(8);
    expect(m.content[0]?.type === "text" && m.content[0].text).toBe(streamed);
    expect(streamed).toBe(last(fake.answered).text);
  });

  it("SYS-7 models.list reads Anthropic's list when anthropic-version is sent", async () => {
    const ids: string[] = [];
    for await (const m of anthropic.models.list()) ids.push(m.id);
    expect(ids).toContain("claude-sonnet-4-5-20250929");
  });

  it("SYS-7 a wrong key raises AuthenticationError (401, authentication_error)", async () => {
    const bad = new Anthropic({ baseURL: fake.url, apiKey: "sk-ant-wrong", maxRetries: 0 });
    const err = await bad.messages.create({ model: "claude-sonnet-4-5", max_tokens: 10, messages: USER }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((err as InstanceType<typeof Anthropic.APIError>).status).toBe(401);
    expect(JSON.stringify((err as InstanceType<typeof Anthropic.APIError>).error)).toContain("authentication_error");
  });

  it("SYS-7 failNext 529 raises OverloadedError and 500 InternalServerError, streamed or not, in Anthropic's shape", async () => {
    fake.failNext(529);
    fake.failNext(500);
    const over = await anthropic.messages.create({ model: "claude-sonnet-4-5", max_tokens: 10, messages: USER }).catch((e: unknown) => e);
    expect(over).toBeInstanceOf(Anthropic.OverloadedError);
    expect(JSON.stringify((over as InstanceType<typeof Anthropic.APIError>).error)).toContain("overloaded_error");
    const five = await anthropic.messages.stream({ model: "claude-sonnet-4-5", max_tokens: 10, messages: USER }).finalMessage().catch((e: unknown) => e);
    expect(five).toBeInstanceOf(Anthropic.InternalServerError);
    expect((five as InstanceType<typeof Anthropic.APIError>).status).toBe(500);
    expect(fake.answered.slice(-2).map((a) => a.status)).toEqual([529, 500]);
  });

  it("SYS-7 a request without max_tokens is a 400 invalid_request_error", async () => {
    const err = await anthropic.messages.create({ model: "claude-sonnet-4-5", messages: USER } as unknown as Anthropic.MessageCreateParamsNonStreaming).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(String((err as Error).message)).toContain("max_tokens");
  });
});

describe("the fake provider's raw streams read by the gateway's StreamUsage", () => {
  /** The stream's bytes, as they came off the socket. */
  async function rawStream(path: string, headers: Record<string, string>, body: unknown): Promise<Uint8Array[]> {
    const res = await fetch(`${fake.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    const out: Uint8Array[] = [];
    for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) out.push(c);
    return out;
  }

  /** Fed in pieces of 7 bytes, so lines and characters are cut anywhere. */
  function feed(provider: "openai" | "anthropic", chunks: readonly Uint8Array[]): StreamUsage {
    const s = new StreamUsage(provider);
    const all = Buffer.concat(chunks);
    const events = [];
    for (let i = 0; i < all.length; i += 7) events.push(...s.push(all.subarray(i, i + 7)));
    events.push(...s.end());
    expect(events.length).toBeGreaterThan(3);
    return s;
  }

  it("SYS-7 OpenAI with include_usage: the usage read is the one answered, the usage-only chunk the last before [DONE]", async () => {
    fake.configure({ text: "Déploiement terminé — tout va bien. 部署完成。", cachedTokens: 3 });
    const chunks = await rawStream("/v1/chat/completions", { authorization: "Bearer sk-test-openai" }, { model: "gpt-4o", messages: MESSAGES, stream: true, stream_options: { include_usage: true } });
    const s = feed("openai", chunks);
    expect(s.complete).toBe(true);
    expect(s.providerUsage).toEqual(last(fake.answered).counts);
    expect(s.settle(0)).toEqual({ usage: last(fake.answered).counts, source: "provider" });
  });

  it("SYS-7 OpenAI without include_usage: no usage in the stream, so it settles by the estimate of what was streamed", async () => {
    const chunks = await rawStream("/v1/chat/completions", { authorization: "Bearer sk-test-openai" }, { model: "gpt-4o", messages: MESSAGES, stream: true });
    const s = feed("openai", chunks);
    expect(s.providerUsage).toBeNull();
    const settled = s.settle(40);
    expect(settled.source).toBe("estimate");
    expect(settled.usage.input).toBe(40);
    expect(settled.usage.output).toBeGreaterThan(0);
  });

  it("SYS-7 Anthropic: message_start's and message_delta's counts read as answered, cache read and write included", async () => {
    fake.configure({ cacheReadTokens: 11, cacheWriteTokens: 2 });
    const chunks = await rawStream("/v1/messages", { "x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01" }, { model: "claude-sonnet-4-5", max_tokens: 300, messages: [{ role: "user", content: "Status?" }], stream: true });
    const s = feed("anthropic", chunks);
    expect(s.complete).toBe(true);
    expect(s.providerUsage).toEqual(last(fake.answered).counts);
    expect(last(fake.answered).counts).toMatchObject({ cacheRead: 11, cacheWrite: 2 });
  });

  it("SYS-7 cutNextStream breaks the next stream off mid-answer: the SDK raises, StreamUsage settles it by the estimate, the stream after it is whole", async () => {
    fake.cutNextStream(6);
    const s = await openai.chat.completions.create({ model: "gpt-4o", messages: MESSAGES, stream: true, stream_options: { include_usage: true } });
    let text = "";
    const err = await (async () => {
      for await (const c of s) text += c.choices[0]?.delta.content ?? "";
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(text.length).toBeGreaterThan(0);
    expect(last(fake.answered)).toMatchObject({ completed: false, usageSent: false });
    expect(last(fake.answered).sent).toBe(text);

    fake.cutNextStream(4);
    const res = await fetch(`${fake.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01" }, body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 300, messages: [{ role: "user", content: "Status?" }], stream: true }) });
    const reader = new StreamUsage("anthropic");
    await (async () => {
      for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) reader.push(c);
    })().catch(() => undefined);
    reader.end();
    const a = last(fake.answered);
    expect(reader.complete).toBe(false);
    const settled = reader.settle(999);
    // message_start came before the cut: its input counts stand, the output is what was streamed.
    expect(settled).toMatchObject({ source: "estimate", usage: { input: a.counts?.input } });
    expect(settled.usage.output).toBeGreaterThan(0);
    expect(settled.usage.output).toBeLessThan(a.counts?.output ?? 0);

    const whole = await openai.chat.completions.create({ model: "gpt-4o", messages: MESSAGES, stream: true });
    let all = "";
    for await (const c of whole) all += c.choices[0]?.delta.content ?? "";
    expect(all).toBe(fake.options.text);
  });

  it("SYS-7 a client that leaves mid-stream: the fake records the stream as not completed and what was sent so far", async () => {
    fake.configure({ chunkDelayMs: 5 });
    try {
      const ac = new AbortController();
      const res = await fetch(`${fake.url}/v1/messages`, { method: "POST", signal: ac.signal, headers: { "content-type": "application/json", "x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01" }, body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 300, messages: [{ role: "user", content: "Status?" }], stream: true }) });
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      let got = "";
      while (!got.includes("content_block_delta")) got += Buffer.from((await reader.read()).value ?? new Uint8Array()).toString("utf8");
      ac.abort();
      await new Promise((r) => setTimeout(r, 100));
      const a = last(fake.answered);
      expect(a.completed).toBe(false);
      expect(a.usageSent).toBe(false);
      expect(a.sent.length).toBeGreaterThan(0);
      expect(a.sent.length).toBeLessThan(a.text.length);
    } finally {
      fake.configure({ chunkDelayMs: 0 });
    }
  });
});
