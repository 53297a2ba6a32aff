import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Producer } from "kafkajs";
import type { AgentDefinition } from "../../config/agent.ts";
import { fillInProcessor } from "../../processors/fill-in/processor.ts";
import { fitResultsProcessor, OFFLOAD_SECTION } from "../../processors/fit-results/processor.ts";
import { jobLabels, READ_RESULT, READ_SECTION, readResultEnv, readResultProcessor } from "../../processors/read-result/index.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import type { RunningProcessor } from "../../processors/runner/runner.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { ResultDelivered, ToolCall, ToolResult, TraceEntry } from "../../schemas/types.ts";
import { FileStore } from "../../store/files.ts";
import { minioClient, refOf } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { Keys } from "../../store/redis/keys.ts";
import { toolCall, uid } from "../support/events.ts";
import { collect, endpoints, kafka, serde, startOnKafka } from "../support/kafka.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";

const GUIDE = [
  "# Guide",
  "",
  "The guide starts here. It is long.",
  ...Array.from({ length: 150 }, (_, i) => `## Part ${i}\n\nPart ${i} begins here. It goes on about topic ${i} for a while, and then about topic ${i} some more.`),
].join("\n");

/** JSON the tool wrote on one line. */
const LIST = JSON.stringify({ total: 700, items: Array.from({ length: 700 }, (_, i) => ({ id: i, name: `item ${i}`, note: `Item ${i} is about thing ${i}.` })) });

function agent(name: string, tools: string[], clearance?: string[]): AgentDefinition {
  return { name, tools, limits: { tree: {} }, delegation: { allow: [] }, loops: {}, spend: {}, ...(clearance ? { clearance } : {}) };
}

type Answer = { structuredContent?: { content: string; truncated: boolean; fit: Record<string, unknown> }; content: Array<{ text: string }>; _meta?: Record<string, unknown> };

function answerOf(d: ResultDelivered | undefined): Answer {
  return JSON.parse(d?.content ?? "{}") as Answer;
}

describe("oz.read_result on the real broker, registry, MinIO and Redis", () => {
  let s: Serde;
  let producer: Producer;
  let files: FileStore;
  let redis: RedisClient;
  const keys = new Keys(uid("oz0t"));
  const bucket = uid("oz0-read").toLowerCase();
  const tenant = uid("acme");
  const running: RunningProcessor[] = [];
  const config = staticConfig([
    { kind: "agent", id: "rr-reviewer", value: agent("rr-reviewer", ["acme_docs"]) },
    { kind: "agent", id: "rr-cleared", value: agent("rr-cleared", ["acme_docs"], ["pii"]) },
    { kind: "agent", id: "rr-planner", value: agent("rr-planner", ["oz.board_read"]) },
  ]);

  beforeAll(async () => {
    s = await serde();
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    files = new FileStore({ client: minioClient(endpoints()), bucket, keys: PayloadKeys.fromMaster(Buffer.alloc(32, 9)) });
    await files.ensureBucket();
    redis = redisClient(endpoints(), { maxRetriesPerRequest: 3 });
    running.push(await startOnKafka(fillInProcessor, { config, spendShare: () => Promise.resolve(null) }, s));
    running.push(
      await startOnKafka(
        fitResultsProcessor,
        { load: () => Promise.resolve(null), threshold: () => 2_000, storeFile: (owner, bytes, options) => files.store(owner, bytes, options), config },
        s,
      ),
    );
    running.push(await startOnKafka(readResultProcessor, readResultEnv({ config, files, redis, keys }), s));
  });

  afterAll(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await producer?.disconnect();
    if (files) {
      const client = files.client;
      for await (const item of client.listObjects(bucket, "", true, { IncludeVersion: true })) {
        const o = item as { name?: string; versionId?: string };
        if (o.name) await client.removeObject(bucket, o.name, o.versionId ? { versionId: o.versionId } : {}).catch(() => undefined);
      }
      await client.removeBucket(bucket).catch(() => undefined);
    }
    redis?.disconnect();
  });

  /** Publishes a model's tool result of the tenant and returns its stub as the model read it. */
  async function offload(text: string, tree: string, run: string): Promise<{ ref: string; lines: number; delivered: ResultDelivered }> {
    const content = JSON.stringify({ content: [{ type: "text", text }] });
    const res: ToolResult = { ...toolCall({ tenant, tree_id: tree, job_id: tree, run_id: run, agent: "rr-reviewer" }), id: uid("res"), is_error: false, content, content_ref: null, size_bytes: content.length, labels: [] };
    delete (res as Partial<ToolCall>).context_used;
    delete (res as Partial<ToolCall>).spend_share;
    await producer.send({ topic: fitResultsProcessor.input, messages: [{ key: run, value: s.encode("ToolResult", res) }] });
    const [delivered] = await collect<ResultDelivered>("oz0.results-delivered", "ResultDelivered", s, (d) => d.input_id === res.id, 1, 90_000);
    const stub = answerOf(delivered) as unknown as { structuredContent: { offloaded: { ref: string; lines: number } } };
    return { ...stub.structuredContent.offloaded, delivered: delivered as ResultDelivered };
  }

  /** Publishes calls of oz.read_result as a runtime does (before the fill-in) and awaits their answers, in order. */
  async function readBack(calls: ToolCall[]): Promise<ResultDelivered[]> {
    await producer.send({ topic: "oz0.tool-calls.requested", messages: calls.map((c) => ({ key: c.run_id, value: s.encode("ToolCall", c) })) });
    const ids = new Set(calls.map((c) => c.id));
    const got = await collect<ResultDelivered>("oz0.results-delivered", "ResultDelivered", s, (d) => ids.has(d.input_id), calls.length, 90_000);
    return calls.map((c) => got.find((d) => d.input_id === c.id) as ResultDelivered);
  }

  function readCall(args: Record<string, unknown>, over: Partial<ToolCall>): ToolCall {
    return toolCall({ tenant, agent: "rr-reviewer", ...READ_RESULT, arguments: JSON.stringify(args), ...over });
  }

  it("OFF-6 a large result offloaded by fit-results is read back through Kafka by section, range and view with budget, each with its fit note", async () => {
    const tree = uid("tree");
    const run = uid("run");
    const { ref, delivered } = await offload(GUIDE, tree, run);
    expect(ref).toBe(refOf(Buffer.from(GUIDE)));
    expect(delivered.content).not.toContain("Part 120 begins");
    const at = { tree_id: tree, job_id: tree, run_id: run };
    const [section, range, view] = await readBack([
      readCall({ ref, section: "Part 7" }, at),
      readCall({ ref, range: "10-14", budget: 1000 }, at),
      readCall({ ref, view: "full", budget: 400 }, at),
    ]);
    const a = answerOf(section).structuredContent;
    expect(section?.is_error).toBe(false);
    expect(a?.content).toContain("Part 7 begins here.");
    expect(a?.content).not.toContain("Part 8 begins here.");
    // The budget the model left out was filled in (FIT-16: 8,000 with nothing known of the context).
    expect(a?.fit).toMatchObject({ view: "section", budget: 8000 });
    expect(answerOf(section)._meta?.["oz0/fit"]).toEqual(a?.fit);
    const r = answerOf(range).structuredContent;
    expect(r?.content).toBe(GUIDE.split("\n").slice(9, 14).join("\n") + "\n");
    expect(r?.fit).toMatchObject({ view: "section", budget: 1000 });
    const v = answerOf(view).structuredContent;
    expect(view?.truncated).toBe(true);
    expect(v?.fit).toMatchObject({ budget: 400, reason: "budget" });
    expect(v?.fit.view).not.toBe("full");

    const entries = await collect<TraceEntry>("oz0.trace", "TraceEntry", s, (t) => t.tree_id === tree && t.section === READ_SECTION, 3, 90_000);
    expect(entries.map((e) => e.facts.outcome)).toEqual(["read", "read", "read"]);
    expect(JSON.stringify(entries)).not.toContain("Part 7");
  });

  it("OFF-5 OFF-6 JSON the tool wrote on one line is read back by lines of its read form", async () => {
    const tree = uid("tree");
    const run = uid("run");
    const { ref, lines } = await offload(LIST, tree, run);
    const form = JSON.stringify(JSON.parse(LIST), null, 2).split("\n");
    expect(lines).toBe(form.length);
    const [out] = await readBack([readCall({ ref, range: "200-204" }, { tree_id: tree, job_id: tree, run_id: run })]);
    expect(answerOf(out).structuredContent?.content).toBe(form.slice(199, 204).join("\n") + "\n");
  });

  it("OFF-8 another tree and another tenant are told not found, exactly as for a ref never stored", async () => {
    const tree = uid("tree");
    const { ref } = await offload(GUIDE.replace("# Guide", "# Guide of " + tree), tree, uid("run"));
    const never = refOf(Buffer.from(uid("never stored")));
    const other = uid("globex");
    const [mine, otherTree, otherTenant, unknown, claimed] = await readBack([
      readCall({ ref, section: "Part 1" }, { tree_id: tree, job_id: tree }),
      readCall({ ref, section: "Part 1" }, { tree_id: uid("tree"), job_id: uid("job") }),
      readCall({ ref, section: "Part 1" }, { tenant: other, tree_id: tree, job_id: tree }),
      readCall({ ref: never, section: "Part 1" }, { tree_id: tree, job_id: tree }),
      readCall({ ref, section: "Part 1", tree_id: tree, tenant }, { tree_id: uid("tree"), job_id: uid("job") }),
    ]);
    expect(mine?.is_error).toBe(false);
    expect(otherTree?.is_error).toBe(true);
    expect(answerOf(otherTree).content[0]?.text).toBe(`${ref} is not a file this job may read: not found.`);
    expect(otherTenant?.content).toBe(otherTree?.content);
    expect(claimed?.content).toBe(otherTree?.content);
    expect(unknown?.content.replace(never, ref)).toBe(otherTree?.content);
    expect([otherTree, otherTenant, unknown].map((d) => [d?.is_error, d?.truncated, d?.fit])).toEqual([
      [true, false, null],
      [true, false, null],
      [true, false, null],
    ]);
  });

  it("OFF-9 a result with a label above the agent's clearance is withheld; one read joins its labels into the job in Redis", async () => {
    const tree = uid("tree");
    const text = GUIDE.replace("# Guide", "# Labelled guide");
    const { ref } = await files.store({ tenant, tree }, Buffer.from(text), { labels: ["pii", "finance"] });
    const [withheld] = await readBack([readCall({ ref, section: "Part 3" }, { agent: "rr-cleared", tree_id: tree, job_id: tree })]);
    expect(withheld?.is_error).toBe(true);
    expect(answerOf(withheld).content[0]?.text).toMatch(/withheld by clearance/);
    expect(withheld?.content).not.toContain("Part 3 begins");
    expect(await jobLabels(redis, keys, { tenant, tree, job: tree })).toEqual([]);

    const [read, again] = await readBack([
      readCall({ ref, section: "Part 3" }, { agent: "rr-reviewer", tree_id: tree, job_id: tree }),
      readCall({ ref, section: "Part 4" }, { agent: "rr-reviewer", tree_id: tree, job_id: tree }),
    ]);
    expect(answerOf(read).structuredContent?.content).toContain("Part 3 begins here.");
    expect(again?.is_error).toBe(false);
    expect(await jobLabels(redis, keys, { tenant, tree, job: tree })).toEqual(["finance", "pii"]);
    expect(await redis.ttl(keys.jobLabels(tenant, tree, tree))).toBeGreaterThan(0);
  });

  it("OFF-7 read_result is answered in a job whose agent lists a plugin tool, and refused as not offered otherwise", async () => {
    const tree = uid("tree");
    const { ref } = await files.store({ tenant, tree }, Buffer.from(GUIDE));
    const [offered, notOffered] = await readBack([
      readCall({ ref, section: "Part 2" }, { agent: "rr-reviewer", tree_id: tree, job_id: tree }),
      readCall({ ref, section: "Part 2" }, { agent: "rr-planner", tree_id: tree, job_id: tree }),
    ]);
    expect(offered?.is_error).toBe(false);
    expect(notOffered?.is_error).toBe(true);
    expect(answerOf(notOffered).content[0]?.text).toMatch(/oz\.read_result is not offered in this job/);
  });

  it("OFF-11 the trace of an offload shows its size and digest, never its outline; the model reads the stub and its ref", async () => {
    const tree = uid("tree");
    const { ref, delivered } = await offload(GUIDE.replace("# Guide", "# Traced guide"), tree, uid("run"));
    const stub = answerOf(delivered) as unknown as { structuredContent: { offloaded: { ref: string; size: number }; outline: string }; _meta: Record<string, unknown> };
    expect(stub._meta["oz0/offload"]).toEqual(stub.structuredContent.offloaded);
    const [entry] = await collect<TraceEntry>("oz0.trace", "TraceEntry", s, (t) => t.tree_id === tree && t.section === OFFLOAD_SECTION, 1, 90_000);
    expect(entry?.facts.ref).toBe(ref);
    expect(entry?.numbers.size).toBe(stub.structuredContent.offloaded.size);
    expect(JSON.stringify(entry)).not.toContain(stub.structuredContent.outline);
    // The whole result stays a file of the tree, as the job history and hooks saw it.
    expect((await files.read({ tenant, tree }, ref)).bytes.toString("utf8")).toBe(GUIDE.replace("# Guide", "# Traced guide"));
  });

  it("OFF-6 OFF-8 a result read once is kept: the next read asks MinIO for the reader's grant alone, and after the tree's erasure it is not found", async () => {
    const tree = uid("tree");
    const text = GUIDE.replace("# Guide", "# Kept guide");
    const { ref } = await files.store({ tenant, tree }, Buffer.from(text), { labels: ["finance"] });
    const env = readResultEnv({ config, files, redis, keys });
    const reads = vi.spyOn(files, "read");
    const grants = vi.spyOn(files, "granted");
    try {
      const first = await env.readFile({ tenant, tree }, ref);
      const second = await env.readFile({ tenant, tree }, ref);
      expect(first?.doc.text).toBe(text);
      expect(second?.doc).toBe(first?.doc);
      expect(second).toMatchObject({ size: Buffer.byteLength(text), labels: ["finance"] });
      expect([reads.mock.calls.length, grants.mock.calls.length]).toEqual([1, 1]);
      // Kept by tenant and ref, it still lets in only a tree the store grants it to.
      expect(await env.readFile({ tenant, tree: uid("tree") }, ref)).toBeNull();
      expect(await env.readFile({ tenant: uid("globex"), tree }, ref)).toBeNull();
      await files.eraseTree(tenant, tree);
      expect(await env.readFile({ tenant, tree }, ref)).toBeNull();
      // Kept nothing: every read fetches the bytes.
      const none = readResultEnv({ config, files, redis, keys, kept: { megabytes: 0, seconds: 1 } });
      const again = await files.store({ tenant, tree }, Buffer.from(text));
      await none.readFile({ tenant, tree }, again.ref);
      await none.readFile({ tenant, tree }, again.ref);
      expect(reads.mock.calls.length).toBe(4);
    } finally {
      reads.mockRestore();
      grants.mockRestore();
    }
  });
});
