import type { Producer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loopApprovalsProcessor } from "../../processors/loops/approvals-processor.ts";
import { loopCallsProcessor, type LoopEnv } from "../../processors/loops/calls-processor.ts";
import { RedisLoopStore } from "../../processors/loops/redis-store.ts";
import type { WaitingApproval } from "../../processors/loops/waiting.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { Processor } from "../../processors/runner/processor.ts";
import { startProcessor, type RunningProcessor } from "../../processors/runner/runner.ts";
import { KafkaTransport } from "../../processors/runner/transport.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { Decision, ToolCall } from "../../schemas/types.ts";
import { Keys } from "../../store/redis/keys.ts";
import { toolCall, uid } from "../support/events.ts";
import { oz0 } from "../support/oz0.ts";
import { collect, endpoints, groupAtEnd, kafka, serde, TEST_FETCH_WAIT_MS } from "../support/kafka.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";


describe("oz0 approval: a loop that waits for a person is listed, approved or denied from the command line", () => {
  let s: Serde;
  let redis: RedisClient;
  let producer: Producer;
  let env: LoopEnv;
  const tenant = uid("tenant").replace(/-/g, "_");
  const log = createLogger({ test: "oz0-approval" }, () => {});
  const running: RunningProcessor[] = [];

  async function start<In>(p: Processor<In, LoopEnv>): Promise<void> {
    const group = uid(p.name);
    await groupAtEnd(group, p.input);
    running.push(await startProcessor(p, env, { transport: new KafkaTransport({ kafka: kafka(group), groupId: group, topics: [p.input], log, maxWaitMs: TEST_FETCH_WAIT_MS }), serde: s, log }));
  }

  const sendCalls = (runId: string, calls: ToolCall[]) => producer.send({ topic: "oz0.tool-calls", messages: calls.map((c) => ({ key: runId, value: s.encode("ToolCall", c) })) });
  const decisionsOf = (runId: string, want: number) => collect<Decision>("oz0.call-decisions", "Decision", s, (d) => d.run_id === runId && d.processor.startsWith("loop-"), want, 60_000);

  /** Three calls alike in a run of a new job: the third waits for a person; its approval as listed. */
  async function waitingLoop(): Promise<{ runId: string; job: string; calls: ToolCall[]; listed: WaitingApproval }> {
    const runId = uid("run");
    const job = uid("job");
    const calls = [1, 2, 3].map(() => toolCall({ tenant, run_id: runId, job_id: job, tree_id: job, function: "get_page", arguments: '{"path":"a.md"}' }));
    await sendCalls(runId, calls);
    const ds = await decisionsOf(runId, 3);
    expect(ds.map((d) => d.verdict)).toEqual(["allow", "allow", "wait"]);
    const list = await oz0(["approval", "list", "--tenant", tenant, "--json"]);
    expect(list.code).toBe(0);
    const mine = (JSON.parse(list.out) as WaitingApproval[]).filter((w) => w.job_id === job);
    expect(mine).toHaveLength(1);
    return { runId, job, calls, listed: mine[0] as WaitingApproval };
  }

  beforeAll(async () => {
    s = await serde();
    redis = redisClient(endpoints());
    env = { config: staticConfig([]), store: new RedisLoopStore(redis, new Keys()) };
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

  it("LOOP-5 a waiting loop is listed with its job, evidence, deadline and step; approved as a person, the held call is allowed and the answer names who", async () => {
    const { runId, job, calls, listed } = await waitingLoop();
    expect(listed).toMatchObject({ kind: "loop", tenant, job_id: job, run_id: runId, call_id: calls[2]?.call_id, step: 0, escalated_to: null, asked_at: calls[2]?.ts });
    expect(listed.evidence).toMatchObject({ detector: "repeats", count: 3, arguments: { path: "a.md" } });
    expect(listed.deadline).toBeGreaterThan(Date.now());

    const human = await oz0(["approval", "list", "--tenant", tenant]);
    expect(human.out).toContain(listed.approval);
    expect(human.out).toContain(`oz0 approval approve ${job} ${listed.approval}`);

    const approved = await oz0(["approval", "approve", job, listed.approval, "--comment", "expected retries", "--as", "alice"]);
    expect(approved.code, approved.err).toBe(0);
    expect(approved.out).toMatch(/approved .* as alice: the held call .* goes ahead/);
    const ds = await decisionsOf(runId, 4);
    expect(ds[3]).toMatchObject({ processor: "loop-approvals", verdict: "allow", reason_code: "LoopApproved", subject: calls[2]?.call_id });
    expect(JSON.parse(ds[3]?.evidence ?? "{}")).toMatchObject({ answered_by: "person:alice", approval: { id: listed.approval } });

    const after = await oz0(["approval", "list", "--tenant", tenant, "--json"]);
    expect((JSON.parse(after.out) as WaitingApproval[]).filter((w) => w.job_id === job)).toEqual([]);
    // The job's trace, read from the topics (--scan): the loop's wait and the person's allow.
    const trace = await oz0(["job", "trace", job, "--scan", "--json"]);
    expect(trace.code, trace.err).toBe(0);
    const decided = (JSON.parse(trace.out) as { decisions: Decision[] }).decisions.filter((d) => d.processor.startsWith("loop-")).map((d) => `${d.processor}:${d.verdict}`);
    expect(decided).toEqual(expect.arrayContaining(["loop-calls:wait", "loop-approvals:allow"]));

    const again = await oz0(["approval", "deny", job, listed.approval, "--as", "bob"]);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/was approved already; nothing changed/);
  });

  it("LOOP-5 denied as a person, the job stops with LoopDetected and the comment is what the model reads; a wrong job or an unknown approval says so", async () => {
    const { runId, job, calls, listed } = await waitingLoop();
    const wrongJob = await oz0(["approval", "deny", "job-other", listed.approval, "--as", "bob"]);
    expect(wrongJob.code).toBe(1);
    expect(wrongJob.err).toContain(`belongs to job ${job}, not job-other`);
    const unknown = await oz0(["approval", "approve", job, "no-such-approval", "--as", "bob"]);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/no loop waits on approval no-such-approval/);
    const usage = await oz0(["approval", "deny", job]);
    expect(usage.code).toBe(2);

    const denied = await oz0(["approval", "deny", job, listed.approval, "--comment", "it keeps fetching the same page", "--as", "bob", "--json"]);
    expect(denied.code, denied.err).toBe(0);
    expect(JSON.parse(denied.out)).toMatchObject({ approval: listed.approval, job, answer: "denied", by: "bob", decided_by_this_answer: true });
    const ds = await decisionsOf(runId, 4);
    expect(ds[3]).toMatchObject({ processor: "loop-approvals", verdict: "stop", reason_code: "LoopDetected", subject: calls[2]?.call_id });
    expect(ds[3]?.message).toContain("it keeps fetching the same page");
    expect(JSON.parse(ds[3]?.evidence ?? "{}")).toMatchObject({ answered_by: "person:bob" });
  });
});
