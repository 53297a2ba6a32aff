/**
 * End-to-end through the runtime client: the whole pipeline of `npm start` runs in this
 * process (topology/run.ts), every event is published and every answer awaited through the
 * RuntimeClient as a runtime does, and what the trace sink and the audit sink kept is read
 * back with the readers `npm run trace` and `npm run audit` use.
 *
 * The pipeline's groups have a prefix of this run and start at their inputs' end, so they
 * handle this file's events only, whatever earlier tests left on the shared topics and
 * whoever else runs a pipeline on them. The agents are `test/fixtures/e2e-config/`, published
 * to oz0.config as the load test publishes its own. The cases that need neither a broker nor
 * the sinks' MinIO run on the whole topology in memory instead
 * (`test/unit/topology/app-test-driver.test.ts`, `topology/app-test-driver.ts`).
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import kafkajs from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publishLoadConfig } from "../../bench/load/publish-config.ts";
import { untilReady } from "../../bench/load/run.ts";
import { startPipeline, type Pipeline } from "../../topology/run.ts";
import { RuntimeClient, readResultCall } from "../../client/runtime-client.ts";
import { formatTrace, JOB_END_SECTION, type JobTrace } from "../../client/trace-format.ts";
import { selectEntries } from "../../processors/audit-sink/query.ts";
import { FIT_SECTION, OFFLOAD_SECTION, type FitNote } from "../../processors/fit-results/processor.ts";
import { TRACE_SECTION as LOOP_SECTION } from "../../processors/loops/outputs.ts";
import { READ_SECTION } from "../../processors/read-result/processor.ts";
import { kafkaConfig } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { sinkStores, type SinkStores } from "../../processors/sinks.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Serde } from "../../schemas/serde.ts";
import type { AuditEvent, Decision, ResultDelivered, ToolCall } from "../../schemas/types.ts";
import { uid } from "../support/events.ts";
import { E2E_PLUGIN, e2eJobs, type Job } from "../support/e2e-jobs.ts";
import { endpoints } from "../support/kafka.ts";
import { eventually } from "../support/promises.ts";

const CONFIG_DIR = fileURLToPath(new URL("../fixtures/e2e-config/", import.meta.url));
const PLUGIN = E2E_PLUGIN;
/** Every await of an answer, and every wait for the sinks, is bounded by this. */
const ANSWER_MS = 60_000;
/**
 * The audit sink writes to the tests' bucket, locked for a day (docs/sinks.md); the traces go
 * to the default bucket, whose parts expire after 30 days, so its expiry rule is not changed.
 */
const SINK_ENV = { OZ0_AUDIT_BUCKET: "oz0-audit-test", OZ0_AUDIT_RETENTION_DAYS: "1", OZ0_AUDIT_LOCK_MODE: "COMPLIANCE" } as const;

/** A page under e2e-reader's offload threshold (2,000 tokens), fitted to a budget of 300. */
const PAGE = ["# Setup guide", "", "Read this before you start.", ...Array.from({ length: 30 }, (_, i) => `## Step ${i}\n\nStep ${i} says to do thing ${i}, then to check that thing ${i} worked before going on.`)].join("\n");
/** A manual over the threshold: offloaded whole, the model reads a stub. */
const MANUAL = ["# Manual", "", "The manual starts here. It is long.", ...Array.from({ length: 150 }, (_, i) => `## Part ${i}\n\nPart ${i} begins here. It goes on about topic ${i} for a while, and then about topic ${i} some more.`)].join("\n");

const { rootJob, childJob, jobEvent, toolCall, resultOf } = e2eJobs("e2e");

interface Answer {
  content: Array<{ type: string; text: string }>;
  structuredContent?: { content?: string; truncated?: boolean; fit?: FitNote; offloaded?: { ref: string; size: number; tokens: number; lines: number }; outline?: string };
  _meta?: Record<string, unknown>;
  isError?: boolean;
}

const answerOf = (d: ResultDelivered): Answer => JSON.parse(d.content) as Answer;

describe("end to end through the runtime client, on the whole pipeline in this process", () => {
  const run = randomUUID().slice(0, 8);
  const log = createLogger({ test: "e2e" }, () => {});
  const saved = new Map<string, string | undefined>();
  let pipeline: Pipeline | undefined;
  let client: RuntimeClient;
  let stores: SinkStores;
  // The trace index is read from Redis beside the objects in MinIO.
  let traceIndex: RedisClient | undefined;

  beforeAll(async () => {
    for (const [k, v] of Object.entries(SINK_ENV)) {
      saved.set(k, process.env[k]);
      process.env[k] = v;
    }
    const e = endpoints();
    const kafka = new kafkajs.Kafka({ ...kafkaConfig(`oz0-e2e-${run}`, e, process.env, log), logLevel: kafkajs.logLevel.ERROR });
    const serde = new Serde({ registryUrl: e.registryUrl });
    await serde.registerAll();
    await publishLoadConfig(kafka, serde, log, { dir: CONFIG_DIR, reason: "end-to-end test agents" });
    pipeline = await startPipeline(e, log, { ops: { host: "127.0.0.1", port: 0 }, groupPrefix: `oz0.e2e-${run}.`, startAt: "end" });
    await untilReady(pipeline, 120_000);
    traceIndex = redisClient(e);
    stores = { ...sinkStores(e), traces: sinkStores(e).traces.indexed(traceIndex) };
    client = await RuntimeClient.connect(e, { log, timeoutMs: ANSWER_MS });
  }, 240_000);

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    traceIndex?.disconnect();
    if (pipeline) {
      const p = pipeline;
      await p.stop().catch(() => undefined);
      // The groups were this run's alone: nothing resumes them.
      const admin = p.kafka.admin();
      await admin.connect().then(() => admin.deleteGroups([...p.groups.values()]).catch(() => undefined), () => undefined);
      await admin.disconnect().catch(() => undefined);
    }
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }, 120_000);

  const trace = (job: { job_id: string; tenant: string }, done: (t: JobTrace) => boolean): Promise<JobTrace> => eventually(`the trace of ${job.job_id} as expected`, () => stores.traces.read(job.job_id, job.tenant), done);

  const audit = (tenant: string, done: (entries: AuditEvent[]) => boolean): Promise<AuditEvent[]> =>
    eventually(`the audit log of ${tenant} as expected`, async () => selectEntries((await stores.audit.read()).entries, { tenant }), done);

  const ended = (t: JobTrace, outcome: string): boolean => (t.jobs ?? []).some((j) => j.kind === "ended" && j.outcome === outcome);

  it("SYS-1 the processors run as two groups reading each input once; a call's loop check is chained after its fill-in, and the filled call is still published", async () => {
    const p = pipeline as Pipeline;
    const groups = [...new Set(p.groups.values())].sort();
    expect(groups).toEqual([`oz0.e2e-${run}.pipeline`, `oz0.e2e-${run}.sinks`]);
    const loopCalls = p.running.find((r) => r.name === "loop-calls");
    expect(loopCalls).toMatchObject({ input: "oz0.tool-calls", consumes: "oz0.tool-calls.requested" });

    const job = rootJob(uid("e2e-acme"), "e2e-reader");
    await client.publishJobEvents([jobEvent(job, "started")]);
    // A model's call of a fitted tool without a budget: the fill-in adds one, and the loop detector decides the filled call.
    const call = toolCall(job, { path: "docs/setup.md", view: "summary" });
    const decision = await client.requestToolCall(call);
    expect(decision).toMatchObject({ input_id: call.id, processor: "loop-calls", verdict: "allow" });

    // The filled call is on oz0.tool-calls, as every other reader of the topic sees it.
    const kafka = p.kafka;
    const reader = kafka.consumer({ groupId: `oz0.e2e-${run}.read-filled`, readUncommitted: false });
    const seen: ToolCall[] = [];
    await reader.connect();
    try {
      await reader.subscribe({ topic: "oz0.tool-calls", fromBeginning: true });
      await reader.run({
        eachMessage: async ({ message }) => {
          // Other tests publish hostile bytes to the topic too: those are skipped, not retried.
          const c = await p.serde.decode<ToolCall>("ToolCall", message.value).catch(() => null);
          if (c?.id === call.id) seen.push(c);
        },
      });
      await eventually("the filled call on oz0.tool-calls", () => Promise.resolve(seen.length), (n) => n > 0, ANSWER_MS);
    } finally {
      await reader.disconnect();
      const admin = kafka.admin();
      await admin.connect();
      await admin.deleteGroups([`oz0.e2e-${run}.read-filled`]).catch(() => undefined);
      await admin.disconnect();
    }
    expect(seen).toHaveLength(1);
    const filled = JSON.parse(seen[0]?.arguments ?? "{}") as Record<string, unknown>;
    expect(filled).toMatchObject({ path: "docs/setup.md", view: "summary" });
    expect(typeof filled.budget).toBe("number");

    // The pipeline's group commits on the calls as published, never on the filled calls it reads in process.
    const admin = kafka.admin();
    await admin.connect();
    try {
      const offsets = await admin.fetchOffsets({ groupId: `oz0.e2e-${run}.pipeline`, topics: ["oz0.tool-calls.requested", "oz0.tool-calls"] });
      const committed = (t: string) => offsets.find((o) => o.topic === t)?.partitions.filter((x) => x.offset !== "-1").length ?? 0;
      expect(committed("oz0.tool-calls.requested")).toBeGreaterThan(0);
      expect(committed("oz0.tool-calls")).toBe(0);
    } finally {
      await admin.disconnect();
    }
  });

  it("SYS-2 OFF-6 a job's results are fitted, offloaded and read back", async () => {
    const job = rootJob(uid("e2e-acme"), "e2e-reader");
    await client.publishJobEvents([jobEvent(job, "started")]);

    // Under the threshold, asked with a budget: fitted, with its fit note.
    const pageCall = toolCall(job, { path: "docs/setup.md", budget: 300 });
    expect(await client.requestToolCall(pageCall)).toMatchObject({ input_id: pageCall.id, verdict: "allow" });
    const page = await client.deliverToolResult(resultOf(pageCall, PAGE));
    expect(page).toMatchObject({ processor: "fit-results", call_id: pageCall.call_id, is_error: false });
    const note = JSON.parse(page.fit ?? "null") as FitNote | null;
    expect(note).toMatchObject({ budget: 300 });
    expect(note?.tokens).toBeLessThanOrEqual(300);
    expect(note?.omitted.length).toBeGreaterThan(0);
    const fitted = answerOf(page);
    expect(fitted._meta?.["oz0/fit"]).toEqual(note);
    expect(fitted.structuredContent?.fit).toEqual(note);
    expect(fitted.structuredContent?.content).toContain("# Setup guide");
    expect(fitted.structuredContent?.content).not.toContain("Step 29 says");

    // Over the threshold: the model reads the stub and its ref.
    const manualCall = toolCall(job, { path: "docs/manual.md" });
    expect(await client.requestToolCall(manualCall)).toMatchObject({ verdict: "allow" });
    const stub = answerOf(await client.deliverToolResult(resultOf(manualCall, MANUAL)));
    const offloaded = stub.structuredContent?.offloaded;
    expect(offloaded?.ref).toMatch(/^oz0-file:sha256:[0-9a-f]{64}$/);
    expect(stub._meta?.["oz0/offload"]).toEqual(offloaded);
    expect(offloaded?.size).toBe(Buffer.byteLength(MANUAL));
    expect(JSON.stringify(stub)).not.toContain("Part 120 begins");
    const ref = offloaded?.ref ?? "";
    const outline = stub.structuredContent?.outline ?? "";
    expect(outline.length).toBeGreaterThan(0);

    // Read back in part: a section, and a line range.
    const section = await client.readResult(readResultCall(job, { ref, section: "Part 7" }));
    const s = answerOf(section).structuredContent;
    expect(section.is_error).toBe(false);
    expect(s?.content).toContain("Part 7 begins here.");
    expect(s?.content).not.toContain("Part 8 begins here.");
    expect(s?.fit).toMatchObject({ view: "section" });
    const range = await client.readResult(readResultCall(job, { ref, range: "10-14", budget: 1000 }));
    expect(answerOf(range).structuredContent?.content).toBe(MANUAL.split("\n").slice(9, 14).join("\n") + "\n");
    expect(answerOf(range).structuredContent?.fit).toMatchObject({ view: "section", budget: 1000 });

    await client.publishJobEvents([jobEvent(job, "ended", { outcome: "succeeded" })]);

    // The trace: the fitted step's view and numbers, the offload's size and digest, the reads, how it ended.
    const t = await trace(job, (x) => x.entries.some((e) => e.section === FIT_SECTION) && x.entries.some((e) => e.section === OFFLOAD_SECTION) && x.entries.filter((e) => e.section === READ_SECTION).length === 2 && ended(x, "succeeded"));
    const fitEntry = t.entries.find((e) => e.section === FIT_SECTION);
    expect(fitEntry).toMatchObject({ subject: pageCall.call_id, facts: { view: note?.view }, numbers: { budget: 300, size: note?.size, tokens: note?.tokens } });
    const offloadEntry = t.entries.find((e) => e.section === OFFLOAD_SECTION);
    expect(offloadEntry).toMatchObject({ subject: manualCall.call_id, facts: { ref }, numbers: { size: offloaded?.size, tokens: offloaded?.tokens, lines: offloaded?.lines } });
    const kept = JSON.stringify(t);
    expect(kept).not.toContain(note?.omitted);
    expect(kept).not.toContain(outline);
    expect(kept).not.toContain("Part 7 begins");
    const text = formatTrace(t);
    for (const heading of [FIT_SECTION, OFFLOAD_SECTION, READ_SECTION, JOB_END_SECTION]) expect(text).toContain(heading);
    expect(text).toMatch(new RegExp(`${JOB_END_SECTION}\\n  succeeded at `));
    expect(text).not.toContain(note?.omitted);
  });

  it("SYS-3 LOOP-2 LOOP-6 a run that loops is stopped (and one that reports goes on with a possible_loop finding)", async () => {
    const tenant = uid("e2e-globex");
    const stopped = rootJob(tenant, "e2e-looper");
    const reported = rootJob(tenant, "e2e-reader");
    await client.publishJobEvents([jobEvent(stopped, "started"), jobEvent(reported, "started")]);

    /** The same call `times` times, each result handed back; the decisions in order. */
    const repeat = async (job: Job, times: number): Promise<Array<{ call: ToolCall; decision: Decision }>> => {
      const out: Array<{ call: ToolCall; decision: Decision }> = [];
      for (let i = 0; i < times; i++) {
        const call = toolCall(job, { path: "docs/faq.md" });
        const decision = await client.requestToolCall(call);
        out.push({ call, decision });
        if (decision.verdict === "allow" || decision.verdict === "report") await client.deliverToolResult(resultOf(call, "The FAQ has one question."));
      }
      return out;
    };
    const [loop, report] = await Promise.all([repeat(stopped, 3), repeat(reported, 3)]);

    expect(loop.map((x) => x.decision.verdict)).toEqual(["allow", "allow", "stop"]);
    const stop = loop[2]?.decision as Decision;
    const third = loop[2]?.call as ToolCall;
    expect(stop).toMatchObject({ processor: "loop-calls", subject: third.call_id, reason_code: "LoopDetected", limit: "loops.repeats", numbers: { count: 3, threshold: 3 } });
    expect(JSON.parse(stop.evidence ?? "{}")).toMatchObject({ detector: "repeats", count: 3, arguments: { path: "docs/faq.md" } });
    // The call is not made: the model reads the decision's words as its failed result.
    const failed = await client.awaitDelivered(third.id);
    expect(failed.is_error).toBe(true);
    expect(answerOf(failed).content[0]?.text).toBe(stop.message);

    // A later call of the run, with other arguments, is not made either: the job stopped.
    const later = toolCall(stopped, { path: "docs/other.md" });
    const after = await client.requestToolCall(later);
    expect(after).toMatchObject({ verdict: "stop", reason_code: "LoopDetected", message: stop.message, subject: later.call_id });
    expect((await client.awaitDelivered(later.id)).is_error).toBe(true);
    await client.publishJobEvents([jobEvent(stopped, "ended", { outcome: "failed" })]);

    expect(report.map((x) => x.decision.verdict)).toEqual(["allow", "allow", "report"]);
    expect(report[2]?.decision).toMatchObject({ reason_code: "possible_loop", limit: "loops.repeats" });
    await client.publishJobEvents([jobEvent(reported, "ended", { outcome: "succeeded" })]);

    const finding = (t: JobTrace, name: string) => t.entries.find((e) => e.section === LOOP_SECTION && e.facts.finding === name);
    const st = await trace(stopped, (t) => finding(t, "loop_stopped") !== undefined && t.decisions.filter((d) => d.verdict === "stop").length === 2 && ended(t, "failed"));
    expect(finding(st, "loop_stopped")).toMatchObject({ subject: third.call_id, facts: { detector: "repeats", on_loop: "stop" }, numbers: { count: 3, threshold: 3 } });
    expect(st.decisions.filter((d) => d.verdict === "stop").map((d) => d.subject).sort()).toEqual([third.call_id, later.call_id].sort());
    expect(formatTrace(st)).toContain(`loop-calls stop ${later.call_id} (LoopDetected)`);
    const rt = await trace(reported, (t) => finding(t, "possible_loop") !== undefined);
    expect(finding(rt, "possible_loop")).toMatchObject({ subject: report[2]?.call.call_id, facts: { detector: "repeats", on_loop: "report" } });

    const entries = await audit(tenant, (es) => es.filter((e) => e.kind === "loop.acted").length === 2 && es.filter((e) => e.kind === "call.stopped").length === 2);
    const acted = entries.filter((e) => e.kind === "loop.acted");
    expect(acted.find((e) => e.job_id === stopped.job_id)).toMatchObject({ actor: "loop-calls", facts: { plugin: PLUGIN, tool: PLUGIN, detector: "repeats", action: "stop" } });
    expect(acted.find((e) => e.job_id === reported.job_id)).toMatchObject({ facts: { action: "report" } });
    const refusals = entries.filter((e) => e.kind === "call.stopped");
    expect(refusals.map((e) => e.facts.subject).sort()).toEqual([third.call_id, later.call_id].sort());
    for (const e of refusals) expect(e).toMatchObject({ job_id: stopped.job_id, reason: stop.message, facts: { reason_code: "LoopDetected", verdict: "stop" } });
    // Never the arguments.
    expect(JSON.stringify(entries)).not.toContain("docs/faq.md");
  });

  it("SYS-4 LIM-5 a tree is refused a child over its limit, with the reason and how to raise it", async () => {
    const root = rootJob(uid("e2e-initech"), "e2e-lead");
    await client.publishJobEvents([jobEvent(root, "started")]);
    const first = childJob(root, 1, "e2e-helper");
    const second = childJob(root, 2, "e2e-helper");
    // Asked by the parent's run, one after the other, before either starts.
    const admitted = await client.askChild(jobEvent(first, "child_ask", { run_id: root.run_id }));
    expect(admitted).toMatchObject({ processor: "limits-jobs", verdict: "allow", job_id: root.job_id, subject: first.job_id });
    const refused = await client.askChild(jobEvent(second, "child_ask", { run_id: root.run_id }));
    expect(refused).toMatchObject({ processor: "limits-jobs", verdict: "refuse", reason_code: "TreeLimitExceeded", limit: "limits.tree.children", job_id: root.job_id, subject: second.job_id });
    expect(refused.message).toContain("raise limits.tree.children of the root agent");

    // The admitted child runs and ends; the refused one is never started.
    await client.publishJobEvents([jobEvent(first, "started"), jobEvent(first, "ended", { outcome: "succeeded" }), jobEvent(root, "ended", { outcome: "succeeded" })]);

    const t = await trace(root, (x) => x.decisions.some((d) => d.verdict === "refuse") && ended(x, "succeeded"));
    expect(t.decisions.find((d) => d.verdict === "refuse")).toMatchObject({ subject: second.job_id, reason_code: "TreeLimitExceeded", limit: "limits.tree.children", message: refused.message });
    expect(formatTrace(t)).toContain(`limits-jobs refuse ${second.job_id} (TreeLimitExceeded limits.tree.children): ${refused.message}`);

    const entries = await audit(root.tenant, (es) => es.some((e) => e.kind === "admission.refused"));
    const refusals = entries.filter((e) => e.kind === "admission.refused");
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatchObject({ tree_id: root.tree_id, job_id: root.job_id, actor: "limits-jobs", reason: refused.message, facts: { subject: second.job_id, verdict: "refuse", reason_code: "TreeLimitExceeded", limit: "limits.tree.children" } });
    // An admission leaves no entry.
    expect(entries.some((e) => e.facts.subject === first.job_id)).toBe(false);
  });
});
