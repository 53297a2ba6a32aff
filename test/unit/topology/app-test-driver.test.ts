/**
 * The whole declared pipeline in memory (topology/app-test-driver.ts): events piped into the
 * topics runtimes publish to, answers read from the topics they await, through the runner's
 * own decoding and chaining, with a virtual clock for the punctuators. The end-to-end cases
 * that need neither a broker nor the sinks' MinIO run here; test/integration/e2e.test.ts keeps
 * those that do.
 */
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfigDir, toTableRecords } from "../../../config/load.ts";
import type { FitEnv } from "../../../processors/fit-results/processor.ts";
import { DEFAULT_PRICES, memoryLimitsStore, type LimitsEnv } from "../../../processors/limits/index.ts";
import { LOOP_DEADLINES } from "../../../processors/loops/deadlines.ts";
import { MemoryLoopStore, type LoopEnv } from "../../../processors/loops/index.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import type { Decision, JobEvent, ResultDelivered, ToolCall, ToolResult } from "../../../schemas/types.ts";
import { AppTestDriver, loopDeadlinesInMemory } from "../../../topology/app-test-driver.ts";
import { PIPELINE_TOPOLOGY } from "../../../topology/pipeline.ts";
import { uid } from "../../support/events.ts";
import { E2E_PLUGIN, e2eJobs, type Job } from "../../support/e2e-jobs.ts";

const CONFIG_DIR = fileURLToPath(new URL("../../fixtures/e2e-config/", import.meta.url));
const PLUGIN = E2E_PLUGIN;
const DEADLINE_MS = 600_000;

let driver: AppTestDriver;
let loops: MemoryLoopStore;

const { rootJob, childJob, jobEvent, toolCall, resultOf } = e2eJobs("app", () => driver.now());

/** Publishes a call as a runtime does and reads its decision (each processor answers under the call's event ID). */
async function requestToolCall(call: ToolCall): Promise<Decision> {
  await driver.pipe("oz0.tool-calls.requested", call.run_id, call);
  const d = (await driver.read<Decision>("oz0.call-decisions")).filter((x) => x.input_id === call.id);
  expect(d, `one decision of ${call.id}`).toHaveLength(1);
  return d[0] as Decision;
}

async function deliverToolResult(result: ToolResult): Promise<ResultDelivered> {
  await driver.pipe("oz0.tool-results", result.run_id, result);
  const d = (await driver.read<ResultDelivered>("oz0.results-delivered")).filter((x) => x.input_id === result.id);
  expect(d, `one delivery of ${result.id}`).toHaveLength(1);
  return d[0] as ResultDelivered;
}

async function askChild(ask: JobEvent): Promise<Decision> {
  await driver.pipe("oz0.jobs", ask.tree_id, ask);
  const d = (await driver.read<Decision>("oz0.admissions")).filter((x) => x.input_id === ask.id);
  expect(d).toHaveLength(1);
  return d[0] as Decision;
}

const answerOf = (d: ResultDelivered) => JSON.parse(d.content) as { content: Array<{ type: string; text: string }>; _meta?: Record<string, unknown> };

beforeEach(async () => {
  const config = staticConfig(toTableRecords(await loadConfigDir(CONFIG_DIR)));
  // An agent whose loops wait for a person, and a tenant whose approvals wait ten minutes (LOOP-5).
  config.set("agent", "app-waiter", { name: "app-waiter", tools: [PLUGIN], on_loop: "wait", loops: { repeats: 3 } });
  config.set("tenant", "app-tenant", { loop_deadline: DEADLINE_MS, loops: {} });
  loops = new MemoryLoopStore();
  const loopEnv: LoopEnv = { config, store: loops };
  const limitsEnv: LimitsEnv = { store: memoryLimitsStore(), config, prices: DEFAULT_PRICES };
  const fitEnv: FitEnv = { load: () => Promise.resolve(null), threshold: () => 10_000, storeFile: () => Promise.reject(new Error("nothing is offloaded here")), config };
  driver = await AppTestDriver.start({
    envs: {
      "budget-fill-in": { config, spendShare: () => Promise.resolve(null) },
      "loop-calls": loopEnv,
      "loop-results": loopEnv,
      "loop-approvals": loopEnv,
      "limits-model-calls": limitsEnv,
      "limits-jobs": limitsEnv,
      "fit-results": fitEnv,
    },
    punctuators: { [LOOP_DEADLINES]: loopDeadlinesInMemory(loops) },
  });
});

afterEach(async () => {
  await driver.close();
});

describe("the application test driver runs the declared topology in memory", () => {
  it("SYS-1 FIT-15 a call piped into oz0.tool-calls.requested is filled in, decided by loop-calls chained after the fill-in, and the filled call is still published", async () => {
    const job = rootJob(uid("app-acme"), "e2e-reader");
    const call = toolCall(job, { path: "docs/setup.md", view: "summary" });
    const decision = await requestToolCall(call);
    expect(decision).toMatchObject({ input_id: call.id, processor: "loop-calls", verdict: "allow", run_id: job.run_id });
    const filled = await driver.read<ToolCall>("oz0.tool-calls");
    expect(filled).toHaveLength(1);
    expect(JSON.parse(filled[0]?.arguments ?? "{}")).toMatchObject({ path: "docs/setup.md", view: "summary", budget: expect.any(Number) as number });
    // The pipeline's application reads oz0.tool-calls.requested only: the filled call reached loop-calls in process.
    const pipeline = driver.running().find((a) => a.application === "pipeline");
    expect(pipeline?.processors.find((p) => p.name === "loop-calls")).toMatchObject({ consumes: "oz0.tool-calls.requested", stats: { in: 1, out: 1 } });
    expect(pipeline?.processors.find((p) => p.name === "budget-fill-in")?.stats.in).toBe(1);
    // Decision and call share the run's key, so the same partition.
    const [rec] = await driver.records<Decision>("oz0.call-decisions");
    const [req] = await driver.records<ToolCall>("oz0.tool-calls.requested");
    expect(rec?.partition).toBe(req?.partition);
    expect(await driver.deadLetters()).toEqual([]);
    // Processors without an environment here (the sinks, files-jobs, read-result) are left out, and said so.
    expect(driver.absent).toEqual(expect.arrayContaining(["files-jobs", "read-result", "trace-sink-trace"]));
  });

  it("SYS-1 an undecodable record is dead-lettered by the runner under the reading processor's name, and the next one is decided", async () => {
    const job = rootJob(uid("app-acme"), "e2e-reader");
    driver.publishRaw("oz0.tool-calls.requested", job.run_id, Buffer.from("not avro"));
    const call = toolCall(job, { path: "docs/setup.md" });
    expect(await requestToolCall(call)).toMatchObject({ verdict: "allow" });
    expect(await driver.deadLetters()).toEqual([expect.objectContaining({ processor: "budget-fill-in", topic: "oz0.tool-calls.requested", error: "undecodable" })]);
  });

  it("LOOP-5 a loop waits for a person; with the virtual clock past the tenant's deadline the loop-deadlines punctuator answers and loop-approvals stops the job", async () => {
    const job = rootJob("app-tenant", "app-waiter");
    const verdicts: string[] = [];
    for (let i = 0; i < 3; i++) verdicts.push((await requestToolCall(toolCall(job, { path: "docs/faq.md" }))).verdict);
    expect(verdicts).toEqual(["allow", "allow", "wait"]);
    const wait = (await driver.read<Decision>("oz0.call-decisions")).find((d) => d.verdict === "wait") as Decision;

    await driver.advance(DEADLINE_MS - 1_000);
    expect(await driver.read("oz0.loop-approvals")).toEqual([]);
    expect((await driver.read<Decision>("oz0.call-decisions")).filter((d) => d.verdict === "stop")).toEqual([]);

    await driver.advance(2_000);
    const answers = await driver.read<Decision>("oz0.loop-approvals");
    expect(answers).toEqual([expect.objectContaining({ processor: LOOP_DEADLINES, verdict: "stop", run_id: job.run_id })]);
    const stops = (await driver.read<Decision>("oz0.call-decisions")).filter((d) => d.verdict === "stop");
    expect(stops).toEqual([expect.objectContaining({ processor: "loop-approvals", subject: wait.subject, reason_code: "LoopDetected", run_id: job.run_id })]);
    expect(stops[0]?.message).toMatch(/Nobody decided on the loop/);
    // A later call of the run is stopped too.
    expect(await requestToolCall(toolCall(job, { path: "docs/other.md" }))).toMatchObject({ verdict: "stop", reason_code: "LoopDetected" });
  });

  it("SYS-3 LOOP-2 a run that loops is stopped, its call not made (the model reads the decision's words as a failed result); one that reports goes on", async () => {
    const tenant = uid("app-globex");
    const stopped = rootJob(tenant, "e2e-looper");
    const reported = rootJob(tenant, "e2e-reader");
    const repeat = async (job: Job): Promise<Array<{ call: ToolCall; decision: Decision }>> => {
      const out: Array<{ call: ToolCall; decision: Decision }> = [];
      for (let i = 0; i < 3; i++) {
        const call = toolCall(job, { path: "docs/faq.md" });
        const decision = await requestToolCall(call);
        out.push({ call, decision });
        if (decision.verdict === "allow" || decision.verdict === "report") await deliverToolResult(resultOf(call, "The FAQ has one question."));
      }
      return out;
    };
    const loop = await repeat(stopped);
    const report = await repeat(reported);
    expect(loop.map((x) => x.decision.verdict)).toEqual(["allow", "allow", "stop"]);
    const stop = loop[2]?.decision as Decision;
    expect(stop).toMatchObject({ processor: "loop-calls", subject: loop[2]?.call.call_id, reason_code: "LoopDetected", limit: "loops.repeats", numbers: { count: 3, threshold: 3 } });
    const failed = (await driver.read<ResultDelivered>("oz0.results-delivered")).find((d) => d.input_id === loop[2]?.call.id);
    expect(failed?.is_error).toBe(true);
    expect(answerOf(failed as ResultDelivered).content[0]?.text).toBe(stop.message);
    expect(report.map((x) => x.decision.verdict)).toEqual(["allow", "allow", "report"]);
    expect(report[2]?.decision).toMatchObject({ reason_code: "possible_loop", limit: "loops.repeats" });
  });

  it("LOOP-7 the result that crosses the no-progress line reaches the model with the words, after its own items (fit-results chained after loop-results); every later call but the answer is refused with them", async () => {
    const job = rootJob(uid("app-initech"), "e2e-reader");
    await driver.pipe("oz0.jobs", job.tree_id, jobEvent(job, "started"));
    // Six pages, one answer: the second to the sixth add nothing (seen before), and the sixth crosses no_progress (5).
    const delivered: ResultDelivered[] = [];
    for (let i = 0; i < 6; i++) {
      const call = toolCall(job, { path: `docs/page-${i}.md` });
      expect(await requestToolCall(call)).toMatchObject({ verdict: "allow" });
      delivered.push(await deliverToolResult(resultOf(call, "Nothing on this page yet.")));
    }
    const words = /^No progress: the last 5 tool results added nothing new/;
    for (const d of delivered.slice(0, 5)) expect(answerOf(d).content.map((c) => c.text)).toEqual(["Nothing on this page yet."]);
    const crossed = answerOf(delivered[5] as ResultDelivered);
    expect(crossed.content[0]?.text).toBe("Nothing on this page yet.");
    expect(crossed.content[1]?.text).toMatch(words);
    expect(crossed._meta?.["oz0/no_progress"]).toBe(crossed.content[1]?.text);
    expect(delivered.every((d) => d.processor === "fit-results")).toBe(true);
    const later = toolCall(job, { path: "docs/page-7.md" });
    expect(await requestToolCall(later)).toMatchObject({ verdict: "refuse", reason_code: "NoProgress", message: crossed.content[1]?.text });
  });

  it("SYS-4 LIM-5 a tree is refused a child over its limit, with the reason and how to raise it", async () => {
    const root = rootJob(uid("app-initech"), "e2e-lead");
    await driver.pipe("oz0.jobs", root.tree_id, jobEvent(root, "started"));
    const first = childJob(root, 1, "e2e-helper");
    const second = childJob(root, 2, "e2e-helper");
    const admitted = await askChild(jobEvent(first, "child_ask", { run_id: root.run_id }));
    expect(admitted).toMatchObject({ processor: "limits-jobs", verdict: "allow", job_id: root.job_id, subject: first.job_id });
    const refused = await askChild(jobEvent(second, "child_ask", { run_id: root.run_id }));
    expect(refused).toMatchObject({ processor: "limits-jobs", verdict: "refuse", reason_code: "TreeLimitExceeded", limit: "limits.tree.children", job_id: root.job_id, subject: second.job_id });
    expect(refused.message).toContain("raise limits.tree.children of the root agent");
  });

  it("refuses an environment or a punctuator the topology does not declare", async () => {
    await expect(AppTestDriver.start({ envs: { "no-such": {} } })).rejects.toThrow(/does not declare/);
    await expect(AppTestDriver.start({ envs: {}, punctuators: { "no-such": () => Promise.resolve([]) } })).rejects.toThrow(/does not declare/);
    expect(PIPELINE_TOPOLOGY.application("pipeline").punctuators.map((p) => p.name)).toContain(LOOP_DEADLINES);
  });
});
