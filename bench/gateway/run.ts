/**
 * The model gateway's overhead: a model call through `oz0 gateway` (decided by the pipeline's
 * limits-model-calls before it is forwarded, its usage published to settle it) against the same
 * upstream called directly, side by side in one run, with the official `openai` and
 * `@anthropic-ai/sdk` clients as the agent. The upstream is the fake provider of the tests
 * (test/support/fake-provider.ts: realistic bodies, streams and usage, answering at once unless
 * --delay-ms), so what is measured is what the gateway adds, not a model's time.
 *
 *   npx tsx bench/gateway/run.ts [--calls 100] [--rounds 3] [--flight 1,16] [--providers openai,anthropic] [--delay-ms 0] [--max-seconds 300] [--out FILE]
 *
 * For each provider: non-streamed calls at each number in flight (the time until the SDK has
 * the whole answer), and streamed calls one at a time (the time to the first token: the first
 * text delta the SDK yields). Rounds alternate the two sides, so the machine's noise falls on
 * both. The pipeline of `npm start` and the gateway run in this process (as `npm start` serves
 * them), on consumer groups of their own; the calls are made by one job of the bench's own
 * tenant, with a key bound to it in Redis (the gateway's real key store). Every answer through
 * the gateway is checked against the direct one (the same text), so a refusal or an error
 * fails the run. Bounded: --calls a round, --rounds, and --max-seconds for the whole run.
 * Writes the table to stdout and bench/out/gateway.md (or --out).
 */
import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import Anthropic from "@anthropic-ai/sdk";
import kafkajs from "kafkajs";
import OpenAI from "openai";
import { startPipeline } from "../../topology/run.ts";
import { servicesForCommand } from "../../topology/services.ts";
import { startGateway, type GatewayRuntime } from "../../client/gateway/server.ts";
import { RuntimeClient } from "../../client/runtime-client.ts";
import { kafkaConfig } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { Serde } from "../../schemas/serde.ts";
import type { JobEvent } from "../../schemas/types.ts";
import type { KeyStore } from "../../client/gateway/store.ts";
import { redisKeyStore } from "../../client/gateway/redis-store.ts";
import { redisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { startFakeProvider } from "../../test/support/fake-provider.ts";
import { publishLoadConfig } from "../load/publish-config.ts";
import { untilReady } from "../load/run.ts";
import { fmt, latency, ratio, type Latency } from "../load/stats.ts";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "100" },
    rounds: { type: "string", default: "3" },
    flight: { type: "string", default: "1,16" },
    providers: { type: "string", default: "openai,anthropic" },
    "delay-ms": { type: "string", default: "0" },
    "max-seconds": { type: "string", default: "300" },
    out: { type: "string" },
  },
});
const CALLS = Number(values.calls);
const ROUNDS = Number(values.rounds);
const FLIGHTS = values.flight.split(",").map(Number);
const PROVIDERS = values.providers.split(",").map((p) => p.trim());
const DELAY_MS = Number(values["delay-ms"]);
const MAX_SECONDS = Number(values["max-seconds"]);
const whole = (n: number, min: number) => Number.isInteger(n) && n >= min;
if (!(whole(CALLS, 1) && whole(ROUNDS, 1) && FLIGHTS.every((f) => whole(f, 1)) && whole(DELAY_MS, 0) && whole(MAX_SECONDS, 1) && PROVIDERS.length > 0 && PROVIDERS.every((p) => p === "openai" || p === "anthropic"))) {
  process.stderr.write("usage: npx tsx bench/gateway/run.ts [--calls N] [--rounds N] [--flight 1,16] [--providers openai,anthropic] [--delay-ms N] [--max-seconds N] [--out FILE]: whole numbers (calls, rounds, flight, max-seconds above 0), providers among openai and anthropic\n");
  process.exit(2);
}
type ProviderName = "openai" | "anthropic";
const CONFIG_DIR = fileURLToPath(new URL("./config/", import.meta.url));
const AGENT = "bench-gateway";
const MODELS: Record<ProviderName, string> = { openai: "gpt-4o", anthropic: "claude-sonnet-4-5" };
const SYSTEM = "You are the deploy assistant of the payments team. Answer in three sentences.";
const OUTPUT_CAP = 200;

/** One side's clients: the SDKs pointed at the gateway or at the upstream itself. */
interface Side {
  readonly openai: OpenAI;
  readonly anthropic: Anthropic;
}

/** One non-streamed call with its own question; its answer's text. */
async function call(side: Side, p: ProviderName, question: string): Promise<string> {
  if (p === "openai") {
    const r = await side.openai.chat.completions.create({ model: MODELS.openai, messages: [{ role: "system", content: SYSTEM }, { role: "user", content: question }], max_completion_tokens: OUTPUT_CAP });
    return r.choices[0]?.message.content ?? "";
  }
  const r = await side.anthropic.messages.create({ model: MODELS.anthropic, max_tokens: OUTPUT_CAP, system: SYSTEM, messages: [{ role: "user", content: question }] });
  return r.content.map((b) => (b.type === "text" ? b.text : "")).join("");
}

/** One streamed call: the time to its first text delta and its whole text. */
async function streamed(side: Side, p: ProviderName, question: string): Promise<{ ttft: number; text: string }> {
  const t0 = performance.now();
  let ttft = NaN;
  let text = "";
  if (p === "openai") {
    const s = await side.openai.chat.completions.create({ model: MODELS.openai, messages: [{ role: "system", content: SYSTEM }, { role: "user", content: question }], max_completion_tokens: OUTPUT_CAP, stream: true, stream_options: { include_usage: true } });
    for await (const c of s) {
      const d = c.choices[0]?.delta.content;
      if (d) {
        if (Number.isNaN(ttft)) ttft = performance.now() - t0;
        text += d;
      }
    }
  } else {
    const s = await side.anthropic.messages.create({ model: MODELS.anthropic, max_tokens: OUTPUT_CAP, system: SYSTEM, messages: [{ role: "user", content: question }], stream: true });
    for await (const e of s) {
      if (e.type === "content_block_delta" && e.delta.type === "text_delta") {
        if (Number.isNaN(ttft)) ttft = performance.now() - t0;
        text += e.delta.text;
      }
    }
  }
  return { ttft, text };
}

/** `calls` calls, `flight` at a time: the wall time of each (or the time to first token). */
async function play(side: Side, p: ProviderName, calls: number, flight: number, stream: boolean, tag: string, expected: string): Promise<number[]> {
  const times: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < calls) {
      const i = next++;
      const question = `Did the deployment ${tag}-${i} of payments-api finish, and what is left to do?`;
      const t0 = performance.now();
      if (stream) {
        const r = await streamed(side, p, question);
        if (r.text !== expected) throw new Error(`streamed call ${i} of ${tag} answered ${JSON.stringify(r.text.slice(0, 120))}, not the upstream's text`);
        times.push(r.ttft);
      } else {
        const text = await call(side, p, question);
        const took = performance.now() - t0;
        if (text !== expected) throw new Error(`call ${i} of ${tag} answered ${JSON.stringify(text.slice(0, 120))}, not the upstream's text`);
        times.push(took);
      }
    }
  };
  await Promise.all(Array.from({ length: flight }, worker));
  return times;
}

interface Row {
  readonly provider: ProviderName;
  readonly what: string;
  readonly flight: number;
  readonly direct: Latency;
  readonly gateway: Latency;
  /** The gateway's ask to limits-model-calls until its decision. */
  readonly decide: Latency;
  /** The gateway's publish of the usage that settles the call. */
  readonly settle: Latency;
  /** The gateway's look-up of the key in Redis. */
  readonly key: Latency;
}

function startedEvent(tenant: string, job: string, kind: "started" | "ended"): JobEvent {
  return {
    id: randomUUID(),
    tenant,
    tree_id: job,
    job_id: job,
    parent_job_id: null,
    run_id: `${job}-run`,
    agent: AGENT,
    kind,
    started_by: "person",
    delegation: "none",
    depth: 0,
    outcome: kind === "ended" ? "completed" : null,
    principal: "bench",
    team: null,
    permissions: [],
    files: [],
    chosen_tree_id: false,
    conversation_id: null,
    previous_turn: null,
    session: false,
    ts: Date.now(),
  };
}

async function main(): Promise<void> {
  const started = Date.now();
  const log = createLogger({ bench: "gateway" }, () => {});
  const e = await servicesForCommand();
  const run = randomUUID().slice(0, 8);
  const tenant = `bench-gateway-${run}`;
  const job = `bench-gw-${run}`;
  const kafka = new kafkajs.Kafka({ ...kafkaConfig(`oz0-bench-gateway-${run}`, e, process.env, log), logLevel: kafkajs.logLevel.ERROR });
  const serde = new Serde({ registryUrl: e.registryUrl });
  await serde.registerAll();
  await publishLoadConfig(kafka, serde, log, { dir: CONFIG_DIR, reason: "the model gateway's bench" });
  const pipeline = await startPipeline(e, log, { ops: { host: "127.0.0.1", port: 0 }, groupPrefix: `oz0.bench-gateway-${run}.`, startAt: "end", retention: "off" });
  await untilReady(pipeline, 120_000);

  const fake = await startFakeProvider({ openaiKey: `sk-bench-${run}`, anthropicKey: `sk-ant-bench-${run}`, delayMs: DELAY_MS });
  const runtime = await RuntimeClient.connect(e, { log, listen: ["admission"] });
  const redis = redisClient(e);
  const keys = redisKeyStore(redis, new Keys());
  // The gateway's exchanges with the pipeline, timed: where the added latency goes.
  const timed = { decide: [] as number[], settle: [] as number[], key: [] as number[] };
  const clockedKeys: KeyStore = {
    ...keys,
    check: async (key, now) => {
      const t0 = performance.now();
      try {
        return await keys.check(key, now);
      } finally {
        timed.key.push(performance.now() - t0);
      }
    },
  };
  const clocked: GatewayRuntime = {
    askModelCall: async (ask, timeoutMs) => {
      const t0 = performance.now();
      try {
        return await runtime.askModelCall(ask, timeoutMs);
      } finally {
        timed.decide.push(performance.now() - t0);
      }
    },
    awaitAdmission: (id, timeoutMs) => runtime.awaitAdmission(id, timeoutMs),
    publishModelCalls: async (calls) => {
      const t0 = performance.now();
      try {
        await runtime.publishModelCalls(calls);
      } finally {
        timed.settle.push(performance.now() - t0);
      }
    },
  };
  const gateway = await startGateway({ host: "127.0.0.1", port: 0, upstreams: { openai: `${fake.url}/v1`, anthropic: fake.url }, credentials: { openai: `sk-bench-${run}`, anthropic: `sk-ant-bench-${run}` }, keys: clockedKeys, runtime: clocked, log });
  const made = await keys.create({ tenant, agent: AGENT, tree_id: job, job_id: job, run_id: `${job}-run`, created_by: "bench", expires_at: Date.now() + (MAX_SECONDS + 600) * 1000 }, Date.now());
  await runtime.publishJobEvents([startedEvent(tenant, job, "started")]);

  const opts = { maxRetries: 0, timeout: 60_000 };
  const direct: Side = { openai: new OpenAI({ ...opts, baseURL: `${fake.url}/v1`, apiKey: `sk-bench-${run}` }), anthropic: new Anthropic({ ...opts, baseURL: fake.url, apiKey: `sk-ant-bench-${run}` }) };
  const through: Side = { openai: new OpenAI({ ...opts, baseURL: `${gateway.url}/v1`, apiKey: made.key }), anthropic: new Anthropic({ ...opts, baseURL: gateway.url, apiKey: made.key }) };
  const expected = fake.options.text;

  const deadline = setTimeout(() => {
    process.stderr.write(`bench/gateway: past --max-seconds ${MAX_SECONDS}; stopped\n`);
    process.exit(1);
  }, MAX_SECONDS * 1000);
  deadline.unref();

  const rows: Row[] = [];
  let gatewayCalls = 0;
  try {
    for (const p of PROVIDERS as ProviderName[]) {
      // A warm-up on each side, streamed and not: the first calls pay for connections, compilation, the job's first decisions.
      for (const side of [direct, through]) {
        await play(side, p, 20, 1, false, `warm-${p}`, expected);
        await play(side, p, 5, 1, true, `warm-s-${p}`, expected);
      }
      gatewayCalls += 25;
      const measure = async (what: string, flight: number, stream: boolean): Promise<void> => {
        const d: number[] = [];
        const g: number[] = [];
        const decide: number[] = [];
        const settle: number[] = [];
        const key: number[] = [];
        for (let r = 0; r < ROUNDS; r++) {
          d.push(...(await play(direct, p, CALLS, flight, stream, `d-${p}-${what}-${flight}-${r}`, expected)));
          timed.decide = [];
          timed.settle = [];
          timed.key = [];
          g.push(...(await play(through, p, CALLS, flight, stream, `g-${p}-${what}-${flight}-${r}`, expected)));
          decide.push(...timed.decide);
          settle.push(...timed.settle);
          key.push(...timed.key);
          gatewayCalls += CALLS;
        }
        rows.push({ provider: p, what, flight, direct: latency(d), gateway: latency(g), decide: latency(decide), settle: latency(settle), key: latency(key) });
      };
      for (const flight of FLIGHTS) await measure("whole answer", flight, false);
      await measure("first token (streamed)", 1, true);
    }
  } finally {
    await runtime.publishJobEvents([startedEvent(tenant, job, "ended")]).catch(() => undefined);
    await keys.revokeJob(tenant, job, "bench", Date.now()).catch(() => undefined);
    await gateway.close().catch(() => undefined);
    await runtime.close().catch(() => undefined);
    redis.disconnect();
    await fake.close();
    await pipeline.stop().catch(() => undefined);
    const admin = pipeline.kafka.admin();
    await admin.connect().then(() => admin.deleteGroups([...pipeline.groups.values()]).catch(() => undefined), () => undefined);
    await admin.disconnect().catch(() => undefined);
  }

  const lines = [
    `# Model gateway: calls through oz0 gateway against the same upstream directly`,
    "",
    `The fake provider (answer ${DELAY_MS} ms after the request); the official openai and @anthropic-ai/sdk clients; ${CALLS} calls a round, ${ROUNDS} rounds a side, alternating; ${gatewayCalls} calls through the gateway, all answered; ${Math.round((Date.now() - started) / 1000)} s; ${new Date().toISOString()}`,
    "",
    "| provider | measured | in flight | direct p50 (ms) | direct p99 (ms) | gateway p50 (ms) | gateway p99 (ms) | added p50 (ms) | added p99 (ms) | p50 ratio |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map(
      (r) =>
        `| ${r.provider} | ${r.what} | ${r.flight} | ${fmt(r.direct.p50, 1)} | ${fmt(r.direct.p99, 1)} | ${fmt(r.gateway.p50, 1)} | ${fmt(r.gateway.p99, 1)} | ${fmt(r.gateway.p50 - r.direct.p50, 1)} | ${fmt(r.gateway.p99 - r.direct.p99, 1)} | ${ratio(r.gateway.p50, r.direct.p50)} |`,
    ),
    "",
    "Inside the gateway's calls (the same rows): its look-up of the key in Redis, its ask to limits-model-calls until the decision came, and its publish of the usage that settles the call.",
    "",
    "| provider | measured | in flight | key p50 (ms) | decision p50 (ms) | decision p99 (ms) | usage publish p50 (ms) | usage publish p99 (ms) |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map((r) => `| ${r.provider} | ${r.what} | ${r.flight} | ${fmt(r.key.p50, 1)} | ${fmt(r.decide.p50, 1)} | ${fmt(r.decide.p99, 1)} | ${fmt(r.settle.p50, 1)} | ${fmt(r.settle.p99, 1)} |`),
    "",
  ];
  const text = lines.join("\n");
  process.stdout.write(text);
  const out = values.out ?? fileURLToPath(new URL("../out/gateway.md", import.meta.url));
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, text);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench/gateway: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
