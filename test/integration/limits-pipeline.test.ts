import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Producer } from "kafkajs";
import type { AgentDefinition } from "../../config/agent.ts";
import { limitsEnv } from "../../processors/limits/index.ts";
import { limitsJobsProcessor } from "../../processors/limits/jobs-processor.ts";
import { limitsModelCallsProcessor } from "../../processors/limits/model-calls-processor.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { startProcessor } from "../../processors/runner/runner.ts";
import { KafkaTransport } from "../../processors/runner/transport.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { Decision, JobEvent, ModelCall } from "../../schemas/types.ts";
import { Keys } from "../../store/redis/keys.ts";
import { uid } from "../support/events.ts";
import { until } from "../support/promises.ts";
import { collect, endpoints, kafka, serde, startOnKafka, TEST_FETCH_WAIT_MS } from "../support/kafka.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";

describe("limits processors on real Kafka and Redis", () => {
  let s: Serde;
  let redis: RedisClient;
  let producer: Producer;
  const keys = new Keys(uid("lim").replace(/-/g, "_"));
  const boss: AgentDefinition = { name: "boss", tools: [], limits: { tree: { fan_out: 2 }, max_cost_usd: 0.1, max_output_tokens: 1_000 }, delegation: { allow: [] }, loops: {}, spend: {} };
  const log = createLogger({ test: "limits" }, () => {});
  const config = staticConfig([{ kind: "agent", id: "boss", value: boss }]);

  beforeAll(async () => {
    s = await serde();
    redis = redisClient(endpoints());
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
  });

  afterAll(async () => {
    await producer?.disconnect();
    redis?.disconnect();
  });

  const jobEvent = (tree: string, over: Partial<JobEvent>): JobEvent => ({ id: uid("evt"), tenant: "acme", tree_id: tree, job_id: tree, parent_job_id: null, run_id: "run-root", agent: "boss", kind: "started", started_by: "app", delegation: "none", depth: 0, outcome: null, principal: null, team: null, permissions: [], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts: Date.now(), ...over });
  const ask = (tree: string): ModelCall => ({ id: uid("evt"), tenant: "acme", tree_id: tree, job_id: tree, run_id: "run-root", request_id: uid("req"), kind: "ask", model: "claude-sonnet-4", input_tokens: 1_000, max_output_tokens: null, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, agent: "boss", ts: Date.now() });

  it("LIM-7 LIM-3 asks and children are decided once each across a restart mid-stream, and the budget holds", async () => {
    const tree = uid("tree");
    const env = limitsEnv({ redis, config, keys });
    const jobs = await startOnKafka(limitsJobsProcessor, env, s);
    const callsGroup = uid("limits-model-calls");
    let calls = await startOnKafka(limitsModelCallsProcessor, env, s, callsGroup);

    await producer.send({ topic: "oz0.jobs", messages: [jobEvent(tree, {})].map((e) => ({ key: tree, value: s.encode("JobEvent", e) })) });
    // Each ask reserves 1,000 in + 1,000 out of sonnet: $0.018; the budget of $0.10 admits 5, then the last call, then stops.
    const asks = Array.from({ length: 8 }, () => ask(tree));
    const send = (list: ModelCall[]) => producer.send({ topic: "oz0.model-calls", messages: list.map((c) => ({ key: tree, value: s.encode("ModelCall", c) })) });
    await send(asks.slice(0, 3));
    await collect<Decision>("oz0.admissions", "Decision", s, (d) => d.tree_id === tree && d.processor === "limits-model-calls", 3, 60_000);
    // The children are asked while the job runs: once the budget stops it, its children are refused with its ending (docs/limits.md, "Endings bind").
    const children = ["c1", "c2", "c3"].map((c) => jobEvent(tree, { id: uid("evt"), kind: "child_ask", job_id: `${tree}-${c}`, parent_job_id: tree, agent: "boss", depth: 1 }));
    await producer.send({ topic: "oz0.jobs", messages: children.map((e) => ({ key: tree, value: s.encode("JobEvent", e) })) });
    await collect<Decision>("oz0.admissions", "Decision", s, (d) => d.tree_id === tree && d.processor === "limits-jobs", 3, 60_000);
    await calls.stop();
    await send(asks.slice(3));
    // The same group again, not moved to the end: it resumes at the offsets it committed.
    calls = await startProcessor(limitsModelCallsProcessor, env, { transport: new KafkaTransport({ kafka: kafka(callsGroup), groupId: callsGroup, topics: ["oz0.model-calls"], log, maxWaitMs: TEST_FETCH_WAIT_MS }), serde: s, log });

    const decided = await collect<Decision>("oz0.admissions", "Decision", s, (d) => d.tree_id === tree, 8 + 3, 90_000, 2_000);
    await calls.stop();
    await jobs.stop();
    const callDecisions = decided.filter((d) => d.processor === "limits-model-calls");
    expect(new Set(callDecisions.map((d) => d.subject)).size).toBe(callDecisions.length);
    expect(callDecisions.map((d) => d.verdict)).toEqual(["allow", "allow", "allow", "allow", "allow", "allow", "stop", "stop"]);
    expect(callDecisions[5]?.limit).toBe("limits.reserve");
    const childDecisions = decided.filter((d) => d.processor === "limits-jobs");
    expect(childDecisions.map((d) => d.verdict)).toEqual(["allow", "allow", "refuse"]);
    expect(childDecisions[2]?.limit).toBe("limits.tree.fan_out");
    expect(await redis.hget(keys.limits("acme", tree), "model_calls")).toBe("6");
  });

  it("LIM-1 run --timeout and run --budget on the start event (JobEvent v3) reach the limits through Kafka and Redis; a start that leaves them out has neither", async () => {
    const env = limitsEnv({ redis, config, keys });
    const jobs = await startOnKafka(limitsJobsProcessor, env, s);
    const calls = await startOnKafka(limitsModelCallsProcessor, env, s);
    const [timed, plain] = [uid("tree"), uid("tree")];
    const start = Date.now() - 120_000;
    await producer.send({ topic: "oz0.jobs", messages: [jobEvent(timed, { ts: start, timeout_ms: 60_000, budget_usd: 0.5, session: true }), jobEvent(plain, { ts: start })].map((e) => ({ key: e.tree_id, value: s.encode("JobEvent", e) })) });
    // Two topics, two processors: nothing orders a start before an ask on another topic (an ask
    // first meets provisional settings, docs/limits.md), so the asks go once the starts are kept.
    await until("both starts kept in the trees' limits", async () => (await redis.hget(keys.limits("acme", timed), `job:${timed}:tmo`)) === "60000" && (await redis.hget(keys.limits("acme", plain), `job:${plain}:tmo`)) === "-1", 60_000);
    await producer.send({ topic: "oz0.model-calls", messages: [ask(timed), ask(plain)].map((c) => ({ key: c.tree_id, value: s.encode("ModelCall", c) })) });
    const decided = await collect<Decision>("oz0.admissions", "Decision", s, (d) => d.tree_id === timed || d.tree_id === plain, 2, 60_000);
    await calls.stop();
    await jobs.stop();
    const of = (tree: string) => decided.find((d) => d.tree_id === tree);
    expect(of(timed)).toMatchObject({ verdict: "stop", reason_code: "AgentTimeout", limit: "run --timeout" });
    expect(of(plain)).toMatchObject({ verdict: "allow" });
    expect(await redis.hmget(keys.limits("acme", timed), "s:budget", `job:${timed}:tmo`, `job:${timed}:sess`)).toEqual(["500000", "60000", "1"]);
    expect(await redis.hmget(keys.limits("acme", plain), "s:budget", `job:${plain}:tmo`, `job:${plain}:sess`)).toEqual(["100000", "-1", "0"]);
  });
});
