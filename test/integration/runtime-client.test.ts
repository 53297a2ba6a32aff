import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentDefinition } from "../../config/agent.ts";
import { NoAnswer, RuntimeClient } from "../../client/runtime-client.ts";
import { limitsEnv } from "../../processors/limits/index.ts";
import { limitsJobsProcessor } from "../../processors/limits/jobs-processor.ts";
import { limitsModelCallsProcessor } from "../../processors/limits/model-calls-processor.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { RunningProcessor } from "../../processors/runner/runner.ts";
import type { JobEvent, ModelCall } from "../../schemas/types.ts";
import { Keys } from "../../store/redis/keys.ts";
import { uid } from "../support/events.ts";
import { endpoints, kafka, serde, startOnKafka } from "../support/kafka.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";

describe("the runtime client against the real broker and the limits processors", () => {
  let redis: RedisClient;
  let client: RuntimeClient;
  const running: RunningProcessor[] = [];
  const keys = new Keys(uid("rc").replace(/-/g, "_"));
  const boss: AgentDefinition = { name: "boss", tools: [], limits: { tree: { fan_out: 1 }, max_cost_usd: 1 }, delegation: { allow: [] }, loops: {}, spend: {} };

  const jobEvent = (tree: string, over: Partial<JobEvent>): JobEvent => ({ id: uid("evt"), tenant: "acme", tree_id: tree, job_id: tree, parent_job_id: null, run_id: "run-root", agent: "boss", kind: "started", started_by: "app", delegation: "none", depth: 0, outcome: null, principal: "person-1", team: null, permissions: [], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts: Date.now(), ...over });
  const ask = (tree: string): ModelCall => ({ id: uid("evt"), tenant: "acme", tree_id: tree, job_id: tree, run_id: "run-root", request_id: uid("req"), kind: "ask", model: "claude-sonnet-4", input_tokens: 1_000, max_output_tokens: 500, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, agent: "boss", ts: Date.now() });

  beforeAll(async () => {
    const s = await serde();
    redis = redisClient(endpoints());
    const env = limitsEnv({ redis, config: staticConfig([{ kind: "agent", id: "boss", value: boss }]), keys });
    running.push(await startOnKafka(limitsJobsProcessor, env, s), await startOnKafka(limitsModelCallsProcessor, env, s));
    client = await RuntimeClient.connect(endpoints(), { log: createLogger({ test: "runtime-client" }, () => {}) });
  });

  afterAll(async () => {
    await client?.close();
    await Promise.all(running.map((r) => r.stop()));
    redis?.disconnect();
  });

  it("SYS-4 gets the admission of a model-call ask and of a child ask, correlated by the event's ID", async () => {
    const tree = uid("tree");
    await client.publishJobEvents([jobEvent(tree, {})]);
    const a = ask(tree);
    const admitted = await client.askModelCall(a, 60_000);
    expect(admitted).toMatchObject({ input_id: a.id, processor: "limits-model-calls", verdict: "allow", subject: a.request_id });

    const first = jobEvent(tree, { kind: "child_ask", job_id: `${tree}-c1`, parent_job_id: tree, depth: 1 });
    const second = jobEvent(tree, { kind: "child_ask", job_id: `${tree}-c2`, parent_job_id: tree, depth: 1 });
    // Both published before either is awaited: each await finds its own answer.
    await client.publishJobEvents([first, second]);
    const [d2, d1] = await Promise.all([client.awaitAdmission(second.id, 60_000), client.awaitAdmission(first.id, 60_000)]);
    expect(d1).toMatchObject({ input_id: first.id, processor: "limits-jobs", verdict: "allow" });
    expect(d2).toMatchObject({ input_id: second.id, verdict: "refuse", limit: "limits.tree.fan_out" });

    await client.publishModelCalls([{ ...a, id: uid("evt"), kind: "usage", output_tokens: 200 }]);
  });

  it("SYS-1 a closed client leaves no consumer group behind on the broker", async () => {
    const other = await RuntimeClient.connect(endpoints(), { log: createLogger({ test: "runtime-client" }, () => {}) });
    const admin = kafka().admin();
    await admin.connect();
    try {
      const groups = async () => (await admin.listGroups()).groups.map((g) => g.groupId);
      expect(await groups()).toContain(other.replyGroup);
      await other.close();
      expect(await groups()).not.toContain(other.replyGroup);
    } finally {
      await admin.disconnect();
    }
  });

  it("SYS-4 a client that listens from its first publish reads nothing before it, then misses no answer to it", async () => {
    const lazy = await RuntimeClient.connect(endpoints(), { log: createLogger({ test: "runtime-client" }, () => {}), listen: ["admission"], listenFrom: "first-publish" });
    const admin = kafka().admin();
    await admin.connect();
    try {
      const groups = async () => (await admin.listGroups()).groups.map((g) => g.groupId);
      // Connected, and no reply group: nothing of oz0.admissions is fetched while it is not used.
      expect(lazy.listeningNow).toBe(false);
      expect(await groups()).not.toContain(lazy.replyGroup);
      // Other clients' answers meanwhile are none of its business.
      const before = uid("tree");
      await client.publishJobEvents([jobEvent(before, {})]);
      expect(await client.askModelCall(ask(before), 60_000)).toMatchObject({ verdict: "allow" });
      expect(await groups()).not.toContain(lazy.replyGroup);

      // Its first exchange joins, then publishes: the answer comes however fast the pipeline is.
      const tree = uid("tree");
      await lazy.publishJobEvents([jobEvent(tree, {})]);
      expect(lazy.listeningNow).toBe(true);
      expect(await groups()).toContain(lazy.replyGroup);
      const a = ask(tree);
      expect(await lazy.askModelCall(a, 60_000)).toMatchObject({ input_id: a.id, processor: "limits-model-calls", verdict: "allow" });
      await lazy.close();
      expect(await groups()).not.toContain(lazy.replyGroup);
    } finally {
      await lazy.close();
      await admin.disconnect();
    }
  });

  it("SYS-1 fails with NoAnswer naming the event, the topic and the time when nothing answers", async () => {
    // A root job's start is recorded and answered by nothing.
    const start = jobEvent(uid("tree"), {});
    await client.publishJobEvents([start]);
    const t0 = Date.now();
    const err = await client.awaitAdmission(start.id, 1_500).catch((e: unknown) => e);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_400);
    expect(err).toBeInstanceOf(NoAnswer);
    expect(err).toMatchObject({ awaited: "admission", topic: "oz0.admissions", inputId: start.id, timeoutMs: 1_500 });
    expect((err as Error).message).toContain(`for event ${start.id} did not come on oz0.admissions within 1500 ms`);
  });
});
