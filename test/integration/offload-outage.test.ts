import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Producer } from "kafkajs";
import { fitResultsProcessor } from "../../processors/fit-results/processor.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import type { RunningProcessor } from "../../processors/runner/runner.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { ResultDelivered, ToolResult } from "../../schemas/types.ts";
import { FileStore } from "../../store/files.ts";
import { minioClient } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { uid } from "../support/events.ts";
import { collect, endpoints, kafka, serde, startOnKafka } from "../support/kafka.ts";
import { TcpProxy } from "../support/tcp-proxy.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("fit-results offloading while the file store's MinIO is unreachable", () => {
  let s: Serde;
  let producer: Producer;
  let proxy: TcpProxy;
  let running: RunningProcessor | undefined;
  let direct: FileStore;
  const bucket = uid("oz0-outage").toLowerCase();
  const tenant = uid("acme");
  const keys = PayloadKeys.fromMaster(Buffer.alloc(32, 9));

  beforeAll(async () => {
    s = await serde();
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    const e = endpoints();
    const minio = new URL(e.minioUrl);
    proxy = new TcpProxy({ host: minio.hostname, port: Number(minio.port || 80) });
    await proxy.start();
    direct = new FileStore({ client: minioClient(e), bucket, keys });
    await direct.ensureBucket();
    // The processor reaches MinIO only through the proxy.
    const proxied = new FileStore({ client: minioClient({ ...e, minioUrl: `http://127.0.0.1:${proxy.port}` }), bucket, keys });
    running = await startOnKafka(fitResultsProcessor, { load: () => Promise.resolve(null), threshold: () => 1_000, storeFile: (owner, bytes, options) => proxied.store(owner, bytes, options), config: staticConfig([]) }, s);
  });

  afterAll(async () => {
    await running?.stop();
    await proxy?.stop();
    await producer?.disconnect();
    const client = direct.client;
    for await (const item of client.listObjects(bucket, "", true, { IncludeVersion: true })) {
      const o = item as { name?: string; versionId?: string };
      if (o.name) await client.removeObject(bucket, o.name, o.versionId ? { versionId: o.versionId } : {}).catch(() => undefined);
    }
    await client.removeBucket(bucket).catch(() => undefined);
  });

  const big = (run: string, n: number): ToolResult => {
    const text = [`# Report ${run} ${n}`, "", ...Array.from({ length: 300 }, (_, i) => `Line ${i} of report ${n} says something about item ${i} of run ${run}.`)].join("\n");
    const content = JSON.stringify({ content: [{ type: "text", text }] });
    return { id: uid("res"), tenant, tree_id: uid("tree"), job_id: "job-1", run_id: run, call_id: uid("call"), agent: "fixer", plugin: "docs", tool: "docs", function: "get_page", arguments: "{}", origin: "model", is_error: false, content, content_ref: null, size_bytes: content.length, ts: Date.now(), labels: [] };
  };

  it("OFF-2 no offloaded result is lost while MinIO is cut: each is delivered after it returns, stored whole, and the processor keeps running", async () => {
    const run = uid("run");
    await proxy.cut();
    const results = Array.from({ length: 4 }, (_, n) => big(run, n));
    await producer.send({ topic: fitResultsProcessor.input, messages: results.map((r) => ({ key: run, value: s.encode("ToolResult", r) })) });
    // Long enough for the processor to take the batch and fail on MinIO more than once.
    for (let waited = 0; (running?.stats.retries ?? 0) < 2 && waited < 60_000; waited += 250) await sleep(250);
    expect(running?.stats.retries).toBeGreaterThanOrEqual(2);
    await proxy.restore();

    const delivered = await collect<ResultDelivered>("oz0.results-delivered", "ResultDelivered", s, (d) => d.run_id === run, results.length, 90_000, 2_000);
    expect(delivered.map((d) => d.input_id).sort()).toEqual(results.map((r) => r.id).sort());
    for (const d of delivered) {
      const stub = JSON.parse(d.content) as { structuredContent: { offloaded: { ref: string } } };
      const source = results.find((r) => r.id === d.input_id);
      const file = await direct.read({ tenant, tree: d.tree_id }, stub.structuredContent.offloaded.ref);
      expect(file.bytes.toString("utf8")).toBe((JSON.parse(source?.content ?? "{}") as { content: Array<{ text: string }> }).content[0]?.text);
    }
    expect(running?.stats.deadLetters).toBe(0);

    // Still running: a result after the outage is offloaded as usual.
    const after = big(run, 99);
    await producer.send({ topic: fitResultsProcessor.input, messages: [{ key: run, value: s.encode("ToolResult", after) }] });
    const [next] = await collect<ResultDelivered>("oz0.results-delivered", "ResultDelivered", s, (d) => d.input_id === after.id, 1, 60_000);
    expect(next?.content).toContain("oz0-file:sha256:");
    expect(running?.stats.deadLetters).toBe(0);
  });
});
