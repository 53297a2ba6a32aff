/**
 * Endings bind, on the whole pipeline through the runtime client (LIM-1,
 * LIM-3, LIM-8, TOOL-2): a job that ended, timed out or whose start was refused gets every later
 * model ask, tool call, child start and read refused with its ending's reason; past the tree's
 * soft wall only the answer is left; a delegation outside `delegation.allow` is refused at the
 * ask and at the start.
 *
 * The pipeline's groups have a prefix of this run and start at their inputs' end, so they handle
 * this file's events only. The agents are `test/fixtures/endings-config/`.
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Pipeline } from "../../topology/run.ts";
import { RuntimeClient, readResultCall, type CallContext } from "../../client/runtime-client.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { Decision, JobEvent, ModelCall, ToolCall } from "../../schemas/types.ts";
import { jobEvent as rootJobEvent, uid } from "../support/events.ts";
import { endpoints } from "../support/kafka.ts";
import { startTestPipeline, stopTestPipeline } from "../support/pipeline.ts";

const CONFIG_DIR = fileURLToPath(new URL("../fixtures/endings-config/", import.meta.url));
const PLUGIN = "end_docs";
const ANSWER_MS = 60_000;

interface Job extends CallContext {
  readonly parent: string | null;
}

function root(tenant: string, agent: string): Job {
  const tree = uid("end-tree");
  return { tenant, tree_id: tree, job_id: tree, run_id: `${tree}-run`, agent, parent: null };
}

function child(parent: Job, name: string, agent: string): Job {
  const job = `${parent.job_id}-${name}`;
  return { ...parent, job_id: job, run_id: `${job}-run`, agent, parent: parent.job_id };
}

function jobEvent(j: Job, kind: JobEvent["kind"], over: Partial<JobEvent> = {}): JobEvent {
  const isChild = j.parent !== null;
  return rootJobEvent(j.job_id, kind, {
    id: uid("end-job"),
    tenant: j.tenant,
    tree_id: j.tree_id,
    parent_job_id: j.parent,
    run_id: j.run_id,
    agent: j.agent,
    started_by: isChild ? "agent" : "app",
    delegation: isChild ? "delegation" : "none",
    depth: isChild ? 1 : 0,
    principal: isChild ? null : "end-app",
    ...over,
  });
}

function toolCall(j: Job, over: Partial<ToolCall> = {}): ToolCall {
  return {
    id: uid("end-call"),
    tenant: j.tenant,
    tree_id: j.tree_id,
    job_id: j.job_id,
    run_id: j.run_id,
    call_id: uid("call"),
    agent: j.agent,
    plugin: PLUGIN,
    tool: PLUGIN,
    function: "get_page",
    arguments: JSON.stringify({ path: `docs/${randomUUID().slice(0, 6)}.md` }),
    origin: "model",
    context_used: null,
    spend_share: null,
    ts: Date.now(),
    ...over,
  };
}

function modelCall(j: Job, kind: ModelCall["kind"], over: Partial<ModelCall> = {}): ModelCall {
  return { id: uid("end-model"), tenant: j.tenant, tree_id: j.tree_id, job_id: j.job_id, run_id: j.run_id, request_id: uid("req"), kind, model: "claude-sonnet-4", input_tokens: 1_000, max_output_tokens: 300, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, agent: j.agent, ts: Date.now(), ...over };
}

describe("endings bind, on the whole pipeline through the runtime client", () => {
  const run = randomUUID().slice(0, 8);
  const log = createLogger({ test: "endings" }, () => {});
  let pipeline: Pipeline | undefined;
  let client: RuntimeClient;

  beforeAll(async () => {
    pipeline = await startTestPipeline(`endings-${run}`, CONFIG_DIR, "endings test agents", log);
    client = await RuntimeClient.connect(endpoints(), { log, timeoutMs: ANSWER_MS });
  }, 240_000);

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await stopTestPipeline(pipeline);
  }, 120_000);

  it("LIM-1 after UsageLimitExceeded the job's later model asks, tool calls, reads and child asks are all refused with its ending", async () => {
    const job = root(uid("end-acme"), "end-stepper");
    await client.publishJobEvents([jobEvent(job, "started")]);
    expect(await client.askModelCall(modelCall(job, "ask"))).toMatchObject({ verdict: "allow" });
    expect(await client.askModelCall(modelCall(job, "ask"))).toMatchObject({ verdict: "stop", reason_code: "UsageLimitExceeded", limit: "limits.max_steps" });
    const ended = new RegExp(`Job ${job.job_id} has ended \\(UsageLimitExceeded\\)`);

    // The tree's own state holds the run stopped (docs/limits.md, "Endings bind").
    expect(await client.askModelCall(modelCall(job, "ask"))).toMatchObject({ verdict: "stop", reason_code: "UsageLimitExceeded", limit: "limits.max_steps" });

    const call = await client.requestToolCall(toolCall(job));
    expect(call).toMatchObject({ processor: "loop-calls", verdict: "stop", reason_code: "UsageLimitExceeded" });
    expect(call.message).toMatch(ended);

    const read = await client.readResult(readResultCall(job, { ref: `oz0-file:sha256:${"a".repeat(64)}` }));
    expect(read.is_error).toBe(true);
    expect(read.content).toMatch(ended);

    const kid = await client.askChild(jobEvent(child(job, "kid", "end-helper"), "child_ask"));
    expect(kid).toMatchObject({ verdict: "refuse", reason_code: "UsageLimitExceeded", subject: `${job.job_id}-kid` });
    expect(kid.message).toMatch(/The child job is not started: the job that asks for it, .* has ended \(UsageLimitExceeded\)/);
  });

  it("LIM-1 run --timeout holds every tool call of the job, not only its model asks", async () => {
    const job = root(uid("end-acme"), "end-helper");
    await client.publishJobEvents([jobEvent(job, "started", { timeout_ms: 2_000 })]);
    expect(await client.requestToolCall(toolCall(job))).toMatchObject({ verdict: "allow" });
    await new Promise((r) => setTimeout(r, 2_500));
    const late = await client.requestToolCall(toolCall(job));
    expect(late).toMatchObject({ verdict: "stop", reason_code: "AgentTimeout", limit: "run --timeout" });
    expect(late.message).toMatch(/ran past its 2s \(run --timeout\)/);
  });

  it("TOOL-2 a delegation to an agent outside delegation.allow is refused at the ask and stopped at the start; an allowed one is admitted", async () => {
    const lead = root(uid("end-acme"), "end-lead");
    await client.publishJobEvents([jobEvent(lead, "started")]);
    const stranger = child(lead, "stranger", "end-stranger");
    const refused = await client.askChild(jobEvent(stranger, "child_ask"));
    expect(refused).toMatchObject({ verdict: "refuse", reason_code: "DelegationNotAllowed", limit: "delegation.allow", subject: stranger.job_id });
    expect(refused.message).toMatch(/agent end-lead may delegate only to end-helper \(delegation.allow\), and end-stranger is not among them/);
    const start = jobEvent(stranger, "started");
    await client.publishJobEvents([start]);
    expect(await client.awaitAdmission(start.id)).toMatchObject({ verdict: "stop", reason_code: "DelegationNotAllowed", subject: stranger.job_id });
    // The refused child's own calls get nothing either.
    expect(await client.requestToolCall(toolCall(stranger))).toMatchObject({ verdict: "stop", reason_code: "DelegationNotAllowed" });
    expect(await client.askChild(jobEvent(child(lead, "helper", "end-helper"), "child_ask"))).toMatchObject({ verdict: "allow" });
  });

  it("LIM-8 past the soft wall only the answer is left: tool calls are refused with its words, the answer goes ahead", async () => {
    const lead = root(uid("end-acme"), "end-lead");
    await client.publishJobEvents([jobEvent(lead, "started")]);
    const ask = modelCall(lead, "ask");
    expect(await client.askModelCall(ask)).toMatchObject({ verdict: "allow" });
    expect(await client.requestToolCall(toolCall(lead))).toMatchObject({ verdict: "allow" });
    // 1,000 in and 300 out of sonnet: $0.0075 of the tree's $0.01, past its soft wall of 50%.
    const usage = modelCall(lead, "usage", { request_id: ask.request_id, output_tokens: 300 });
    await client.publishModelCalls([usage]);
    const crossed = await client.awaitAdmission(usage.id);
    expect(crossed).toMatchObject({ verdict: "report" });
    const refused = await client.requestToolCall(toolCall(lead));
    expect(refused).toMatchObject({ verdict: "refuse", reason_code: "SoftWall", limit: "spend.soft_wall" });
    expect(refused.message).toMatch(/only the answer is left/);
    expect(await client.requestToolCall(toolCall(lead, { plugin: "oz0", tool: "oz0", function: "answer", arguments: JSON.stringify({ text: "done" }) }))).toMatchObject({ verdict: "allow" });
  });

  it("LIM-1 a job whose runtime reported its end gets its later calls refused (JobEnded), once the pipeline has read the end", async () => {
    const job = root(uid("end-acme"), "end-helper");
    await client.publishJobEvents([jobEvent(job, "started")]);
    expect(await client.requestToolCall(toolCall(job))).toMatchObject({ verdict: "allow" });
    await client.publishJobEvents([jobEvent(job, "ended", { outcome: "completed" })]);
    let last: Decision | undefined;
    const until = Date.now() + 30_000;
    while (Date.now() < until) {
      last = await client.requestToolCall(toolCall(job));
      if (last.verdict !== "allow") break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(last).toMatchObject({ verdict: "stop", reason_code: "JobEnded" });
    expect(await client.askModelCall(modelCall(job, "ask"))).toMatchObject({ verdict: "stop", reason_code: "JobEnded" });
  });
});
