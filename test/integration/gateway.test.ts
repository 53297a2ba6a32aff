/**
 * The model gateway on the real stack, with the official `openai` and `@anthropic-ai/sdk`
 * clients as the agent (LIM-1, LIM-2, LIM-7, LIM-10): each call is decided by limits-model-calls
 * before the provider sees it, a refusal is the SDK's ordinary error with status 402 and the
 * seed's code, and the provider's usage settles the tree's spend to the micro-dollar.
 *
 * No provider is reachable here: the upstream is `test/support/fake-provider.ts`, which answers
 * as the providers' APIs do (bodies, streams, usage). The pipeline's groups are this file's own
 * and start at their inputs' end; the agents and the tenant are `test/fixtures/gateway-config/`.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pipeline } from "../../topology/run.ts";
import { startGateway, type Gateway } from "../../client/gateway/server.ts";
import type { KeyBinding } from "../../client/gateway/keys.ts";
import { RuntimeClient } from "../../client/runtime-client.ts";
import { costMicros, type TokenCounts } from "../../processors/limits/money.ts";
import { DEFAULT_PRICES, priceOf } from "../../processors/limits/prices.ts";
import { redisLimitsStore } from "../../processors/limits/redis-store.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { redisKeyStore } from "../../client/gateway/redis-store.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { jobEvent, uid } from "../support/events.ts";
import { startFakeProvider, type FakeProvider } from "../support/fake-provider.ts";
import { endpoints } from "../support/kafka.ts";
import { oz0 } from "../support/oz0.ts";
import { startTestPipeline, stopTestPipeline } from "../support/pipeline.ts";
import { rejectionOf, until } from "../support/promises.ts";

const CONFIG_DIR = fileURLToPath(new URL("../fixtures/gateway-config/", import.meta.url));
/** A dated snapshot, priced as its model (docs/limits.md, "Prices"). */
const OPENAI_MODEL = "gpt-4o-mini-2024-07-18";
const ANTHROPIC_MODEL = "claude-sonnet-4";
/** The model the budgets of test/fixtures/gateway-config/ are sized for: 280 output tokens' worst case fits them once. */
const BUDGET_MODEL = "claude-sonnet-4";
const OPENAI_KEY = "sk-fake-openai-0000";
const ANTHROPIC_KEY = "sk-ant-fake-0000";

let pipeline: Pipeline | undefined;
let runtime: RuntimeClient;
let gateway: Gateway;
let provider: FakeProvider;
let redis: RedisClient;
const keys = new Keys();
const lines: string[] = [];
const seen: string[] = [];

interface Job {
  readonly tenant: string;
  readonly tree: string;
  readonly key: string;
  readonly binding: KeyBinding;
}

/** A root job of `agent` started (and seen by the limits), and a key bound to it. */
async function job(agent: string, over: { tenant?: string; person?: boolean } = {}): Promise<Job> {
  const tenant = over.tenant ?? uid("gw-tenant");
  const tree = uid("gw-tree");
  await runtime.publishJobEvents([
    jobEvent(tree, "started", { tenant, run_id: `${tree}-run`, agent, started_by: over.person ? "person" : "app", principal: over.person ? "pat" : "gw-app" }),
  ]);
  const limits = redisLimitsStore(redis, keys);
  await until(`the start of ${tree}`, async () => (await limits.spent(tenant, tree)) !== null);
  const made = await redisKeyStore(redis, keys).create({ tenant, agent, tree_id: tree, job_id: tree, run_id: `${tree}-run`, created_by: "gateway-test", expires_at: Date.now() + 3_600_000 }, Date.now());
  return { tenant, tree, key: made.key, binding: made.binding };
}

const openai = (key: string) => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 120_000 });
const anthropic = (key: string) => new Anthropic({ baseURL: gateway.url, apiKey: key, maxRetries: 0, timeout: 120_000 });

function cost(model: string, c: TokenCounts): number {
  return costMicros(priceOf(DEFAULT_PRICES, model).price, c);
}

/** The tree's settled spend once it is `micros` (the usage is settled after the answer). */
async function spentReaches(j: Job, micros: number): Promise<number> {
  const limits = redisLimitsStore(redis, keys);
  let last = -1;
  await until(`tree ${j.tree} to have spent ${micros} micro-dollars`, async () => (last = (await limits.spent(j.tenant, j.tree)) ?? -1) === micros, 30_000).catch(() => undefined);
  return last;
}

async function reserved(j: Job): Promise<number> {
  return Number((await redis.hget(keys.limits(j.tenant, j.tree), "reserved")) ?? 0);
}

/** The error a call raises (it must raise one), as the SDKs shape it. */
const raised = async (p: Promise<unknown>) => (await rejectionOf(p)) as { status?: number; code?: string; type?: string; message: string; error?: unknown };

beforeAll(async () => {
  const log = createLogger({ test: "gateway" }, (l) => lines.push(l));
  pipeline = await startTestPipeline(uid("gw"), CONFIG_DIR, "gateway test agents", log);
  redis = redisClient(endpoints());
  runtime = await RuntimeClient.connect(endpoints(), { log, listen: ["admission"], timeoutMs: 60_000 });
  provider = await startFakeProvider({ openaiKey: OPENAI_KEY, anthropicKey: ANTHROPIC_KEY });
  gateway = await startGateway({
    host: "127.0.0.1",
    port: 0,
    upstreams: { openai: `${provider.url}/v1`, anthropic: provider.url },
    credentials: { openai: OPENAI_KEY, anthropic: ANTHROPIC_KEY },
    keys: redisKeyStore(redis, keys),
    runtime,
    log,
  });
}, 240_000);

afterAll(async () => {
  await gateway?.close();
  await provider?.close();
  await runtime?.close();
  redis?.disconnect();
  await stopTestPipeline(pipeline);
});

describe("oz0 gateway: the official SDKs' model calls held to their job", () => {
  it("LIM-1 OpenAI, not streamed: answered as the provider answered, with the provider's key; the tree spent the usage at the model's price, to the micro-dollar", async () => {
    const j = await job("gw-plain");
    const res = await openai(j.key).chat.completions.create({ model: OPENAI_MODEL, messages: [{ role: "user", content: "How did the deployment go?" }], max_tokens: 300 });
    seen.push(JSON.stringify(res));
    const answered = provider.answered.at(-1);
    expect(res.choices[0]?.message.content).toBe(answered?.text);
    expect(res.usage).toMatchObject(answered?.usage ?? {});
    const upstream = provider.requests.at(-1);
    expect(upstream?.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(JSON.stringify(upstream?.headers)).not.toContain(j.key);
    expect(await spentReaches(j, cost(OPENAI_MODEL, answered?.counts as TokenCounts))).toBe(cost(OPENAI_MODEL, answered?.counts as TokenCounts));
    expect(await reserved(j)).toBe(0);
  });

  it("LIM-1 OpenAI, streamed without usage asked: the client gets the chunks and no usage chunk; the gateway asked for it and the tree spent it exactly", async () => {
    const j = await job("gw-plain");
    const stream = await openai(j.key).chat.completions.create({ model: OPENAI_MODEL, messages: [{ role: "user", content: "Stream me the status." }], stream: true });
    let text = "";
    let usageChunks = 0;
    for await (const chunk of stream) {
      seen.push(JSON.stringify(chunk));
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) usageChunks++;
    }
    const answered = provider.answered.at(-1);
    expect(text).toBe(answered?.text);
    expect(usageChunks).toBe(0);
    // Asked with the agent's max_output_tokens (400) as the cap, and for its usage.
    expect(provider.requests.at(-1)?.body).toMatchObject({ max_completion_tokens: 400, stream_options: { include_usage: true } });
    const want = cost(OPENAI_MODEL, answered?.counts as TokenCounts);
    expect(await spentReaches(j, want)).toBe(want);
  });

  it("LIM-1 Anthropic, not streamed and streamed: both answered; the tree spent both usages exactly", async () => {
    const j = await job("gw-plain");
    const client = anthropic(j.key);
    const one = await client.messages.create({ model: ANTHROPIC_MODEL, max_tokens: 300, messages: [{ role: "user", content: "Summarise the deployment." }] });
    seen.push(JSON.stringify(one));
    const first = provider.answered.at(-1);
    expect(one.content[0]).toMatchObject({ type: "text", text: first?.text });
    expect(provider.requests.at(-1)?.headers["x-api-key"]).toBe(ANTHROPIC_KEY);
    const streamed = await client.messages.stream({ model: ANTHROPIC_MODEL, max_tokens: 300, messages: [{ role: "user", content: "And stream it." }] }).finalMessage();
    seen.push(JSON.stringify(streamed));
    const second = provider.answered.at(-1);
    expect(streamed.usage.output_tokens).toBe(second?.counts?.output);
    const want = cost(ANTHROPIC_MODEL, first?.counts as TokenCounts) + cost(ANTHROPIC_MODEL, second?.counts as TokenCounts);
    expect(await spentReaches(j, want)).toBe(want);
  });

  it("LIM-1 a budget held strictly: the second call raises the SDK's error, status 402, BudgetExceeded; the provider never sees it", async () => {
    const j = await job("gw-strict");
    const client = openai(j.key);
    await client.chat.completions.create({ model: BUDGET_MODEL, messages: [{ role: "user", content: "one" }], max_tokens: 280 });
    const before = provider.requests.length;
    const err = await raised(client.chat.completions.create({ model: BUDGET_MODEL, messages: [{ role: "user", content: "two" }], max_tokens: 280 }));
    seen.push(err.message);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect([err.status, err.code, err.type]).toEqual([402, "BudgetExceeded", "insufficient_quota"]);
    expect(err.message).toMatch(/^402 BudgetExceeded: /);
    expect(provider.requests.length).toBe(before);
  });

  it("LIM-1 a budget under reserve: last_call: the call that does not fit goes once, the next raises 402 BudgetExceeded (Anthropic's billing_error)", async () => {
    const j = await job("gw-last");
    const client = anthropic(j.key);
    const ask = (content: string) => client.messages.create({ model: ANTHROPIC_MODEL, max_tokens: 280, messages: [{ role: "user", content }] });
    await ask("one");
    await ask("two, the last call");
    const err = await raised(ask("three"));
    seen.push(err.message);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.status).toBe(402);
    const body = err.error as { type?: string; error?: { type?: string; message?: string } };
    expect([body.type, body.error?.type]).toEqual(["error", "billing_error"]);
    expect(body.error?.message).toMatch(/^BudgetExceeded: /);
  });

  it("LIM-2 a tree's model_calls: the third call is 402 oz0_tree_limit", async () => {
    const j = await job("gw-calls");
    const client = openai(j.key);
    const ask = () => client.chat.completions.create({ model: OPENAI_MODEL, messages: [{ role: "user", content: "again" }], max_tokens: 50 });
    await ask();
    await ask();
    const err = await raised(ask());
    expect([err.status, err.code]).toEqual([402, "oz0_tree_limit"]);
  });

  it("LIM-10 a tenant whose month is spent: every call is 402 BudgetExceeded", async () => {
    const j = await job("gw-plain", { tenant: "gw-spent" });
    const err = await raised(openai(j.key).chat.completions.create({ model: BUDGET_MODEL, messages: [{ role: "user", content: "anything" }], max_tokens: 200 }));
    expect([err.status, err.code]).toEqual([402, "BudgetExceeded"]);
    expect(err.message).toMatch(/month/i);
  });

  it("LIM-7 a call past the budget waits for a person; oz0 approval approve --budget lets it through, and the SDK gets its answer", async () => {
    const j = await job("gw-waiter", { person: true });
    const client = openai(j.key);
    await client.chat.completions.create({ model: BUDGET_MODEL, messages: [{ role: "user", content: "one" }], max_tokens: 280 });
    const held = client.chat.completions.create({ model: BUDGET_MODEL, messages: [{ role: "user", content: "two" }], max_tokens: 280 });
    let approval = "";
    await until("the budget request to be listed", async () => {
      const list = await oz0(["approval", "list", "--kind", "budget", "--tenant", j.tenant, "--json"]);
      const found = (JSON.parse(list.out || "[]") as Array<{ approval?: string; id?: string; job_id?: string }>).find((r) => r.job_id === j.tree);
      approval = found?.approval ?? found?.id ?? "";
      return approval !== "";
    });
    const before = provider.requests.length;
    const yes = await oz0(["approval", "approve", j.tree, approval, "--budget", "1", "--as", "pat"]);
    expect(yes.code, yes.err).toBe(0);
    const res = await held;
    expect(res.choices[0]?.message.content).toBe(provider.answered.at(-1)?.text);
    expect(provider.requests.length).toBe(before + 1);
  });

  it("LIM-1 a stream the client cuts is charged for what was streamed: more than nothing, less than the whole answer", async () => {
    const j = await job("gw-plain");
    provider.configure({ chunkDelayMs: 40 });
    try {
      const stream = await openai(j.key).chat.completions.create({ model: ANTHROPIC_MODEL, messages: [{ role: "user", content: "Stream slowly." }], stream: true, max_tokens: 300 });
      let chunks = 0;
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) chunks++;
        if (chunks === 4) {
          stream.controller.abort();
          break;
        }
      }
    } finally {
      provider.configure({ chunkDelayMs: 0 });
    }
    const answered = provider.answered.at(-1);
    const whole = cost(ANTHROPIC_MODEL, answered?.counts as TokenCounts);
    const limits = redisLimitsStore(redis, keys);
    let spent = 0;
    await until("the cut stream to be settled", async () => (spent = (await limits.spent(j.tenant, j.tree)) ?? 0) > 0);
    expect(spent).toBeLessThan(whole);
    expect(spent).toBeGreaterThan(cost(ANTHROPIC_MODEL, { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 }));
    expect(await reserved(j)).toBe(0);
  });

  it("LIM-7 a model nobody priced is held to the table's highest prices, and the answer says so", async () => {
    const j = await job("gw-plain");
    const { response } = await openai(j.key).chat.completions.create({ model: "house-model-7", messages: [{ role: "user", content: "hi" }], max_tokens: 20 }).withResponse();
    expect(response.headers.get("x-oz0-price")).toMatch(/house-model-7 is not in the price table/);
    const priced = await openai(j.key).chat.completions.create({ model: OPENAI_MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 20 }).withResponse();
    expect(priced.response.headers.get("x-oz0-price")).toBeNull();
  });

  it("LIM-1 a provider's error passes through with its status, and releases the reservation", async () => {
    const j = await job("gw-plain");
    provider.failNext(500);
    const err = await raised(openai(j.key).chat.completions.create({ model: OPENAI_MODEL, messages: [{ role: "user", content: "fail" }], max_tokens: 100 }));
    expect(err.status).toBe(500);
    await until("the reservation to be released", async () => (await reserved(j)) === 0);
    expect(await redisLimitsStore(redis, keys).spent(j.tenant, j.tree)).toBe(0);
  });

  it("an unknown key and a revoked key get 401 from both SDKs; a request without a key too", async () => {
    const j = await job("gw-plain");
    const unknown = await raised(openai("oz0_not-a-key-anyone-made").chat.completions.create({ model: OPENAI_MODEL, messages: [{ role: "user", content: "hi" }] }));
    expect(unknown).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(unknown.code).toBe("invalid_api_key");
    await redisKeyStore(redis, keys).revoke(j.binding.id, "gateway-test", Date.now());
    const revoked = await raised(anthropic(j.key).messages.create({ model: ANTHROPIC_MODEL, max_tokens: 10, messages: [{ role: "user", content: "hi" }] }));
    expect(revoked).toBeInstanceOf(Anthropic.AuthenticationError);
    const body = revoked.error as { error?: { type?: string; message?: string } };
    expect(body.error?.type).toBe("authentication_error");
    expect(body.error?.message).toMatch(/revoked/);
    const bare = await fetch(`${gateway.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(bare.status).toBe(401);
    seen.push(unknown.message, revoked.message, await bare.text());
  });

  it("the providers' keys appear in no log line and no answer; the gateway's metrics count its calls", async () => {
    expect(lines.length).toBeGreaterThan(0);
    expect(seen.length).toBeGreaterThan(5);
    for (const text of [...lines, ...seen]) {
      expect(text).not.toContain(OPENAI_KEY);
      expect(text).not.toContain(ANTHROPIC_KEY);
    }
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(metrics).toMatch(/oz0_gateway_requests_total\{provider="openai",outcome="refused"\} [1-9]/);
    expect(metrics).toMatch(/oz0_gateway_requests_total\{provider="anthropic",outcome="answered"\} [1-9]/);
    expect(metrics).not.toContain(OPENAI_KEY);
  });
});
