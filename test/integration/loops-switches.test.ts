import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Producer } from "kafkajs";
import { loopApprovalsProcessor } from "../../processors/loops/approvals-processor.ts";
import { loopCallsProcessor, type LoopEnv } from "../../processors/loops/calls-processor.ts";
import { escalationNotice, startDeadlineTimer, kafkaAnswers } from "../../processors/loops/deadlines.ts";
import { RedisLoopStore } from "../../processors/loops/redis-store.ts";
import { ConfigTable, staticConfig } from "../../processors/runner/config-table.ts";
import { endpointsEnv, EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { AuditEvent, Decision, ResultDelivered, ToolCall } from "../../schemas/types.ts";
import { Keys } from "../../store/redis/keys.ts";
import { toolCall, uid } from "../support/events.ts";
import { collect, endpoints, kafka, serde, startOnKafka } from "../support/kafka.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";

const run = promisify(execFile);
const log = createLogger({ test: "loops-switches" }, () => {});

function cli(script: string, args: string[]) {
  const e = endpoints();
  const env = {
    ...process.env,
    ...endpointsEnv(e),
    OZ0_LOG_LEVEL: "error",
  };
  return run("npx", ["tsx", script, ...args], { env, timeout: 120_000 }).then(
    (r) => ({ code: 0, out: r.stdout }),
    (err: { code?: number; stdout?: string }) => ({ code: err.code ?? 1, out: err.stdout ?? "" }),
  );
}

describe("loop escalation and the kill switch on the real broker and Redis", () => {
  let s: Serde;
  let redis: RedisClient;
  let producer: Producer;
  const keys = new Keys(uid("t").replace(/-/g, "_"));

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

  const sendCalls = (runId: string, calls: ToolCall[]) => producer.send({ topic: "oz0.tool-calls", messages: calls.map((c) => ({ key: runId, value: s.encode("ToolCall", c) })) });

  it("LOOP-5 a waiting loop escalates once per step by the timer, a step published again (a restart, a second timer) changes nothing, and the deadline still stops the job", async () => {
    const config = staticConfig([{ kind: "tenant", id: "ladder", value: { loops: {}, approvals: { deadline: 6_000, escalation: [{ after: 1_000, to: "team-leads" }] } } }]);
    const env: LoopEnv = { config, store: new RedisLoopStore(redis, keys) };
    const runId = uid("run");
    const now = Date.now();
    const calls = [1, 2, 3].map(() => toolCall({ run_id: runId, tenant: "ladder", arguments: '{"path":"a.md"}', ts: now }));
    const running = [await startOnKafka(loopCallsProcessor, env, s), await startOnKafka(loopApprovalsProcessor, env, s)];
    const answers = kafka().producer({ allowAutoTopicCreation: false });
    await answers.connect();
    let timer = startDeadlineTimer({ store: env.store, publish: kafkaAnswers(answers, s), log, intervalMs: 200 });
    // Another pipeline replaying the topic may decide the same calls again, under the same IDs and later: the first of each ID is ours.
    const first = new Set<string>();
    const decisionsOf = (want: number, settleMs = 0) => {
      first.clear();
      return collect<Decision>("oz0.call-decisions", "Decision", s, (d) => d.run_id === runId && d.processor.startsWith("loop-") && !first.has(d.id) && Boolean(first.add(d.id)), want, 60_000, settleMs);
    };
    try {
      await sendCalls(runId, calls);
      // The fourth: collect may read past what it was asked for.
      const escalated = (await decisionsOf(4))[3];
      expect(escalated).toMatchObject({ processor: "loop-approvals", verdict: "wait", reason_code: "LoopEscalated", subject: calls[2]?.call_id, numbers: { step: 1 } });
      expect(escalated?.message).toMatch(/goes to team-leads as well/);

      // A restart: a new timer, and the same step published again by hand.
      await timer.stop();
      timer = startDeadlineTimer({ store: env.store, publish: kafkaAnswers(answers, s), log, intervalMs: 200 });
      const approval = (JSON.parse(escalated?.evidence ?? "null") as { approval: { id: string } }).approval.id;
      await kafkaAnswers(answers, s)([escalationNotice({ approval, at: now + 1_000, tenant: "ladder", tree_id: calls[2]?.tree_id ?? "", job_id: calls[2]?.job_id ?? "", run_id: runId, call_id: calls[2]?.call_id ?? "", step: 1, to: "team-leads" })]);

      const all = await decisionsOf(5, 2_000);
      expect(all.filter((d) => d.reason_code === "LoopEscalated")).toHaveLength(1);
      expect(all.slice(0, 5).map((d) => `${d.processor}:${d.verdict}:${d.reason_code ?? ""}`)).toEqual(["loop-calls:allow:", "loop-calls:allow:", "loop-calls:wait:LoopDetected", "loop-approvals:wait:LoopEscalated", "loop-approvals:stop:LoopDetected"]);
      expect((await redis.zrange(keys.loopDeadlines(), 0, -1)).filter((m) => m.includes(runId))).toEqual([]);
    } finally {
      await timer.stop();
      await answers.disconnect();
      await Promise.all(running.map((r) => r.stop()));
    }
  });

  it("LOOP-9 npm run config -- kill-switch throws a switch every loop-calls refuses with its reason, writes the audit entries, and --off releases it", async () => {
    const plugin = uid("plugin").replace(/-/g, "_");
    const tool = `${plugin}/search`;
    const reason = uid("it deletes pages when it loops");
    expect((await cli("bin/config.ts", ["kill-switch", tool])).out).toMatch(/with a reason/);
    const thrown = await cli("bin/config.ts", ["kill-switch", tool, "--reason", reason, "--by", "ops-anna"]);
    expect(thrown.out).toMatch(new RegExp(`thrown +kill switch on ${tool}`));
    expect(thrown.code).toBe(0);
    expect((await cli("bin/config.ts", ["kill-switch", tool, "--reason", "again"])).out).toMatch(/nothing changed: the kill switch on .* is already thrown/);

    let released = false;
    const table = await ConfigTable.start(kafka(), s, log);
    const runId = uid("run");
    const running = await startOnKafka(loopCallsProcessor, { config: table, store: new RedisLoopStore(redis, keys) }, s);
    try {
      expect(table.get("kill_switch", tool)).toMatchObject({ plugin, tool: "search", reason, by: "ops-anna" });
      const call = toolCall({ run_id: runId, tenant: uid("tenant"), plugin, tool: "search", function: "find" });
      await sendCalls(runId, [call]);
      const [refused] = await collect<Decision>("oz0.call-decisions", "Decision", s, (d) => d.run_id === runId, 1);
      expect(refused).toMatchObject({ verdict: "refuse", reason_code: "KillSwitch" });
      expect(refused?.message).toContain(`The tool ${tool} is switched off in every tenant by a kill switch`);
      expect(refused?.message).toContain(reason);
      const [result] = await collect<ResultDelivered>("oz0.results-delivered", "ResultDelivered", s, (r) => r.run_id === runId, 1);
      expect(result).toMatchObject({ call_id: call.call_id, is_error: true, processor: "loop-calls" });
      expect(result?.content).toContain(reason);

      const release = await cli("bin/config.ts", ["kill-switch", tool, "--off", "--reason", "fixed in 2.3", "--by", "ops-anna"]);
      expect(release.out).toMatch(new RegExp(`released +kill switch on ${tool}`));
      released = true;
      const audit = await collect<AuditEvent>("oz0.audit", "AuditEvent", s, (a) => a.facts.plugin === plugin, 2);
      expect(audit.map((a) => [a.kind, a.reason, a.actor, a.tenant])).toEqual([
        ["kill_switch.thrown", reason, "ops-anna", null],
        ["kill_switch.released", "fixed in 2.3", "ops-anna", null],
      ]);
      const until = Date.now() + 30_000;
      while (table.get("kill_switch", tool) !== undefined && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
      expect(table.get("kill_switch", tool)).toBeUndefined();
      const again = toolCall({ run_id: runId, tenant: call.tenant, plugin, tool: "search", function: "find" });
      await sendCalls(runId, [again]);
      const after = await collect<Decision>("oz0.call-decisions", "Decision", s, (d) => d.run_id === runId, 2);
      expect(after[1]).toMatchObject({ subject: again.call_id, verdict: "allow" });
    } finally {
      await running.stop();
      await table.stop();
      // The topic is shared: a failed run leaves no switch thrown.
      if (!released) await cli("bin/config.ts", ["kill-switch", tool, "--off", "--reason", "the test that threw it failed"]);
    }
  });

  it("LOOP-9 npm run loops -- report lists the tools looping in three or more tenants with their risk class and kill switch", async () => {
    // The command reads the pipeline's own keys (prefix oz0): this test's counts use names of its own and are removed after.
    const live = new Keys();
    const plugin = uid("plugin").replace(/-/g, "_");
    const day = new Date().toISOString().slice(0, 10);
    const counts = ["t1", "t2", "t3", "t3"].map((tenant) => ({ id: uid("loop"), day, tenant: `${plugin}-${tenant}`, plugin, tool: "fetch" }));
    const runId = uid("run");
    await new RedisLoopStore(redis, live).write("calls", [{ tenant: plugin, run: runId, source: "oz0.tool-calls:0", at: "1", from: "1", state: "{}", memos: [], flags: [], deadlines: [], settled: [], counts }]);
    try {
      const out = await cli("bin/loops.ts", ["report", "--json"]);
      expect(out.code).toBe(0);
      const report = JSON.parse(out.out) as { days: number; min_tenants: number; tools: Array<{ plugin: string }> };
      expect(report).toMatchObject({ days: 7, min_tenants: 3 });
      expect(report.tools.filter((t) => t.plugin === plugin)).toEqual([{ plugin, tool: "fetch", tenants: [`${plugin}-t1`, `${plugin}-t2`, `${plugin}-t3`], loops: 4, risk: null, kill_switch: null }]);
      const text = await cli("bin/loops.ts", ["report", "--min-tenants", "3"]);
      expect(text.out).toContain(`${plugin}/fetch  3 tenants (${plugin}-t1, ${plugin}-t2, ${plugin}-t3), 4 loops, risk not declared, kill switch: off`);
      expect((await cli("bin/loops.ts", ["rapport"])).code).toBe(2);
    } finally {
      await redis.hdel(live.loopStats(day, "counts"), ...["t1", "t2", "t3"].map((t) => `${plugin}-${t}|${plugin}|fetch`));
      await redis.srem(live.loopStats(day, "counted"), ...counts.map((c) => c.id));
      await redis.del(live.loopLane(plugin, runId, "calls"), live.loopFlags(plugin, runId));
    }
  });
});
