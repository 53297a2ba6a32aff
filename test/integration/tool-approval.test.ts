/**
 * TOOL-1 and TOOL-3 on the real stack: loop-calls and loop-approvals on Kafka with their state
 * in Redis, and `oz0 approval` run as a person runs it, a process of its own.
 */
import { readFileSync } from "node:fs";
import type { Producer } from "kafkajs";
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
import type { Serde } from "../../schemas/serde.ts";
import type { Decision, ResultDelivered, ToolCall } from "../../schemas/types.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { toolCall, uid } from "../support/events.ts";
import { collect, endpoints, groupAtEnd, kafka, serde } from "../support/kafka.ts";
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
    running.push(await startProcessor(p, env, { transport: new KafkaTransport({ kafka: kafka(group), groupId: group, topics: [p.input], log }), serde: s, log }));
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
    for (const r of running) await r.stop();
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
