import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Producer } from "kafkajs";
import { fillInProcessor } from "../../processors/fill-in/processor.ts";
import { FILES_META_KEY, FILES_NOT_FOUND_META_KEY } from "../../processors/files/arguments.ts";
import { fileArgumentsEnv } from "../../processors/files/env.ts";
import { RedisFilesStore } from "../../processors/files/redis-store.ts";
import { fitResultsProcessor } from "../../processors/fit-results/processor.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import type { RunningProcessor } from "../../processors/runner/runner.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { ResultDelivered, ToolCall, ToolResult } from "../../schemas/types.ts";
import { FileStore } from "../../store/files.ts";
import { minioClient, refOf } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { Keys } from "../../store/redis/keys.ts";
import { toolCall, uid } from "../support/events.ts";
import { collect, endpoints, kafka, serde, startOnKafka } from "../support/kafka.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";

describe("files between tools on real Kafka, Redis and MinIO", () => {
  let s: Serde;
  let producer: Producer;
  let redis: RedisClient;
  let files: FileStore;
  const running: RunningProcessor[] = [];
  const bucket = uid("oz0-files").toLowerCase();
  const tenant = uid("acme");

  beforeAll(async () => {
    s = await serde();
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    redis = redisClient(endpoints());
    files = new FileStore({ client: minioClient(endpoints()), bucket, keys: PayloadKeys.fromMaster(Buffer.alloc(32, 3)) });
    await files.ensureBucket();
    const state = new RedisFilesStore(redis, new Keys(uid("files").replace(/-/g, "_")));
    running.push(await startOnKafka(fitResultsProcessor, { load: () => Promise.resolve(null), threshold: () => 10_000, storeFile: (owner, bytes, options) => files.store(owner, bytes, options), config: staticConfig([]) }, s));
    running.push(await startOnKafka(fillInProcessor, { config: staticConfig([]), spendShare: () => Promise.resolve(null), files: fileArgumentsEnv(state, files) }, s));
  });

  afterAll(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await producer?.disconnect();
    redis?.disconnect();
    await files.eraseTenant(tenant).catch(() => undefined);
    await files.client.removeBucket(bucket).catch(() => undefined);
  });

  it("FILE-1 a tool's embedded file is stored for its tree, the model reads only its URI, and a later call of that tree gets it as a path; another tree's call is told not found", async () => {
    const tree = uid("tree");
    const run = uid("run");
    const archive = Buffer.from(`tarball of ${uid("repo")}`);
    const ref = refOf(archive);
    const result: ToolResult = {
      id: uid("res"), tenant, tree_id: tree, job_id: tree, run_id: run, call_id: uid("call"), agent: "fixer", plugin: "github", tool: "github", function: "download_archive", arguments: "{}", origin: "model", is_error: false,
      content: JSON.stringify({ content: [{ type: "text", text: `Archive: ${ref}` }, { type: "resource", resource: { uri: ref, mimeType: "application/gzip", blob: archive.toString("base64") } }] }),
      content_ref: null, size_bytes: 200, ts: Date.now(), labels: [],
    };
    await producer.send({ topic: fitResultsProcessor.input, messages: [{ key: run, value: s.encode("ToolResult", result) }] });
    const [delivered] = await collect<ResultDelivered>("oz0.results-delivered", "ResultDelivered", s, (d) => d.input_id === result.id, 1, 60_000);
    expect(delivered?.content).not.toContain(archive.toString("base64"));
    expect((JSON.parse(delivered?.content ?? "{}") as { content: unknown[] }).content[1]).toMatchObject({ type: "resource_link", uri: ref, size: archive.length });
    expect((await files.read({ tenant, tree }, ref)).bytes.equals(archive)).toBe(true);

    const mine = toolCall({ tenant, tree_id: tree, job_id: tree, run_id: run, plugin: "tests", tool: "tests", function: "run", arguments: JSON.stringify({ archive: ref }) });
    const other = uid("tree");
    const theirs = toolCall({ tenant, tree_id: other, job_id: other, run_id: run, plugin: "tests", tool: "tests", function: "run", arguments: JSON.stringify({ archive: ref }) });
    await producer.send({ topic: "oz0.tool-calls.requested", messages: [mine, theirs].map((c) => ({ key: run, value: s.encode("ToolCall", c) })) });
    const calls = await collect<ToolCall>("oz0.tool-calls", "ToolCall", s, (c) => c.run_id === run, 2, 60_000);
    const args = (id: string) => JSON.parse(calls.find((c) => c.id === id)?.arguments ?? "{}") as { archive: string; _meta: Record<string, Record<string, string>> };
    expect(args(mine.id)._meta[FILES_META_KEY]).toEqual({ archive: `/oz0/files/${ref.slice("oz0-file:sha256:".length)}` });
    expect(args(theirs.id)._meta[FILES_META_KEY]).toBeUndefined();
    expect(args(theirs.id)._meta[FILES_NOT_FOUND_META_KEY]).toEqual({ archive: `${ref} is not a file this job may read: not found` });
    expect(args(theirs.id).archive).toBe(ref);
  });
});
