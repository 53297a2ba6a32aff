/**
 * A runtime is never left waiting for nothing: an ask the pipeline dead-letters (a
 * key of the wrong type planted over its tree's limits in Redis) is answered at once through
 * the runtime client, with a refusal that gives the dead letter's reason, and the dead letter
 * stays on oz0.dead-letter. The real broker, registry and Redis; the limits processors on Kafka.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentDefinition } from "../../config/agent.ts";
import { DEAD_LETTERED } from "../../client/dead-letters.ts";
import { RuntimeClient } from "../../client/runtime-client.ts";
import { limitsEnv } from "../../processors/limits/index.ts";
import { limitsJobsProcessor } from "../../processors/limits/jobs-processor.ts";
import { limitsModelCallsProcessor } from "../../processors/limits/model-calls-processor.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { RunningProcessor } from "../../processors/runner/runner.ts";
import type { DeadLetter, JobEvent, ModelCall } from "../../schemas/types.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { uid } from "../support/events.ts";
import { endpoints, kafka, serde, startOnKafka } from "../support/kafka.ts";

describe("SYS-1 a dead-lettered ask answered at once through the runtime client", () => {
  let redis: RedisClient;
  let client: RuntimeClient;
  const running: RunningProcessor[] = [];
  const planted: string[] = [];
  const tenant = uid("dl-acme");
  const keys = new Keys(uid("dl").replace(/-/g, "_"));
  const boss: AgentDefinition = { name: "boss", tools: [], limits: { tree: {}, max_cost_usd: 1 }, delegation: { allow: [] }, loops: {}, spend: {} };

  const ask = (tree: string): ModelCall => ({ id: uid("evt"), tenant, tree_id: tree, job_id: tree, run_id: `${tree}-run`, request_id: uid("req"), kind: "ask", model: "claude-sonnet-4", input_tokens: 1_000, max_output_tokens: 500, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, agent: "boss", ts: Date.now() });
  const childAsk = (tree: string): JobEvent => ({ id: uid("evt"), tenant, tree_id: tree, job_id: `${tree}-child`, parent_job_id: tree, run_id: `${tree}-child-run`, agent: "boss", kind: "child_ask", started_by: "agent", delegation: "delegation", depth: 1, outcome: null, principal: "person-1", team: null, permissions: [], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts: Date.now() });

  /** A string where the limits processors keep a hash: every input of the tree is refused for good. */
  async function poison(tree: string): Promise<void> {
    // Under this test's keys, and under the pipeline's own, in case a pipeline of another test reads the topic too.
    for (const key of [keys.limits(tenant, tree), new Keys().limits(tenant, tree)]) {
      await redis.set(key, "planted by hand");
      planted.push(key);
    }
  }

  beforeAll(async () => {
    const s = await serde();
    redis = redisClient(endpoints());
    const env = limitsEnv({ redis, config: staticConfig([{ kind: "agent", id: "boss", value: boss }]), keys });
    running.push(await startOnKafka(limitsModelCallsProcessor, env, s), await startOnKafka(limitsJobsProcessor, env, s));
    client = await RuntimeClient.connect(endpoints(), { log: createLogger({ test: "runtime-client-dead-letters" }, () => {}) });
    // A healthy ask first: the processors and the client's reader have fetched once.
    expect((await client.askModelCall(ask(uid("warm")), 60_000)).verdict).toBe("allow");
  }, 120_000);

  afterAll(async () => {
    await client?.close();
    await Promise.all(running.map((r) => r.stop()));
    if (redis) {
      if (planted.length > 0) await redis.del(...planted);
      redis.disconnect();
    }
  });

  it("SYS-1 a model-call ask dead-lettered by limits-model-calls is refused within a second, with the dead letter's reason; the dead letter stays on its topic", async () => {
    const tree = uid("poisoned");
    await poison(tree);
    const a = ask(tree);
    const ends = await deadLetterEnds();
    const started = Date.now();
    const answer = await client.askModelCall(a, 30_000);
    const took = Date.now() - started;
    expect(answer).toMatchObject({ input_id: a.id, verdict: "refuse", reason_code: DEAD_LETTERED, tenant, tree_id: tree, subject: a.request_id });
    expect(answer.message).toContain("could not decide this model-call ask");
    expect(answer.message).toContain("WRONGTYPE Operation against a key holding the wrong kind of value");
    expect(answer.message).toContain("limits-model-calls dead-lettered it");
    expect(took, `answered in ${took} ms`).toBeLessThan(1_000);

    // The dead letter is still there, named by the refusal's evidence, with the ask's bytes for republishing.
    const named = (JSON.parse(answer.evidence ?? "{}") as { dead_letter: { id: string; topic: string; processor: string } }).dead_letter;
    expect(named).toMatchObject({ topic: "oz0.model-calls", processor: "limits-model-calls" });
    const kept = await readDeadLetter(named.id, ends);
    expect(kept.reason).toContain("WRONGTYPE");
    const original = await (await serde()).decode<ModelCall>("ModelCall", kept.value);
    expect(original.id).toBe(a.id);
  }, 60_000);

  it("SYS-1 a child ask dead-lettered by limits-jobs is refused within a second, not started", async () => {
    const tree = uid("poisoned");
    await poison(tree);
    const child = childAsk(tree);
    const started = Date.now();
    const answer = await client.askChild(child, 30_000);
    const took = Date.now() - started;
    expect(answer).toMatchObject({ input_id: child.id, verdict: "refuse", reason_code: DEAD_LETTERED });
    expect(answer.message).toContain("could not decide this child ask");
    expect(answer.message).toContain("WRONGTYPE");
    expect(took, `answered in ${took} ms`).toBeLessThan(1_000);
  }, 60_000);

  it("SYS-1 a client that does not read dead letters still waits for its timeout (the answer comes from the dead letter alone)", async () => {
    const quiet = await RuntimeClient.connect(endpoints(), { log: createLogger({ test: "runtime-client-dead-letters" }, () => {}), deadLetters: false });
    try {
      const tree = uid("poisoned");
      await poison(tree);
      await expect(quiet.askModelCall(ask(tree), 3_000)).rejects.toMatchObject({ name: "NoAnswer" });
    } finally {
      await quiet.close();
    }
  }, 60_000);
});

/** The ends of oz0.dead-letter's partitions now: where a dead letter made from now on is to be found. */
async function deadLetterEnds(): Promise<Map<number, string>> {
  const admin = kafka(uid("dl-admin")).admin();
  await admin.connect();
  try {
    return new Map((await admin.fetchTopicOffsets("oz0.dead-letter")).map((p) => [p.partition, p.high]));
  } finally {
    await admin.disconnect();
  }
}

/** The dead letter `id` on oz0.dead-letter, made after `ends` were read, as `oz0 doctor` reads them. */
async function readDeadLetter(id: string, ends: Map<number, string>): Promise<DeadLetter> {
  const s = await serde();
  const group = uid("dl-reader");
  const consumer = kafka(group).consumer({ groupId: group });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: ["oz0.dead-letter"] });
    return await new Promise<DeadLetter>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no dead letter ${id} on oz0.dead-letter`)), 30_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          const dl = await s.decode<DeadLetter>("DeadLetter", message.value);
          if (dl.id !== id) return;
          clearTimeout(timer);
          resolve(dl);
        },
      });
      for (const [partition, offset] of ends) consumer.seek({ topic: "oz0.dead-letter", partition, offset });
    });
  } finally {
    await consumer.disconnect();
    const admin = kafka(group).admin();
    await admin.connect();
    await admin.deleteGroups([group]).catch(() => undefined);
    await admin.disconnect();
  }
}
