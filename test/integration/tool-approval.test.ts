/**
 * TOOL-1 and TOOL-3 on the real stack: loop-calls and loop-approvals on Kafka with their state
 * in Redis, and `oz0 approval` run as a person runs it, a process of its own. Then the same
 * through `oz0 mcp`, with the official SDK's client as the agent, an MCP server of the SDK's own
 * behind the gateway (in this process, so the test sees every call it gets), and the whole
 * pipeline of `npm start` in this process.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { type Producer } from "kafkajs";
import { type Pipeline } from "../../topology/run.ts";
import { endpointsEnv } from "../../processors/runner/endpoints.ts";
import { Serde } from "../../schemas/serde.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePlugin } from "../../config/plugin.ts";
import { loopApprovalsProcessor } from "../../processors/loops/approvals-processor.ts";
import { loopCallsProcessor, type LoopEnv } from "../../processors/loops/calls-processor.ts";
import { RedisLoopStore } from "../../processors/loops/redis-store.ts";
import { approvedArguments } from "../../processors/loops/tool-approval.ts";
import type { WaitingApproval } from "../../processors/loops/waiting.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { Processor } from "../../processors/runner/processor.ts";
import { startProcessor, type RunningProcessor } from "../../processors/runner/runner.ts";
import { KafkaTransport } from "../../processors/runner/transport.ts";
import type { Decision, ResultDelivered, ToolCall } from "../../schemas/types.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { toolCall, uid } from "../support/events.ts";
import { startTestPipeline, stopTestPipeline } from "../support/pipeline.ts";
import { startMcpHttpServer, type McpHttpServer } from "../support/mcp-http-server.ts";
import { collect, endpoints, groupAtEnd, kafka, serde, TEST_FETCH_WAIT_MS } from "../support/kafka.ts";
import { oz0 } from "../support/oz0.ts";

const manifest = parsePlugin(readFileSync("config/examples/plugins/acme_docs.yaml", "utf8"), "acme_docs.yaml");

describe("TOOL-1 and TOOL-3 on the real stack, answered with oz0 approval as a process", () => {
  let s: Serde;
  let redis: RedisClient;
  let producer: Producer;
  let env: LoopEnv;
  const tenant = uid("tenant").replace(/-/g, "_");
  const agent = uid("agent");
  const log = createLogger({ test: "tool-approval" }, () => {});
  const running: RunningProcessor[] = [];

  async function start<In>(p: Processor<In, LoopEnv>): Promise<void> {
    const group = uid(p.name);
    await groupAtEnd(group, p.input);
    running.push(await startProcessor(p, env, { transport: new KafkaTransport({ kafka: kafka(group), groupId: group, topics: [p.input], log, maxWaitMs: TEST_FETCH_WAIT_MS }), serde: s, log }));
  }

  const send = (c: ToolCall) => producer.send({ topic: "oz0.tool-calls", messages: [{ key: c.run_id, value: s.encode("ToolCall", c) }] });
  const decisionsOf = (runId: string, want: number, settleMs = 0) => collect<Decision>("oz0.call-decisions", "Decision", s, (d) => d.run_id === runId && d.processor.startsWith("loop-"), want, 60_000, settleMs);
  const resultsOf = (runId: string, want: number) => collect<ResultDelivered>("oz0.results-delivered", "ResultDelivered", s, (r) => r.run_id === runId, want, 60_000);

  /** A call of quote (requires_approval in the example manifest) in a run of a new job; it waits, and is listed as kind tool. */
  async function waitingQuote(): Promise<{ runId: string; job: string; c: ToolCall; listed: WaitingApproval }> {
    const runId = uid("run");
    const job = uid("job");
    const c = toolCall({ tenant, agent, run_id: runId, job_id: job, tree_id: job, function: "quote", arguments: '{"plan":"pro","budget":2.5}' });
    await send(c);
    const [wait] = await decisionsOf(runId, 1);
    expect(wait).toMatchObject({ verdict: "wait", reason_code: "ToolApproval", subject: c.call_id });
    const list = await oz0(["approval", "list", "--tenant", tenant, "--kind", "tool", "--json"]);
    expect(list.code, list.err).toBe(0);
    const mine = (JSON.parse(list.out) as WaitingApproval[]).filter((w) => w.job_id === job);
    expect(mine).toHaveLength(1);
    return { runId, job, c, listed: mine[0] as WaitingApproval };
  }

  beforeAll(async () => {
    if (!manifest.ok) throw new Error("the example manifest does not parse");
    s = await serde();
    redis = redisClient(endpoints());
    const config = staticConfig([
      { kind: "agent", id: agent, value: { name: agent, tools: ["acme_docs"] } },
      { kind: "plugin", id: "acme_docs", value: manifest.value },
      { kind: "tenant", id: tenant, value: { loops: {}, approvals: { deadline: 600_000 } } },
    ]);
    env = { config, store: new RedisLoopStore(redis, new Keys()) };
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    await start(loopCallsProcessor);
    await start(loopApprovalsProcessor);
  });

  afterAll(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await producer?.disconnect();
    redis?.disconnect();
  });

  it("TOOL-1 a call of a tool the agent does not list is refused with the tools it may call, and its failed result is delivered", async () => {
    const runId = uid("run");
    const c = toolCall({ tenant, agent, run_id: runId, plugin: "billing", tool: "billing", function: "refund", arguments: '{"order":7}' });
    await send(c);
    const [refused] = await decisionsOf(runId, 1);
    expect(refused).toMatchObject({ verdict: "refuse", reason_code: "ToolNotAllowed", subject: c.call_id });
    expect(refused?.message).toContain("it may call only acme_docs");
    const [result] = await resultsOf(runId, 1);
    expect(result).toMatchObject({ input_id: c.id, is_error: true });
  });

  it("TOOL-3 a requires_approval call is listed as kind tool and not allowed until oz0 approval approve, then with the arguments approved", async () => {
    const { runId, job, c, listed } = await waitingQuote();
    expect(listed).toMatchObject({ kind: "tool", tenant, run_id: runId, call_id: c.call_id, call: { plugin: "acme_docs", tool: "acme_docs", function: "quote" }, arguments: { plan: "pro", budget: 2.5 } });
    expect(listed.approval).toMatch(/^t-/);
    const human = await oz0(["approval", "list", "--tenant", tenant]);
    expect(human.out).toContain(`oz0 approval approve ${job} ${listed.approval} [--arguments JSON]`);
    // Nothing allows it while nobody answers.
    expect(await decisionsOf(runId, 1, 3_000)).toHaveLength(1);

    const bad = await oz0(["approval", "approve", job, listed.approval, "--arguments", "[1]", "--as", "alice"]);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--arguments must be a JSON object/);

    const approved = await oz0(["approval", "approve", job, listed.approval, "--arguments", '{"plan":"basic"}', "--as", "alice"]);
    expect(approved.code, approved.err).toBe(0);
    expect(approved.out).toMatch(/approved t-\S+ as alice: the call of acme_docs\/acme_docs\.quote .* is made with the arguments given/);
    const ds = await decisionsOf(runId, 2);
    expect(ds[1]).toMatchObject({ processor: "loop-approvals", verdict: "allow", reason_code: "ToolApproved", subject: c.call_id });
    expect(JSON.parse(approvedArguments(ds[1] as Decision) ?? "null")).toEqual({ plan: "basic" });
    expect(JSON.parse(ds[1]?.evidence ?? "{}")).toMatchObject({ answered_by: "person:alice" });

    const after = await oz0(["approval", "list", "--tenant", tenant, "--json"]);
    expect((JSON.parse(after.out) as WaitingApproval[]).filter((w) => w.job_id === job)).toEqual([]);
  });

  it("TOOL-3 denied with oz0 approval deny, the call is refused with the comment as its failed result, and the job's next call goes on", async () => {
    const { runId, job, c, listed } = await waitingQuote();
    const denied = await oz0(["approval", "deny", job, listed.approval, "--comment", "not this quarter", "--as", "bob"]);
    expect(denied.code, denied.err).toBe(0);
    expect(denied.out).toMatch(/denied t-\S+ as bob: the call of acme_docs\/acme_docs\.quote .* is refused/);
    const ds = await decisionsOf(runId, 2);
    expect(ds[1]).toMatchObject({ verdict: "refuse", reason_code: "ToolDenied", subject: c.call_id });
    expect(ds[1]?.message).toContain("not this quarter");
    const [result] = await resultsOf(runId, 1);
    expect(result).toMatchObject({ input_id: c.id, is_error: true });
    await send(toolCall({ tenant, agent, run_id: runId, job_id: job, tree_id: job, function: "get_page" }));
    expect((await decisionsOf(runId, 3))[2]?.verdict).toBe("allow");
  });
});

const CONFIG_DIR = fileURLToPath(new URL("../fixtures/tool-approval-config/", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CALL_MS = 120_000;

interface Answer {
  content: Array<{ type: string; text?: string }>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/** A bank MCP server of the SDK's own over Streamable HTTP: every call it gets is in `served` (its side effect). */
async function startBank(): Promise<McpHttpServer & { served: string[] }> {
  const served: string[] = [];
  const tools = [
    { name: "transfer", description: "Moves money.", inputSchema: { type: "object", properties: { amount: { type: "number" }, to: { type: "string" } }, required: ["amount", "to"] } },
    { name: "balance", description: "The balance.", inputSchema: { type: "object", properties: {} } },
  ];
  const server = await startMcpHttpServer("bank", tools, (name, args) => {
    served.push(`${name} ${JSON.stringify(args)}`);
    return { content: [{ type: "text", text: name === "transfer" ? `sent ${JSON.stringify(args)}` : "1000 EUR" }] };
  });
  return { ...server, served };
}

describe("TOOL-1 and TOOL-3 through oz0 mcp (the SDK's client and server, the whole pipeline)", () => {
  const run = randomUUID().slice(0, 8);
  const tenant = `ta-${run}`;
  const log = createLogger({ test: "tool-approval-mcp" }, () => {});
  let pipeline: Pipeline | undefined;
  let bank: Awaited<ReturnType<typeof startBank>>;
  let dir: string;
  const clients: Client[] = [];

  async function gateway(agent: string, job = `ta-job-${randomUUID().slice(0, 8)}`): Promise<{ client: Client; job: string }> {
    const manifest = join(dir, "ta_bank.yaml");
    await writeFile(manifest, `name: ta_bank\ntools:\n  - id: ta_bank\n    mcp: "${bank.url}"\n    results: {fit: false}\n`);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["--import", "tsx", "bin/oz0.ts", "mcp", "--plugin", manifest, "--tenant", tenant, "--agent", agent, "--job", job, "--timeout-ms", String(CALL_MS)],
      cwd: ROOT,
      env: { ...(process.env as Record<string, string>), ...endpointsEnv(endpoints()), OZ0_LOG_LEVEL: "warn" },
      stderr: "inherit",
    });
    const client = new Client({ name: "tool-approval-test", version: "1" });
    await client.connect(transport, { timeout: 120_000 });
    clients.push(client);
    return { client, job };
  }

  const call = async (client: Client, name: string, args: Record<string, unknown>): Promise<Answer> => (await client.callTool({ name, arguments: args }, undefined, { timeout: CALL_MS })) as unknown as Answer;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "oz0-tool-approval-"));
    bank = await startBank();
    pipeline = await startTestPipeline(`ta-${run}`, CONFIG_DIR, "tool approval test agents", log);
  }, 240_000);

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await stopTestPipeline(pipeline);
    await bank?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it("TOOL-3 transfer does not run until oz0 approval approve (a process), then runs once with the arguments approved", async () => {
    const { client, job } = await gateway("ta-payer");
    // A function without requires_approval goes straight through.
    expect((await call(client, "balance", {})).isError).toBeFalsy();
    const pending = call(client, "transfer", { amount: 100, to: "acct-1" });
    let listed: WaitingApproval | undefined;
    for (let waited = 0; listed === undefined && waited < 60_000; waited += 1_000) {
      const list = await oz0(["approval", "list", "--tenant", tenant, "--kind", "tool", "--json"]);
      listed = (JSON.parse(list.out || "[]") as WaitingApproval[]).find((w) => w.job_id === job);
      if (listed === undefined) await new Promise((r) => setTimeout(r, 1_000));
    }
    expect(listed, "the transfer's approval is listed").toMatchObject({ kind: "tool", call: { plugin: "ta_bank", tool: "ta_bank", function: "transfer" }, arguments: { amount: 100, to: "acct-1" } });
    expect(bank.served.filter((c) => c.startsWith("transfer")), "the server saw no transfer before the approval").toEqual([]);

    const approved = await oz0(["approval", "approve", job, listed?.approval ?? "", "--arguments", '{"amount": 5, "to": "acct-1"}', "--as", "carol"]);
    expect(approved.code, approved.err).toBe(0);
    const answer = await pending;
    expect(answer.isError).toBeFalsy();
    expect(answer.content[0]?.text).toBe('sent {"amount":5,"to":"acct-1"}');
    expect(bank.served.filter((c) => c.startsWith("transfer"))).toEqual(['transfer {"amount":5,"to":"acct-1"}']);
  }, 300_000);

  it("TOOL-3 transfer denied: the agent reads the refusal and the server never sees it", async () => {
    const { client, job } = await gateway("ta-payer");
    const before = bank.served.length;
    const pending = call(client, "transfer", { amount: 9999, to: "acct-2" });
    let listed: WaitingApproval | undefined;
    for (let waited = 0; listed === undefined && waited < 60_000; waited += 1_000) {
      const list = await oz0(["approval", "list", "--tenant", tenant, "--kind", "tool", "--json"]);
      listed = (JSON.parse(list.out || "[]") as WaitingApproval[]).find((w) => w.job_id === job);
      if (listed === undefined) await new Promise((r) => setTimeout(r, 1_000));
    }
    const denied = await oz0(["approval", "deny", job, listed?.approval ?? "", "--comment", "too much", "--as", "carol"]);
    expect(denied.code, denied.err).toBe(0);
    const answer = await pending;
    expect(answer.isError).toBe(true);
    expect(answer.content[0]?.text).toContain("A person denied the call of ta_bank/ta_bank.transfer");
    expect(answer.content[0]?.text).toContain("too much");
    expect(answer._meta?.["oz0/decision"]).toMatchObject({ verdict: "refuse", reason_code: "ToolDenied" });
    expect(bank.served.length).toBe(before);
  }, 300_000);

  it("TOOL-1 an agent that does not list the tool gets every call refused, with the tools it may call named; the server sees none", async () => {
    const { client } = await gateway("ta-reader");
    const before = bank.served.length;
    const answer = await call(client, "balance", {});
    expect(answer.isError).toBe(true);
    expect(answer.content[0]?.text).toContain("The agent ta-reader does not list the tool ta_bank");
    expect(answer.content[0]?.text).toContain("it may call only ta_docs");
    expect(answer._meta?.["oz0/decision"]).toMatchObject({ verdict: "refuse", reason_code: "ToolNotAllowed" });
    expect(bank.served.length).toBe(before);
  }, 300_000);
});
