/**
 * Secrets never reach logs, events, traces or error messages (docs/security.md). The
 * pipeline's processors run under the runner with the environments `processors/pipeline.ts`
 * builds, on the real broker, with distinctive secrets: a payload key, a Redis password (a
 * private `redis-server --requirepass`), the MinIO secret key in use, and a Kafka SASL password
 * and a wrong MinIO secret where setting them breaks the connection (their failures are
 * captured too). Inputs include failures: MinIO and Redis cut through proxies, and bad input for
 * the dead letters. Every log line and every record written to the output topics is searched
 * for each secret, as text, base64, base64url, hex and URL-encoded.
 */
import { setGroupOffsets } from "../../topology/group-offsets.ts";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import kafkajs, { type Kafka, type Producer } from "kafkajs";
import type { AgentDefinition } from "../../config/agent.ts";
import { PIPELINE } from "../../processors/pipeline.ts";
import { READ_RESULT } from "../../processors/read-result/index.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER, kafkaConfig, type Endpoints } from "../../processors/runner/endpoints.ts";
import { createLogger, type Logger } from "../../processors/runner/log.ts";
import { startProcessor, type RunningProcessor } from "../../processors/runner/runner.ts";
import { KafkaTransport } from "../../processors/runner/transport.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { JobEvent, ModelCall, ToolResult } from "../../schemas/types.ts";
import { FileStore } from "../../store/files.ts";
import { minioClient } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { runScript } from "../../store/redis/scripts.ts";
import { Keys } from "../../store/redis/keys.ts";
import { toolCall, uid } from "../support/events.ts";
import { endpoints, groupAtEnd, kafka, serde, TEST_FETCH_WAIT_MS } from "../support/kafka.ts";
import { startPrivateRedis, type PrivateRedis } from "../support/private-redis.ts";
import { TcpProxy } from "../support/tcp-proxy.ts";

const OUTPUTS = ["oz0.tool-calls", "oz0.results-delivered", "oz0.trace", "oz0.dead-letter", "oz0.admissions", "oz0.audit", "oz0.call-decisions"] as const;
/** The trace and audit sinks write the shared buckets; everything else runs. */
const SKIPPED = new Set(["trace-sink", "audit-sink"]);

/** Each form a secret could take in text or bytes. */
function forms(secret: string | Buffer): Buffer[] {
  const bytes = Buffer.isBuffer(secret) ? secret : Buffer.from(secret, "utf8");
  const texts = [bytes.toString("base64"), bytes.toString("base64").replace(/=+$/, ""), bytes.toString("base64url"), bytes.toString("hex"), bytes.toString("hex").toUpperCase()];
  if (!Buffer.isBuffer(secret)) texts.push(secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1));
  return [bytes, ...[...new Set(texts)].map((t) => Buffer.from(t, "utf8"))];
}

/** Which secrets, by name, show up in a blob, in which form. */
function leaks(blob: Buffer, secrets: ReadonlyMap<string, string | Buffer>): string[] {
  const out: string[] = [];
  for (const [name, secret] of secrets) {
    for (const f of forms(secret)) if (blob.includes(f)) out.push(`${name} as ${JSON.stringify(f.toString("latin1").slice(0, 60))}`);
  }
  return out;
}

describe("secrets in logs, events and errors, with the processors on the real broker", () => {
  let s: Serde;
  let producer: Producer;
  let privateRedis: PrivateRedis;
  let redisProxy: TcpProxy;
  let minioProxy: TcpProxy;
  let redis: RedisClient;
  let files: FileStore;
  const running: RunningProcessor[] = [];
  const lines: string[] = [];
  const errors: string[] = [];
  const bucket = uid("oz0-secrets").toLowerCase();
  const tenant = uid("acme");
  const payloadKey = randomBytes(32);
  const secrets = new Map<string, string | Buffer>([
    ["OZ0_PAYLOAD_KEY", payloadKey.toString("base64")],
    ["payload key bytes", payloadKey],
    ["Redis password", `redis-pw-${randomBytes(9).toString("hex")}`],
    ["Kafka SASL password", `kafka-pw-${randomBytes(9).toString("hex")}`],
    ["wrong MinIO secret", `minio-wrong-${randomBytes(9).toString("hex")}`],
  ]);
  const secret = (name: string): string => String(secrets.get(name));
  let log: Logger;
  let level: string | undefined;

  beforeAll(async () => {
    level = process.env.OZ0_LOG_LEVEL;
    process.env.OZ0_LOG_LEVEL = "debug";
    log = createLogger({ test: "secrets" }, (line) => void lines.push(line));
    // The MinIO secret in use: not distinctive, but the one this test's connections carry.
    secrets.set("MinIO secret key", endpoints().minioSecretKey);
    s = await serde();
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();

    privateRedis = await startPrivateRedis(secret("Redis password"));
    redisProxy = new TcpProxy({ host: "127.0.0.1", port: privateRedis.port });
    await redisProxy.start();
    const minio = new URL(endpoints().minioUrl);
    minioProxy = new TcpProxy({ host: minio.hostname, port: Number(minio.port || 80) });
    await minioProxy.start();

    // The pipeline's endpoints: Redis with its password in the URL, MinIO through the proxy.
    const e: Endpoints = { ...endpoints(), redisUrl: `redis://:${secret("Redis password")}@127.0.0.1:${redisProxy.port}`, minioUrl: `http://127.0.0.1:${minioProxy.port}` };
    redis = redisClient(e, { maxRetriesPerRequest: 1 });
    redis.on("error", (err: Error) => log.warn("redis connection error", { error: err }));
    files = new FileStore({ client: minioClient(e), bucket, keys: PayloadKeys.fromEnv({ OZ0_PAYLOAD_KEY: secret("OZ0_PAYLOAD_KEY") }) });
    await files.ensureBucket();
    const agent: AgentDefinition = { name: "sec-agent", tools: ["docs"], limits: { tree: {} }, delegation: { allow: [] }, loops: {}, spend: {}, offload: 200 };
    const config = staticConfig([{ kind: "agent", id: "sec-agent", value: agent }]);
    // Started at once: each joins its own group, which takes a while.
    running.push(
      ...(await Promise.all(
        PIPELINE.filter((entry) => !SKIPPED.has(entry.processor.name)).map(async (entry) => {
          const group = uid(`sec-${entry.processor.name}`);
          await groupAtEnd(group, entry.processor.input);
          const k: Kafka = new kafkajs.Kafka(kafkaConfig(group, e, {}, log));
          const transport = new KafkaTransport({ kafka: k, groupId: group, topics: [entry.processor.input], log, maxWaitMs: TEST_FETCH_WAIT_MS });
          return startProcessor(entry.processor, await entry.env({ endpoints: e, redis, config, files }), { transport, serde: s, log, maxBackoffMs: 1_000 });
        }),
      )),
    );
  });

  afterAll(async () => {
    await Promise.all(running.map((r) => r.stop().catch(() => undefined)));
    await producer?.disconnect();
    redis?.disconnect();
    await minioProxy?.stop();
    await redisProxy?.stop();
    await privateRedis?.stop();
    const direct = minioClient(endpoints());
    for await (const item of direct.listObjects(bucket, "", true, { IncludeVersion: true })) {
      const o = item as { name?: string; versionId?: string };
      if (o.name) await direct.removeObject(bucket, o.name, o.versionId ? { versionId: o.versionId } : {}).catch(() => undefined);
    }
    await direct.removeBucket(bucket).catch(() => undefined);
    if (level === undefined) delete process.env.OZ0_LOG_LEVEL;
    else process.env.OZ0_LOG_LEVEL = level;
  });

  it("Redis AUTH: a client built from the URL's password or from OZ0_REDIS_PASSWORD works, and a wrong password fails without naming either", async () => {
    const url = `redis://127.0.0.1:${privateRedis.port}`;
    const viaUrl = redisClient({ redisUrl: `redis://:${secret("Redis password")}@127.0.0.1:${privateRedis.port}` }, { maxRetriesPerRequest: 1 });
    const viaEnv = redisClient({ redisUrl: url, redisPassword: secret("Redis password") }, { maxRetriesPerRequest: 1 });
    const keys = new Keys("auth");
    try {
      expect(await viaUrl.ping()).toBe("PONG");
      // Scripts load and run over an authenticated connection as over any other.
      await runScript(viaEnv, "joinJobLabels", [keys.jobLabels("acme", "tree-1", "job-1")], [60, "pii"]);
      expect(await viaUrl.smembers(keys.jobLabels("acme", "tree-1", "job-1"))).toEqual(["pii"]);
    } finally {
      viaUrl.disconnect();
      viaEnv.disconnect();
    }
    const wrong = redisClient({ redisUrl: url, redisPassword: "not-the-password" }, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    const emitted: string[] = [];
    wrong.on("error", (err: Error) => void emitted.push(`${err.name}: ${err.message}`));
    const refused = await wrong.connect().then(() => wrong.ping()).then(() => "answered", (err: unknown) => String(err));
    wrong.disconnect();
    const said = [refused, ...emitted].join("\n");
    expect(refused).not.toBe("answered");
    expect(said).toMatch(/WRONGPASS|NOAUTH|invalid username-password/i);
    expect(leaks(Buffer.from(said), secrets)).toEqual([]);
    expect(said).not.toContain("not-the-password");
  });

  it("no secret appears in any log line, output record or error message while the processors handle good input, bad input, a MinIO cut and a Redis cut", async () => {
    const k = kafka();
    const admin = k.admin();
    await admin.connect();
    const start = new Map<string, Array<{ partition: number; offset: string }>>();
    for (const t of OUTPUTS) start.set(t, (await admin.fetchTopicOffsets(t)).map((p) => ({ partition: p.partition, offset: p.high })));

    const tree = uid("tree");
    const ids = { tenant, tree_id: tree, job_id: tree, run_id: `${tree}-run`, agent: "sec-agent" };
    const big = ["# Report", "", ...Array.from({ length: 200 }, (_, i) => `Line ${i} of the report says something about item ${i}.`)].join("\n");
    const content = JSON.stringify({ content: [{ type: "text", text: big }] });
    const result = (over: Partial<ToolResult> = {}): ToolResult => ({
      ...toolCall(ids),
      id: uid("res"),
      plugin: "docs",
      tool: "docs",
      function: "get_page",
      is_error: false,
      content,
      content_ref: null,
      size_bytes: content.length,
      labels: [],
      ...over,
    });
    const stripCall = (r: ToolResult): ToolResult => {
      const { context_used: _c, spend_share: _s, ...rest } = r as ToolResult & { context_used?: unknown; spend_share?: unknown };
      return rest;
    };
    const job: JobEvent = {
      id: uid("evt"), ...ids, job_id: tree, parent_job_id: null, run_id: null, kind: "started", started_by: "person", delegation: "none", depth: 0, outcome: null,
      principal: "pat", team: null, permissions: ["content"], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts: Date.now(),
    };
    const model: ModelCall = { id: uid("mc"), ...ids, request_id: uid("req"), kind: "ask", model: "gpt-4o", input_tokens: 100, max_output_tokens: 100, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, ts: Date.now() };
    const send = (topic: string, key: string, value: Buffer) => producer.send({ topic, messages: [{ key, value }] });

    // Good input through every processor.
    await send("oz0.jobs", tree, s.encode("JobEvent", job));
    await send("oz0.tool-results", ids.run_id, s.encode("ToolResult", stripCall(result())));
    await send("oz0.tool-calls.requested", ids.run_id, s.encode("ToolCall", toolCall({ ...ids, arguments: JSON.stringify({ archive: `oz0-file:sha256:${"a".repeat(64)}` }) })));
    await send("oz0.tool-calls.requested", ids.run_id, s.encode("ToolCall", toolCall({ ...ids, ...READ_RESULT, arguments: JSON.stringify({ ref: `oz0-file:sha256:${"b".repeat(64)}` }) })));
    await send("oz0.model-calls", ids.run_id, s.encode("ModelCall", model));
    // Bad input: not Avro, and an event the processor refuses.
    await send("oz0.tool-results", ids.run_id, Buffer.from("not avro at all"));
    await send("oz0.tool-calls.requested", ids.run_id, Buffer.from([0, 0, 0, 0, 1, 2, 3]));
    await send("oz0.tool-results", ids.run_id, s.encode("ToolResult", stripCall(result({ tenant: "" }))));

    // MinIO cut while fit-results offloads, then restored.
    const fit = running.find((r) => r.name === "fit-results");
    const before = fit?.stats.retries ?? 0;
    await minioProxy.cut();
    await send("oz0.tool-results", ids.run_id, s.encode("ToolResult", stripCall(result({ content: JSON.stringify({ content: [{ type: "text", text: big.replace("# Report", "# Second report") }] }) }))));
    for (let waited = 0; (fit?.stats.retries ?? 0) <= before && waited < 60_000; waited += 250) await sleep(250);
    await minioProxy.restore();

    // Redis cut while files-jobs keeps a job's threshold, then restored.
    const jobsProcessor = running.find((r) => r.name === "files-jobs");
    const jobsBefore = jobsProcessor?.stats.retries ?? 0;
    await redisProxy.cut();
    await send("oz0.jobs", tree, s.encode("JobEvent", { ...job, id: uid("evt"), job_id: uid("child"), parent_job_id: tree, depth: 1, delegation: "delegation" }));
    for (let waited = 0; (jobsProcessor?.stats.retries ?? 0) <= jobsBefore && waited < 60_000; waited += 250) await sleep(250);
    await redisProxy.restore();

    // Where a secret would break the connection, its failure is captured instead.
    const sasl = new kafkajs.Kafka({
      ...kafkaConfig("sec-sasl", endpoints(), { OZ0_KAFKA_SASL_MECHANISM: "plain", OZ0_KAFKA_USERNAME: "svc", OZ0_KAFKA_PASSWORD: secret("Kafka SASL password") }, log),
      retry: { retries: 0 },
      connectionTimeout: 3_000,
    }).admin();
    errors.push(String(await sasl.connect().then(() => "connected", (err: unknown) => (err instanceof Error ? `${err.name}: ${err.message} ${err.cause instanceof Error ? err.cause.message : ""}` : String(err)))));
    await sasl.disconnect().catch(() => undefined);
    const wrongMinio = new FileStore({ client: minioClient({ ...endpoints(), minioSecretKey: secret("wrong MinIO secret") }), bucket, keys: PayloadKeys.fromEnv({ OZ0_PAYLOAD_KEY: secret("OZ0_PAYLOAD_KEY") }) });
    errors.push(await wrongMinio.store({ tenant, tree }, Buffer.from("x")).then(() => "stored", (err: unknown) => (err instanceof Error ? `${err.name}: ${err.message} ${JSON.stringify(err)}` : String(err))));
    errors.push(String(await Promise.resolve().then(() => PayloadKeys.fromEnv({ OZ0_PAYLOAD_KEY: `${secret("OZ0_PAYLOAD_KEY")}x` })).then(() => "accepted", (err: unknown) => String(err))));

    // Everything the processors wrote since the start, read raw (Avro strings are UTF-8 as they are).
    const records: Buffer[] = [];
    const group = uid("sec-read");
    await setGroupOffsets(k, admin, group, [...start].map(([topic, offsets]) => ({ topic, partitions: offsets.map((o) => ({ partition: o.partition, offset: o.offset })) })));
    const consumer = kafka().consumer({ groupId: group, readUncommitted: false, maxWaitTimeInMs: TEST_FETCH_WAIT_MS });
    await consumer.connect();
    let last = Date.now();
    await consumer.subscribe({ topics: [...OUTPUTS], fromBeginning: false });
    await consumer.run({
      eachMessage: async ({ message }) => {
        last = Date.now();
        records.push(Buffer.concat([Buffer.from(message.key ?? ""), message.value ?? Buffer.alloc(0)]));
        return Promise.resolve();
      },
    });
    // The dead letters, the delivered offload and the refused input show up, then nothing more for a while.
    for (let waited = 0; waited < 60_000 && (records.length === 0 || Date.now() - last < 5_000); waited += 250) await sleep(250);
    await consumer.disconnect();
    await admin.disconnect();

    expect(fit?.stats.retries, "fit-results retried while MinIO was cut").toBeGreaterThan(before);
    expect(jobsProcessor?.stats.retries, "files-jobs retried while Redis was cut").toBeGreaterThan(jobsBefore);
    expect(running.reduce((n, r) => n + r.stats.deadLetters, 0), "the bad input was dead-lettered").toBeGreaterThanOrEqual(3);
    expect(records.length).toBeGreaterThan(5);
    expect(lines.some((l) => l.includes("retrying the batch"))).toBe(true);
    expect(errors.every((e) => e !== "connected" && e !== "stored" && e !== "accepted"), errors.join("\n")).toBe(true);
    // The records include the ones this test caused: its tree's.
    expect(records.some((r) => r.includes(Buffer.from(tree)))).toBe(true);

    const found = [
      ...lines.flatMap((l, i) => leaks(Buffer.from(l), secrets).map((x) => `log line ${i}: ${x}: ${l.slice(0, 200)}`)),
      ...records.flatMap((r, i) => leaks(r, secrets).map((x) => `record ${i}: ${x}`)),
      ...errors.flatMap((e, i) => leaks(Buffer.from(e), secrets).map((x) => `error ${i}: ${x}: ${e.slice(0, 200)}`)),
    ];
    expect(found).toEqual([]);
  }, 300_000);
});
