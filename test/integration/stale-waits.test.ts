/**
 * Stale and unanswerable waits on the real stack: an approval whose job ended leaves `oz0 approval list` (a
 * process) and the audit log closes it with the job's end; an `on_unknown` wait (LIM-11) is an
 * approval of kind unknown, listed and answered through `oz0 approval` (a process) with each of
 * happened, run again and stop, the job's decision following on `oz0.admissions`.
 */
import type { Producer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { parsePlugin } from "../../config/plugin.ts";
import { auditSinkAdmissions, auditSinkAudit, auditSinkCallDecisions, auditSinkLoopApprovals } from "../../processors/audit-sink/processor.ts";
import { selectEntries } from "../../processors/audit-sink/query.ts";
import { AuditLog } from "../../processors/audit-sink/store.ts";
import { limitsEnv } from "../../processors/limits/index.ts";
import { limitsJobsProcessor } from "../../processors/limits/jobs-processor.ts";
import { redisStandingStore, redisUnknownOutcomeStore } from "../../processors/limits/redis-store.ts";
import { sweepUnknownOutcomes, kafkaUnknownAnswers } from "../../processors/limits/unknown-deadlines.ts";
import type { UnknownOutcomeRequest } from "../../processors/limits/unknown-outcomes.ts";
import { loopApprovalsProcessor } from "../../processors/loops/approvals-processor.ts";
import { loopCallsProcessor, type LoopEnv } from "../../processors/loops/calls-processor.ts";
import { startLoopDeadlines } from "../../processors/loops/index.ts";
import { RedisLoopStore } from "../../processors/loops/redis-store.ts";
import type { WaitingApproval } from "../../processors/loops/waiting.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { RunningProcessor } from "../../processors/runner/runner.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { Decision, JobEvent, ResultDelivered, ToolCall } from "../../schemas/types.ts";
import { minioClient } from "../../store/objects.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { jobEvent, toolCall, uid } from "../support/events.ts";
import { collect, endpoints, kafka, serde, startOnKafka } from "../support/kafka.ts";
import { oz0 } from "../support/oz0.ts";
import { eventually } from "../support/promises.ts";

/** The audit log's test bucket, as the sinks' test uses: objects locked a day, runs add to it. */
const AUDIT_BUCKET = "oz0-audit-test";

/**
 * Records of `topic` matching `match`, each ID once: other processes on the same broker may run
 * the same processors on the same inputs (their own groups), and write the same decisions again.
 */
function distinct<T extends { id: string }>(topic: string, s: Serde, match: (v: T) => boolean, want: number): Promise<T[]> {
  const seen = new Set<string>();
  return collect<T>(topic, topic === "oz0.results-delivered" ? "ResultDelivered" : "Decision", s, (v) => match(v) && !seen.has(v.id) && seen.add(v.id) !== undefined, want, 60_000);
}

describe("LOOP-5 TOOL-3 LIM-11 stale and unanswerable waits, on the real stack", () => {
  let s: Serde;
  let redis: RedisClient;
  let producer: Producer;
  let audit: AuditLog;
  let timer: { stop(): Promise<void> } | undefined;
  const running: RunningProcessor[] = [];
  const tenant = uid("tenant").replace(/-/g, "_");
  const log = createLogger({ test: "stale-waits" }, () => {});
  const manifest = parsePlugin(readFileSync("config/examples/plugins/acme_docs.yaml", "utf8"), "acme_docs.yaml");
  const config = staticConfig([
    { kind: "agent", id: "acme-reviewer", value: { name: "acme-reviewer", tools: ["acme_docs"], limits: { tree: {} }, delegation: { allow: [] }, loops: {}, spend: {}, on_unknown: "wait" } },
    { kind: "plugin", id: "acme_docs", value: manifest.ok ? manifest.value : null },
  ]);

  const send = (topic: "oz0.jobs" | "oz0.tool-calls", key: string, schema: "JobEvent" | "ToolCall", value: JobEvent | ToolCall) => producer.send({ topic, messages: [{ key, value: s.encode(schema, value) }] });
  const started = (job: string): JobEvent => jobEvent(job, "started", { tenant, agent: "acme-reviewer", run_id: `run-${job}`, started_by: "person", ts: Date.now() });
  const ended = (job: string, outcome: string): JobEvent => ({ ...started(job), id: uid("evt"), kind: "ended", outcome });
  const mineIn = (entries: Awaited<ReturnType<AuditLog["read"]>>["entries"]) => selectEntries(entries, { tenant });

  beforeAll(async () => {
    s = await serde();
    redis = redisClient(endpoints());
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    audit = new AuditLog({ client: minioClient(endpoints()), bucket: AUDIT_BUCKET, mode: "COMPLIANCE", retentionDays: 1 });
    await audit.ensureBucket();
    const keys = new Keys();
    const store = new RedisLoopStore(redis, keys);
    const loops: LoopEnv = { config, store, standing: redisStandingStore(redis, keys) };
    running.push(
      await startOnKafka(limitsJobsProcessor, limitsEnv({ redis, config, keys }), s),
      await startOnKafka(loopCallsProcessor, loops, s),
      await startOnKafka(loopApprovalsProcessor, loops, s),
    );
    for (const p of [auditSinkAudit, auditSinkCallDecisions, auditSinkLoopApprovals, auditSinkAdmissions]) running.push(await startOnKafka<unknown, AuditLog>(p, audit, s));
    timer = await startLoopDeadlines({ store, kafka: kafka(), serde: s, log, intervalMs: 200, ended: { standing: redisStandingStore(redis, keys), config, everyMs: 300 } });
  }, 120_000);

  afterAll(async () => {
    await timer?.stop();
    await Promise.all(running.map((r) => r.stop()));
    await producer?.disconnect();
    redis?.disconnect();
  });

  it("LOOP-5 TOOL-3 an approval whose job ended (its runtime reported the end, as oz0 mcp does when its session closes) leaves oz0 approval list, its held call is refused with the ending, the audit log closes it, and an answer is refused", async () => {
    const job = uid("job");
    const run = `run-${job}`;
    await send("oz0.jobs", job, "JobEvent", started(job));
    const quote = toolCall({ tenant, tree_id: job, job_id: job, run_id: run, agent: "acme-reviewer", function: "quote", arguments: JSON.stringify({ plan: "pro" }), ts: Date.now() });
    await send("oz0.tool-calls", run, "ToolCall", quote);
    const [wait] = await distinct<Decision>("oz0.call-decisions", s, (d) => d.run_id === run, 1);
    expect(wait).toMatchObject({ verdict: "wait", reason_code: "ToolApproval" });
    const listed = await oz0(["approval", "list", "--tenant", tenant, "--json"]);
    expect(listed.code, listed.err).toBe(0);
    const [w] = (JSON.parse(listed.out) as WaitingApproval[]).filter((x) => x.job_id === job);
    if (!w) throw new Error(`the tool call is not listed: ${listed.out}`);

    // The session closes: its runtime reports the job's end.
    const results = distinct<ResultDelivered>("oz0.results-delivered", s, (r) => r.input_id === quote.id, 1);
    await send("oz0.jobs", job, "JobEvent", ended(job, "completed"));
    const [, closed] = await distinct<Decision>("oz0.call-decisions", s, (d) => d.run_id === run, 2);
    expect(closed).toMatchObject({ processor: "loop-approvals", verdict: "refuse", reason_code: "JobEnded", subject: quote.call_id });
    expect(closed?.message).toContain(`Approval ${w.approval} (kind tool) is closed with the job's end`);
    const [result] = await results;
    expect(result).toMatchObject({ is_error: true });

    const after = await oz0(["approval", "list", "--tenant", tenant, "--json"]);
    expect((JSON.parse(after.out) as WaitingApproval[]).filter((x) => x.job_id === job)).toEqual([]);
    const answer = await oz0(["approval", "approve", job, w.approval, "--as", "pat"]);
    expect([answer.code, answer.err]).toEqual([1, `approval ${w.approval} of job ${job} was closed with the job's end (JobEnded); nothing changed\n`]);

    const entries = await eventually(
      "the audit log closes the approval",
      async () => mineIn((await audit.read({ since: Date.now() - 3600_000 })).entries).filter((e) => e.job_id === job),
      (es) => es.some((e) => e.kind === "approval.decided") && es.some((e) => e.kind === "approval.answered"),
    );
    expect(entries.find((e) => e.kind === "approval.decided")).toMatchObject({ facts: { approval: w.approval, outcome: "closed", ending: "JobEnded" } });
    expect(entries.find((e) => e.kind === "approval.answered")).toMatchObject({ actor: "loop-deadlines", facts: { approval: w.approval, answer: "closed" } });
  });

  it("LOOP-5 an approval whose job ended is left out of oz0 approval list at once, before the timer closes it", async () => {
    const job = uid("job");
    await send("oz0.jobs", job, "JobEvent", started(job));
    const run = `run-${job}`;
    const calls = [1, 2, 3].map((i) => toolCall({ tenant, tree_id: job, job_id: job, run_id: run, agent: "acme-reviewer", arguments: '{"path":"a.md"}', ts: Date.now() + i }));
    // The timer is stopped meanwhile, so only the list's own check can leave it out.
    await timer?.stop();
    timer = undefined;
    for (const c of calls) await send("oz0.tool-calls", run, "ToolCall", c);
    const ds = await distinct<Decision>("oz0.call-decisions", s, (d) => d.run_id === run, 3);
    expect(ds.map((d) => d.verdict)).toEqual(["allow", "allow", "wait"]);
    const before = await oz0(["approval", "list", "--tenant", tenant, "--kind", "loop", "--json"]);
    const [w] = (JSON.parse(before.out) as WaitingApproval[]).filter((x) => x.job_id === job);
    if (!w) throw new Error("the loop is not listed");
    await send("oz0.jobs", job, "JobEvent", ended(job, "failed"));
    await eventually("the job's end is kept", () => redis.hget(new Keys().limits(tenant, job), `job:${job}:ended`), (v) => v === "1");
    const after = await oz0(["approval", "list", "--tenant", tenant, "--kind", "loop", "--json"]);
    expect((JSON.parse(after.out) as WaitingApproval[]).filter((x) => x.job_id === job)).toEqual([]);
    const deny = await oz0(["approval", "deny", job, w.approval, "--as", "pat"]);
    // Refused either way: before a timer closed it (this one is stopped; another process on the same stack may run one), or after.
    expect(deny.code).toBe(1);
    expect(deny.err).toMatch(new RegExp(`^approval ${w.approval} (is closed: job ${job} has ended \\(JobEnded\\), so the held call can no longer run|of job ${job} was closed with the job's end \\(JobEnded\\)); nothing changed\n$`));
  });

  describe("LIM-11 an on_unknown wait is an approval of kind unknown", () => {
    /** A root job that ended with an unknown outcome; its approval as oz0 approval list --kind unknown shows it. */
    async function unknownJob(): Promise<{ job: string; request: UnknownOutcomeRequest }> {
      const job = uid("job");
      await send("oz0.jobs", job, "JobEvent", started(job));
      await send("oz0.jobs", job, "JobEvent", ended(job, "unknown"));
      const [wait] = await distinct<Decision>("oz0.admissions", s, (d) => d.tree_id === job, 1);
      expect(wait).toMatchObject({ processor: "limits-jobs", verdict: "wait", reason_code: "unknown_outcome", limit: "on_unknown" });
      const list = await oz0(["approval", "list", "--kind", "unknown", "--tenant", tenant, "--json"]);
      expect(list.code, list.err).toBe(0);
      const mine = (JSON.parse(list.out) as UnknownOutcomeRequest[]).filter((r) => r.job_id === job);
      expect(mine).toHaveLength(1);
      expect((JSON.parse(wait?.evidence ?? "{}") as { approval: { id: string } }).approval.id).toBe(mine[0]?.approval);
      const text = await oz0(["approval", "list", "--tenant", tenant]);
      expect(text.out).toContain(`${mine[0]?.approval}  unknown  job ${job}  tenant ${tenant}`);
      return { job, request: mine[0] as UnknownOutcomeRequest };
    }
    /** The answer on oz0.admissions for the job (the wait is limits-jobs'). */
    const answerOf = async (job: string) => (await distinct<Decision>("oz0.admissions", s, (d) => d.tree_id === job && d.processor !== "limits-jobs", 1))[0];

    it("LIM-11 happened: oz0 approval approve --outcome happened allows the job with reason happened, audited with who and why", async () => {
      const { job, request } = await unknownJob();
      const bare = await oz0(["approval", "approve", job, request.approval]);
      expect([bare.code, bare.err]).toEqual([2, expect.stringMatching(/--outcome happened \(it happened\) or --outcome run_again/)]);
      const yes = await oz0(["approval", "approve", job, request.approval, "--outcome", "happened", "--as", "pat", "--comment", "the mail went out"]);
      expect(yes.code, yes.err).toBe(0);
      expect(yes.out).toBe(`approved ${request.approval} as pat: job ${job}'s outcome happened\n`);
      expect(await answerOf(job)).toMatchObject({ processor: "person:pat", verdict: "allow", reason_code: "happened", job_id: job });
      const again = await oz0(["approval", "deny", job, request.approval]);
      expect([again.code, again.err]).toEqual([1, `approval ${request.approval} of job ${job} was answered already (happened) by person:pat; nothing changed\n`]);
      const listed = await oz0(["approval", "list", "--kind", "unknown", "--tenant", tenant, "--json"]);
      expect((JSON.parse(listed.out) as UnknownOutcomeRequest[]).some((r) => r.approval === request.approval)).toBe(false);
      const entries = await eventually(
        "the audit log holds the answer",
        async () => mineIn((await audit.read({ since: Date.now() - 3600_000 })).entries).filter((e) => e.job_id === job && e.kind === "approval.answered"),
        (es) => es.length > 0,
      );
      expect(entries[0]).toMatchObject({ actor: "pat", reason: "the mail went out", facts: { approval: request.approval, kind: "unknown", answer: "happened" } });
    });

    it("LIM-11 run again: oz0 approval approve --outcome run_again allows the job with reason run_again", async () => {
      const { job, request } = await unknownJob();
      const wrong = await oz0(["approval", "approve", "job-other", request.approval, "--outcome", "run_again"]);
      expect([wrong.code, wrong.err]).toEqual([1, `approval ${request.approval} belongs to job ${job}, not job-other\n`]);
      const yes = await oz0(["approval", "approve", job, request.approval, "--outcome", "run_again", "--as", "pat", "--json"]);
      expect(yes.code, yes.err).toBe(0);
      expect(JSON.parse(yes.out)).toMatchObject({ approval: request.approval, kind: "unknown", outcome: "run_again", by: "pat" });
      expect(await answerOf(job)).toMatchObject({ processor: "person:pat", verdict: "allow", reason_code: "run_again" });
    });

    it("LIM-11 stop: oz0 approval deny stops the job with unknown_outcome; past its deadline nobody answered, the timer stops it", async () => {
      const { job, request } = await unknownJob();
      const no = await oz0(["approval", "deny", job, request.approval, "--as", "pat"]);
      expect(no.code, no.err).toBe(0);
      expect(no.out).toBe(`denied ${request.approval} as pat: job ${job} fails with unknown_outcome\n`);
      expect(await answerOf(job)).toMatchObject({ processor: "person:pat", verdict: "stop", reason_code: "unknown_outcome" });

      const late = await unknownJob();
      const store = redisUnknownOutcomeStore(redis, new Keys());
      const p = kafka().producer({ idempotent: true });
      await p.connect();
      try {
        // Swept as the pipeline's timer does, at a time past its deadline (a day by default).
        expect(await sweepUnknownOutcomes(store, kafkaUnknownAnswers(p, s), late.request.deadline + 1)).toBeGreaterThanOrEqual(1);
      } finally {
        await p.disconnect();
      }
      expect(await answerOf(late.job)).toMatchObject({ processor: "unknown-deadlines", verdict: "stop", reason_code: "unknown_outcome" });
      const gone = await oz0(["approval", "approve", late.job, late.request.approval, "--outcome", "happened"]);
      expect([gone.code, gone.err]).toEqual([1, expect.stringMatching(/was answered already \(stop\) by unknown-deadlines/)]);
    });
  });
});
