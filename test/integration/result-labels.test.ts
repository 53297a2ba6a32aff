import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Producer } from "kafkajs";
import type { AgentDefinition } from "../../config/agent.ts";
import { fitResultsProcessor } from "../../processors/fit-results/processor.ts";
import { jobLabels, READ_RESULT, readResultEnv, readResultProcessor } from "../../processors/read-result/index.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import type { RunningProcessor } from "../../processors/runner/runner.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { ResultDelivered, ToolCall, ToolResult } from "../../schemas/types.ts";
import { FileStore } from "../../store/files.ts";
import { minioClient } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { toolCall, uid } from "../support/events.ts";
import { collect, endpoints, kafka, serde, startOnKafka } from "../support/kafka.ts";

const REPORT = ["# Payroll report", "", ...Array.from({ length: 120 }, (_, i) => `## Employee ${i}\n\nEmployee ${i} earns an amount that only cleared agents may read.`)].join("\n");

function agent(name: string, clearance?: string[]): AgentDefinition {
  return { name, tools: ["hr_docs"], limits: { tree: {} }, delegation: { allow: [] }, loops: {}, spend: {}, ...(clearance ? { clearance } : {}) };
}

type Answer = { content: Array<{ text: string }>; structuredContent?: { content?: string; offloaded?: { ref: string } } };
const answerOf = (d: ResultDelivered | undefined): Answer => JSON.parse(d?.content ?? "{}") as Answer;

describe("result labels through fit-results and read_result on the real broker, MinIO and Redis", () => {
  let s: Serde;
  let producer: Producer;
  let files: FileStore;
  let redis: RedisClient;
  const keys = new Keys(uid("labels").replace(/-/g, "_"));
  const bucket = uid("oz0-labels").toLowerCase();
  const tenant = uid("acme");
  const running: RunningProcessor[] = [];
  const config = staticConfig([
    { kind: "agent", id: "lb-writer", value: agent("lb-writer") },
    { kind: "agent", id: "lb-pii-only", value: agent("lb-pii-only", ["pii"]) },
    { kind: "agent", id: "lb-payroll", value: agent("lb-payroll", ["pii", "payroll"]) },
  ]);

  beforeAll(async () => {
    s = await serde();
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    files = new FileStore({ client: minioClient(endpoints()), bucket, keys: PayloadKeys.fromMaster(Buffer.alloc(32, 11)) });
    await files.ensureBucket();
    redis = redisClient(endpoints(), { maxRetriesPerRequest: 3 });
    running.push(await startOnKafka(fitResultsProcessor, { load: () => Promise.resolve(null), threshold: () => 1_000, storeFile: (owner, bytes, options) => files.store(owner, bytes, options), config }, s));
    running.push(await startOnKafka(readResultProcessor, readResultEnv({ config, files, redis, keys }), s));
  });

  afterAll(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await producer?.disconnect();
    if (files) {
      await files.eraseTenant(tenant).catch(() => undefined);
      await files.client.removeBucket(bucket).catch(() => undefined);
    }
    redis?.disconnect();
  });

  async function offload(tree: string, text: string, labels: string[]): Promise<string> {
    const content = JSON.stringify({ content: [{ type: "text", text }] });
    const res: ToolResult = {
      ...toolCall({ tenant, tree_id: tree, job_id: tree, run_id: tree, agent: "lb-writer", plugin: "hr_docs", tool: "hr_docs", function: "get_report" }),
      id: uid("res"),
      is_error: false,
      content,
      content_ref: null,
      size_bytes: content.length,
      labels,
    };
    delete (res as Partial<ToolCall>).context_used;
    delete (res as Partial<ToolCall>).spend_share;
    await producer.send({ topic: fitResultsProcessor.input, messages: [{ key: tree, value: s.encode("ToolResult", res) }] });
    const [d] = await collect<ResultDelivered>("oz0.results-delivered", "ResultDelivered", s, (x) => x.input_id === res.id, 1, 90_000);
    const ref = answerOf(d).structuredContent?.offloaded?.ref;
    if (!ref) throw new Error(`the result was not offloaded: ${d?.content.slice(0, 200)}`);
    return ref;
  }

  /** Calls of oz.read_result as the fill-in passes them on (budget given), answered in order. */
  async function read(tree: string, ref: string, agents: string[]): Promise<ResultDelivered[]> {
    const calls = agents.map((a) => toolCall({ tenant, tree_id: tree, job_id: tree, run_id: tree, agent: a, ...READ_RESULT, arguments: JSON.stringify({ ref, section: "Employee 7", budget: 2_000 }) }));
    await producer.send({ topic: "oz0.tool-calls", messages: calls.map((c) => ({ key: c.run_id, value: s.encode("ToolCall", c) })) });
    const ids = new Set(calls.map((c) => c.id));
    const got = await collect<ResultDelivered>("oz0.results-delivered", "ResultDelivered", s, (d) => ids.has(d.input_id), calls.length, 90_000);
    return calls.map((c) => got.find((d) => d.input_id === c.id) as ResultDelivered);
  }

  it("OFF-9 an offloaded result keeps the labels its ToolResult carries, and a read above the agent's clearance is withheld end to end; a cleared read joins them into the job", async () => {
    const tree = uid("tree");
    const ref = await offload(tree, REPORT, ["payroll", "pii", "payroll"]);
    expect((await files.grantOf({ tenant, tree }, ref))?.labels).toEqual(["payroll", "pii"]);

    const [withheld, cleared, open] = await read(tree, ref, ["lb-pii-only", "lb-payroll", "lb-writer"]);
    expect(withheld?.is_error).toBe(true);
    expect(answerOf(withheld).content[0]?.text).toMatch(/withheld by clearance: one of its labels is above the clearance of agent lb-pii-only/);
    expect(withheld?.content).not.toContain("Employee 7 earns");
    expect(withheld?.content).not.toContain("payroll");
    expect(cleared?.is_error).toBe(false);
    expect(answerOf(cleared).structuredContent?.content).toContain("Employee 7 earns");
    // An agent with no clearance reads every label (a restriction is opted into).
    expect(open?.is_error).toBe(false);
    expect(await jobLabels(redis, keys, { tenant, tree, job: tree })).toEqual(["payroll", "pii"]);
  });

  it("OFF-9 a result offloaded without labels is read by an agent whose clearance is narrow", async () => {
    const tree = uid("tree");
    const ref = await offload(tree, REPORT.replace("# Payroll report", "# Public report"), []);
    expect((await files.grantOf({ tenant, tree }, ref))?.labels).toEqual([]);
    const [read1] = await read(tree, ref, ["lb-pii-only"]);
    expect(read1?.is_error).toBe(false);
    expect(await jobLabels(redis, keys, { tenant, tree, job: tree })).toEqual([]);
  });
});
