/**
 * `oz0 run` around an agent written with a provider's official SDK (LIM-1, LIM-7, TOOL-1): a
 * small script with the official `openai` SDK (`test/fixtures/run/agent.mjs`) that calls the
 * model through the gateway until a call is refused, and a tool through `oz0 mcp`, which joins
 * the job from the environment oz0 run gave it. Both are in one job (its trace shows the model
 * calls' admissions and the tool call's decision), the refusal is the SDK's 402 with
 * BudgetExceeded once --budget is spent, the tree spent what the provider's usage costs, and the
 * job ended with the reason.
 *
 * No provider is reachable here: the upstream is `test/support/fake-provider.ts`; the gateway
 * runs in the test's process on a free port, which OZ0_GATEWAY_URL gives oz0 run; the tool server
 * is `test/support/mcp-http-server.ts`. The agent is `test/fixtures/run-agent-config/`.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import kafkajs from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pipeline } from "../../topology/run.ts";
import { startGateway, type Gateway } from "../../client/gateway/server.ts";
import { RuntimeClient } from "../../client/runtime-client.ts";
import { formatTrace } from "../../client/trace-format.ts";
import { scanTrace } from "../../client/trace-scan.ts";
import { costMicros } from "../../processors/limits/money.ts";
import { DEFAULT_PRICES, priceOf } from "../../processors/limits/prices.ts";
import { redisLimitsStore } from "../../processors/limits/redis-store.ts";
import { endpointsEnv, kafkaConfig } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { Serde } from "../../schemas/serde.ts";
import { redisKeyStore } from "../../client/gateway/redis-store.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { uid } from "../support/events.ts";
import { startFakeProvider, type FakeProvider } from "../support/fake-provider.ts";
import { endpoints } from "../support/kafka.ts";
import { startMcpHttpServer, type McpHttpServer } from "../support/mcp-http-server.ts";
import { startTestPipeline, stopTestPipeline } from "../support/pipeline.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const OZ0 = join(ROOT, "bin/oz0.mjs");
const CONFIG_DIR = fileURLToPath(new URL("../fixtures/run-agent-config/", import.meta.url));
const AGENT = fileURLToPath(new URL("../fixtures/run/agent.mjs", import.meta.url));
const MODEL = "gpt-4o";
const OPENAI_KEY = "sk-fake-openai-0000";
const BUDGET_USD = 0.01;

interface Report {
  readonly calls: number;
  readonly answers: string[];
  readonly tool: string | null;
  readonly refused: { status: number; code: string | null; type: string | null; message: string } | null;
}

function oz0Run(args: readonly string[], env: Record<string, string>): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [OZ0, "run", ...args], { cwd: ROOT, env: { ...process.env, ...endpointsEnv(endpoints()), OZ0_LOG_LEVEL: "error", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString("utf8")));
  child.stderr.on("data", (b: Buffer) => (err += b.toString("utf8")));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, out, err }));
  });
}

describe("oz0 run around an agent written with the official openai SDK", () => {
  const log = createLogger({ test: "oz0-run-agent" }, () => {});
  const dir = mkdtempSync(join(tmpdir(), "oz0-run-agent-"));
  const toolCalls: Array<Record<string, unknown>> = [];
  let pipeline: Pipeline | undefined;
  let runtime: RuntimeClient | undefined;
  let gateway: Gateway | undefined;
  let provider: FakeProvider | undefined;
  let tools: McpHttpServer | undefined;
  let redis: RedisClient;
  let manifest: string;

  beforeAll(async () => {
    pipeline = await startTestPipeline(uid("oz0-run-agent"), CONFIG_DIR, "oz0 run agent test", log);
    redis = redisClient(endpoints(), { maxRetriesPerRequest: 3 });
    runtime = await RuntimeClient.connect(endpoints(), { log, listen: ["admission"], timeoutMs: 60_000 });
    provider = await startFakeProvider({ openaiKey: OPENAI_KEY });
    gateway = await startGateway({ host: "127.0.0.1", port: 0, upstreams: { openai: `${provider.url}/v1` }, credentials: { openai: OPENAI_KEY }, keys: redisKeyStore(redis, new Keys()), runtime, log });
    tools = await startMcpHttpServer("run-tools", [{ name: "lookup", description: "Looks a word up.", inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] } }], (_tool, args) => {
      toolCalls.push(args);
      return { content: [{ type: "text", text: `found: ${String(args.q)}` }] };
    });
    manifest = join(dir, "run_tool.yaml");
    writeFileSync(manifest, `name: run_tool\ntools:\n  - id: run_tool\n    mcp: "${tools.url}"\n    results: {fit: false}\n`);
  }, 240_000);

  afterAll(async () => {
    await gateway?.close().catch(() => undefined);
    await provider?.close().catch(() => undefined);
    await tools?.close().catch(() => undefined);
    await runtime?.close().catch(() => undefined);
    redis?.disconnect();
    await stopTestPipeline(pipeline);
  }, 120_000);

  it("LIM-1 LIM-7 TOOL-1 model calls through the gateway until the budget refuses one (402 BudgetExceeded), a tool call through oz0 mcp, both in the job's trace; the job ends BudgetExceeded", async () => {
    const tenant = uid("run-agent-acme");
    const id = uid("run-agent-job");
    const file = join(dir, "report.json");
    const ran = await oz0Run(["--tenant", tenant, "--agent", "run-agent", "--budget", String(BUDGET_USD), "--id", id, "--as", "pat", "--", process.execPath, AGENT, file, OZ0, manifest, MODEL], { OZ0_GATEWAY_URL: gateway?.url ?? "" });
    expect(ran.code, ran.err).toBe(0);
    const report = JSON.parse(readFileSync(file, "utf8")) as Report;

    // The tool call went through oz0 mcp to the server, in the same job.
    expect(report.tool).toBe("found: deployment");
    expect(toolCalls).toEqual([{ q: "deployment" }]);

    // Model calls until the budget refused one: the SDK's own error, 402 with the seed's code.
    expect(report.calls).toBeGreaterThanOrEqual(2);
    expect(report.refused).toMatchObject({ status: 402, code: "BudgetExceeded" });
    expect(report.refused?.message).toMatch(/BudgetExceeded: .*budget/);
    const answered = provider?.answered.filter((a) => a.status === 200) ?? [];
    expect(answered).toHaveLength(report.calls);
    expect(report.answers).toEqual(answered.map((a) => a.text));

    // The tree spent what the provider's usage costs, to the micro-dollar, and no more than a call past the budget.
    const price = priceOf(DEFAULT_PRICES, MODEL).price;
    const cost = answered.reduce((sum, a) => sum + costMicros(price, a.counts ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }), 0);
    const limits = redisLimitsStore(redis, new Keys());
    let spent: number | null = null;
    // The last usage is settled after its answer: polled until it is in.
    for (const end = Date.now() + 30_000; Date.now() < end && (spent = await limits.spent(tenant, id)) !== cost; ) await new Promise((r) => setTimeout(r, 100));
    expect(spent).toBe(cost);

    // The job ended with the reason, and oz0 run said so.
    expect(ran.err).toMatch(new RegExp(`job ${id} ended with BudgetExceeded: `));
    const kafka = new kafkajs.Kafka({ ...kafkaConfig(uid("oz0-run-agent-trace"), endpoints()), logLevel: kafkajs.logLevel.ERROR });
    const trace = await scanTrace(kafka, new Serde({ registryUrl: endpoints().registryUrl }), id);
    const jobs = (trace.jobs ?? []).filter((j) => j.tenant === tenant);
    expect(jobs.map((j) => [j.kind, j.outcome, j.started_by, j.principal])).toEqual([
      ["started", null, "person", "pat"],
      ["ended", "BudgetExceeded", "person", "pat"],
    ]);

    // One job tree: the model calls' admissions (limits-model-calls) and the tool call's decision (loop-calls).
    const decisions = trace.decisions.filter((d) => d.tenant === tenant);
    const models = decisions.filter((d) => d.processor === "limits-model-calls");
    expect(models.filter((d) => d.verdict === "allow")).toHaveLength(report.calls);
    // (a report of a crossed spend share, spend.warn_share, may come between them)
    expect(models.find((d) => d.verdict === "stop" || d.verdict === "refuse")).toMatchObject({ reason_code: "BudgetExceeded", limit: "limits.max_cost_usd", tree_id: id });
    expect(decisions.filter((d) => d.processor === "loop-calls")).toEqual([expect.objectContaining({ verdict: "allow", tree_id: id, job_id: id })]);
    const text = formatTrace({ ...trace, decisions, jobs });
    expect(text).toMatch(/BudgetExceeded/);
    expect(text).toMatch(/loop-calls/);

    // The job's key was revoked with its end, by the person who ran it.
    const [binding] = await redisKeyStore(redis, new Keys()).list({ tenant, job_id: id });
    expect(binding?.revoked_by).toBe("pat");
  }, 300_000);
});
