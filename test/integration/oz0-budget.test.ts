import type { Producer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentDefinition } from "../../config/agent.ts";
import type { BudgetRequest } from "../../processors/limits/budget-requests.ts";
import { limitsEnv } from "../../processors/limits/index.ts";
import { limitsJobsProcessor } from "../../processors/limits/jobs-processor.ts";
import { limitsModelCallsProcessor } from "../../processors/limits/model-calls-processor.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import type { RunningProcessor } from "../../processors/runner/runner.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { AuditEvent, Decision, JobEvent, ModelCall } from "../../schemas/types.ts";
import { Keys } from "../../store/redis/keys.ts";
import { uid } from "../support/events.ts";
import { oz0 } from "../support/oz0.ts";
import { collect, endpoints, kafka, serde, startOnKafka } from "../support/kafka.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";


describe("oz0 approval: a budget request waits for a person, is listed, and is approved with a larger budget or denied", () => {
  let s: Serde;
  let redis: RedisClient;
  let producer: Producer;
  const running: RunningProcessor[] = [];
  const tenant = uid("tenant").replace(/-/g, "_");
  // sonnet, 1,000 in and 1,000 out: $0.018 worst case, past a strict $0.01 budget at the first ask.
  const boss: AgentDefinition = { name: "budget-boss", tools: [], limits: { tree: {}, max_cost_usd: 0.01, reserve: "strict" }, delegation: { allow: [] }, loops: {}, spend: {} };

  const start = (tree: string): JobEvent => ({ id: uid("evt"), tenant, tree_id: tree, job_id: tree, parent_job_id: null, run_id: "run-root", agent: boss.name, kind: "started", started_by: "person", delegation: "none", depth: 0, outcome: null, principal: "pat", team: null, permissions: [], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts: Date.now() });
  const ask = (tree: string): ModelCall => ({ id: uid("evt"), tenant, tree_id: tree, job_id: tree, run_id: "run-root", request_id: uid("req"), kind: "ask", model: "claude-sonnet-4", input_tokens: 1_000, max_output_tokens: 1_000, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, agent: boss.name, ts: Date.now() });
  const admissions = (tree: string, want: number) => collect<Decision>("oz0.admissions", "Decision", s, (d) => d.tree_id === tree, want, 60_000);

  /** A new tree whose first ask waits for a budget request; the request as listed. */
  async function waiting(): Promise<{ tree: string; request: BudgetRequest }> {
    const tree = uid("tree");
    await producer.send({ topic: "oz0.jobs", messages: [{ key: tree, value: s.encode("JobEvent", start(tree)) }] });
    await producer.send({ topic: "oz0.model-calls", messages: [{ key: tree, value: s.encode("ModelCall", ask(tree)) }] });
    const [wait] = await admissions(tree, 1);
    expect(wait).toMatchObject({ verdict: "wait", reason_code: "BudgetExceeded" });
    const list = await oz0(["approval", "list", "--kind", "budget", "--tenant", tenant, "--json"]);
    expect(list.code, list.err).toBe(0);
    const mine = (JSON.parse(list.out) as BudgetRequest[]).filter((r) => r.tree_id === tree);
    expect(mine).toHaveLength(1);
    expect((JSON.parse(wait?.evidence ?? "null") as { approval: { id: string } }).approval.id).toBe(mine[0]?.approval);
    return { tree, request: mine[0] as BudgetRequest };
  }

  beforeAll(async () => {
    s = await serde();
    redis = redisClient(endpoints());
    const env = limitsEnv({ redis, config: staticConfig([{ kind: "agent", id: boss.name, value: boss }]), keys: new Keys() });
    running.push(await startOnKafka(limitsJobsProcessor, env, s), await startOnKafka(limitsModelCallsProcessor, env, s));
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
  }, 120_000);

  afterAll(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await producer?.disconnect();
    redis?.disconnect();
  });

  it("LIM-7 approved with --budget, the tree's budget is raised, the job is told it may ask again, and its next ask goes ahead; audited with who", async () => {
    const { tree, request } = await waiting();
    const text = await oz0(["approval", "list", "--tenant", tenant]);
    expect(text.out).toContain(`${request.approval}  budget  tenant ${tenant}  job ${tree}  BudgetExceeded (limits.max_cost_usd)`);
    const bare = await oz0(["approval", "approve", tree, request.approval]);
    expect([bare.code, bare.err]).toEqual([2, expect.stringMatching(/--budget USD, above its \$0\.01/)]);

    const yes = await oz0(["approval", "approve", tree, request.approval, "--budget", "1", "--as", "pat", "--comment", "the report needs it", "--json"]);
    expect(yes.code, yes.err).toBe(0);
    expect(JSON.parse(yes.out)).toMatchObject({ approval: request.approval, answer: "approved", by: "pat", budget_usd: 1 });
    expect(await redis.hget(new Keys().limits(tenant, tree), "s:budget")).toBe("1000000");
    const again = await oz0(["approval", "approve", tree, request.approval, "--budget", "2"]);
    expect([again.code, again.err]).toEqual([1, expect.stringMatching(/was approved already by person:pat/)]);

    await producer.send({ topic: "oz0.model-calls", messages: [{ key: tree, value: s.encode("ModelCall", ask(tree)) }] });
    const ds = await admissions(tree, 3);
    expect(ds.map((d) => [d.processor, d.verdict])).toEqual([
      ["limits-model-calls", "wait"],
      ["person:pat", "allow"],
      ["limits-model-calls", "allow"],
    ]);
    expect(ds[1]).toMatchObject({ subject: request.subject, reason_code: "BudgetApproved", numbers: { budget_usd: 1 } });
    const [entry] = await collect<AuditEvent>("oz0.audit", "AuditEvent", s, (e) => e.kind === "approval.answered" && e.tree_id === tree, 1, 60_000);
    expect(entry).toMatchObject({ actor: "pat", reason: "the report needs it", facts: { approval: request.approval, kind: "budget", answer: "approve" } });
    const listed = await oz0(["approval", "list", "--kind", "budget", "--tenant", tenant, "--json"]);
    expect((JSON.parse(listed.out) as BudgetRequest[]).some((r) => r.approval === request.approval)).toBe(false);
  });

  it("LIM-7 denied, the job is told it fails with BudgetExceeded; a wrong job or an unknown approval says so", async () => {
    const { tree, request } = await waiting();
    const wrong = await oz0(["approval", "deny", "another-job", request.approval]);
    expect([wrong.code, wrong.err]).toEqual([1, expect.stringMatching(new RegExp(`belongs to job ${tree}`))]);
    const unknown = await oz0(["approval", "deny", tree, "b-000000000000"]);
    expect([unknown.code, unknown.err]).toEqual([1, expect.stringMatching(/no budget request waits on approval b-000000000000/)]);
    const no = await oz0(["approval", "deny", tree, request.approval, "--as", "pat"]);
    expect(no.code, no.err).toBe(0);
    expect(no.out).toMatch(/fails with BudgetExceeded/);
    const ds = await admissions(tree, 2);
    expect(ds[1]).toMatchObject({ processor: "person:pat", verdict: "stop", reason_code: "BudgetExceeded", subject: request.subject });
  });
});
