/**
 * The model gateway's HTTP handling without the pipeline: the runtime client is replaced by a
 * scripted one that answers each ask with the decision the test sets, so every branch of the
 * server is driven fast (the real pipeline's answers are test/integration/gateway.test.ts).
 * The upstream is the fake provider on loopback; the keys are the memory store.
 */
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { memoryKeyStore } from "../../../client/gateway/memory-store.ts";
import { startGateway, type Gateway, type GatewayRuntime } from "../../../client/gateway/server.ts";
import { NoAnswer } from "../../../client/runtime-client.ts";
import { createLogger } from "../../../processors/runner/log.ts";
import type { Decision, ModelCall } from "../../../schemas/types.ts";
import { startFakeProvider, type FakeProvider } from "../../support/fake-provider.ts";

type Answer = Partial<Decision> | "none";

class ScriptedRuntime implements GatewayRuntime {
  readonly asks: ModelCall[] = [];
  readonly published: ModelCall[] = [];
  answers: Answer[] = [];
  /** What a wait decision's later answer is (by the wait decision's ID); unset: none comes. */
  later: Partial<Decision> | null = null;

  askModelCall(ask: ModelCall): Promise<Decision> {
    this.asks.push(ask);
    const a = this.answers.shift() ?? { verdict: "allow" };
    if (a === "none") return Promise.reject(new NoAnswer("admission", ask.id, 10));
    return Promise.resolve(decision(ask, a));
  }

  awaitAdmission(eventId: string, timeoutMs?: number): Promise<Decision> {
    const later = this.later;
    if (later === null) return new Promise((_, reject) => setTimeout(() => reject(new NoAnswer("admission", eventId, timeoutMs ?? 0)), Math.min(timeoutMs ?? 50, 50)));
    return Promise.resolve({ ...decision(this.asks.at(-1) as ModelCall, later), input_id: eventId });
  }

  publishModelCalls(calls: readonly ModelCall[]): Promise<void> {
    this.published.push(...calls);
    return Promise.resolve();
  }
}

function decision(ask: ModelCall, over: Partial<Decision>): Decision {
  return {
    id: `d-${ask.id}`,
    input_id: ask.id,
    processor: "limits-model-calls",
    tenant: ask.tenant,
    tree_id: ask.tree_id,
    job_id: ask.job_id,
    run_id: ask.run_id,
    subject: ask.request_id,
    verdict: "allow",
    reason_code: null,
    limit: null,
    numbers: {},
    message: "",
    evidence: null,
    ts: Date.now(),
    ...over,
  };
}

const runtime = new ScriptedRuntime();
const keys = memoryKeyStore();
let provider: FakeProvider;
let gateway: Gateway;
let key: string;

beforeAll(async () => {
  provider = await startFakeProvider();
  gateway = await startGateway({
    port: 0,
    upstreams: { openai: `${provider.url}/v1` },
    credentials: { openai: provider.options.openaiKey },
    keys,
    runtime,
    log: createLogger({}, () => undefined),
    decideMs: 10,
    waitMaxMs: 300,
  });
  ({ key } = await keys.create({ tenant: "acme", agent: "acme-reviewer", tree_id: "t1", job_id: "t1", run_id: "t1-run", created_by: "test", expires_at: Date.now() + 60_000 }, Date.now()));
});

afterAll(async () => {
  await gateway.close();
  await provider.close();
});

afterEach(() => {
  runtime.answers = [];
  runtime.later = null;
});

const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${gateway.url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...headers }, body });
const chat = (over: Record<string, unknown> = {}) => JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }], ...over });

describe("oz0 gateway's server, decisions scripted", () => {
  it("LIM-1 the ask carries the key's job, never what the request says; the usage settles the same request ID", async () => {
    const res = await post("/v1/chat/completions", chat({ user: "someone-else", metadata: { job: "other" } }));
    expect(res.status).toBe(200);
    const ask = runtime.asks.at(-1);
    expect(ask).toMatchObject({ kind: "ask", tenant: "acme", agent: "acme-reviewer", tree_id: "t1", job_id: "t1", run_id: "t1-run", model: "gpt-4o-mini", max_output_tokens: null });
    const usage = runtime.published.at(-1);
    expect(usage).toMatchObject({ kind: "usage", request_id: ask?.request_id, job_id: "t1" });
    expect(usage?.output_tokens).toBe(provider.answered.at(-1)?.counts?.output);
  });

  it("LIM-1 the decision's max_output_tokens is the cap forwarded; without one the body goes byte for byte", async () => {
    runtime.answers = [{ verdict: "allow", numbers: { max_output_tokens: 7, asked_output_tokens: 9000 } }];
    await post("/v1/chat/completions", chat({ max_tokens: 9000 }));
    expect(provider.requests.at(-1)?.body).toMatchObject({ max_tokens: 7 });
    const raw = chat({ max_tokens: 50, temperature: 0.25 });
    await post("/v1/chat/completions", raw);
    expect(provider.requests.at(-1)?.raw).toBe(raw);
  });

  it("a body that is not a request is 400 naming the field, and nothing is asked", async () => {
    const before = runtime.asks.length;
    const res = await post("/v1/chat/completions", JSON.stringify({ model: "gpt-4o-mini" }));
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe("messages");
    expect((await post("/v1/chat/completions", "{not json")).status).toBe(400);
    expect(runtime.asks.length).toBe(before);
  });

  it("no decision in time is 503 and the provider is not called; a provider nobody set is 501; an unknown path 404", async () => {
    runtime.answers = ["none"];
    const before = provider.requests.length;
    const res = await post("/v1/chat/completions", chat());
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("oz0_no_decision");
    expect(provider.requests.length).toBe(before);
    const anthropic = await post("/v1/messages", JSON.stringify({ model: "claude-sonnet-4", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }), { "x-api-key": key });
    expect(anthropic.status).toBe(501);
    expect(((await anthropic.json()) as { error: { type: string } }).error.type).toBe("api_error");
    expect((await post("/v1/embeddings", "{}")).status).toBe(404);
  });

  it("LIM-7 a wait nobody answers within the bound is refused 402 with the wait's words; an approved wait asks again and goes through", async () => {
    runtime.answers = [{ verdict: "wait", reason_code: "BudgetExceeded", message: "The tree's budget is spent." }];
    const refused = await post("/v1/chat/completions", chat());
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/^BudgetExceeded: The tree's budget is spent\. Nobody answered/);
    runtime.answers = [{ verdict: "wait", reason_code: "BudgetExceeded" }, { verdict: "allow" }];
    runtime.later = { verdict: "allow", reason_code: "BudgetApproved" };
    const asks = runtime.asks.length;
    const approved = await post("/v1/chat/completions", chat());
    expect(approved.status).toBe(200);
    expect(runtime.asks.length).toBe(asks + 2);
  });

  it("an unreachable upstream is 502 and the reservation is released (a usage of no tokens)", async () => {
    const dead = await startGateway({ port: 0, upstreams: { openai: "http://127.0.0.1:9/v1" }, credentials: {}, keys, runtime, log: createLogger({}, () => undefined) });
    try {
      const res = await fetch(`${dead.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: chat() });
      expect(res.status).toBe(502);
      expect(runtime.published.at(-1)).toMatchObject({ kind: "usage", input_tokens: 0, output_tokens: 0, request_id: runtime.asks.at(-1)?.request_id });
    } finally {
      await dead.close();
    }
  });

  it("GET /v1/models passes through with the provider's key; the official SDK lists them", async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
    const models = await client.models.list();
    expect(models.data.length).toBeGreaterThan(0);
    expect(provider.requests.at(-1)?.headers.authorization).toBe(`Bearer ${provider.options.openaiKey}`);
  });
});
