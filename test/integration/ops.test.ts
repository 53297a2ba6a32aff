import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setTimeout as sleep } from "node:timers/promises";
import type { Admin, Producer } from "kafkajs";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { startOps, type Ops } from "../../processors/ops/ops.ts";
import type { RunningProcessor } from "../../processors/runner/runner.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { ToolCall } from "../../schemas/types.ts";
import { Keys } from "../../store/redis/keys.ts";
import { toolCall, uid } from "../support/events.ts";
import { endpoints, kafka, serde, startOnKafka } from "../support/kafka.ts";
import { redisTally, tallyProcessor } from "../support/tally-processor.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";

/** Polls `probe` until it returns a value, or fails saying what it last saw. */
async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await sleep(250);
  }
  throw new Error(`${what} did not happen within ${timeoutMs} ms${last instanceof Error ? `: ${last.message}` : ""}`);
}

/** The samples of a metrics text, by name with labels as written. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const i = line.lastIndexOf(" ");
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

describe("health and metrics endpoints of processors on the real broker", () => {
  let s: Serde;
  let redis: RedisClient;
  let producer: Producer;
  let admin: Admin;
  let ops: Ops;
  let tally: RunningProcessor | undefined;
  const keys = new Keys(uid("ops").replace(/-/g, "_"));
  const group = uid("tally");
  const log = createLogger({ test: "ops" }, () => {});

  beforeAll(async () => {
    s = await serde();
    redis = redisClient(endpoints());
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    admin = kafka().admin();
    await admin.connect();
    ops = await startOps({ address: { host: "127.0.0.1", port: 0 }, log, admin, periodMs: 500 });
  });

  afterAll(async () => {
    await tally?.stop();
    await ops?.stop();
    await admin?.disconnect();
    await producer?.disconnect();
    redis?.disconnect();
  });

  const get = (path: string) => fetch(`${ops.server.url}${path}`);

  it("serves the families added beside the pipeline's (the model gateway's, under npm start) on the same /metrics", async () => {
    ops.addMetrics(() => [{ name: "oz0_gateway_requests_total", help: "added", type: "counter", samples: [{ labels: { provider: "openai", outcome: "answered" }, value: 3 }] }]);
    const got = samples(await (await get("/metrics")).text());
    expect(got.get('oz0_gateway_requests_total{provider="openai",outcome="answered"}')).toBe(3);
    expect(got.has("oz0_ready")).toBe(true);
  });

  it("serves only the families named by ?name=, as the load's once-a-second samples ask", async () => {
    const res = await get("/metrics?name=process_cpu_seconds_total&name=oz0_ready");
    expect(res.status).toBe(200);
    const got = samples(await res.text());
    expect(got.get("process_cpu_seconds_total")).toBeGreaterThan(0);
    expect(got.has("oz0_ready")).toBe(true);
    expect([...got.keys()].every((k) => k.startsWith("process_cpu_seconds_total") || k.startsWith("oz0_ready"))).toBe(true);
  });

  it("serves prom-client's default process metrics, and a second pipeline's registry in the same process does not clash", async () => {
    const other = await startOps({ address: { host: "127.0.0.1", port: 0 }, log, admin, periodMs: 500 });
    try {
      other.addMetrics(() => [{ name: "oz0_gateway_requests_total", help: "other", type: "counter", samples: [{ labels: { provider: "anthropic", outcome: "refused" }, value: 1 }] }]);
      const [mine, theirs] = await Promise.all([get("/metrics").then((r) => r.text()), fetch(`${other.server.url}/metrics`).then((r) => r.text())]);
      for (const text of [mine, theirs]) {
        const got = samples(text);
        expect(got.get("process_cpu_seconds_total")).toBeGreaterThan(0);
        expect(got.get("process_resident_memory_bytes")).toBeGreaterThan(0);
        expect(Math.abs((got.get("process_start_time_seconds") ?? 0) - (Date.now() / 1000 - process.uptime()))).toBeLessThan(2);
        expect(got.has("nodejs_eventloop_lag_seconds")).toBe(true);
        expect(got.has("nodejs_heap_size_used_bytes")).toBe(true);
        expect(text).toMatch(/^# TYPE nodejs_gc_duration_seconds histogram$/m);
      }
      expect(samples(theirs).get('oz0_gateway_requests_total{provider="anthropic",outcome="refused"}')).toBe(1);
      expect(samples(theirs).has('oz0_gateway_requests_total{provider="openai",outcome="answered"}')).toBe(false);
      expect(samples(mine).has('oz0_gateway_requests_total{provider="anthropic",outcome="refused"}')).toBe(false);
    } finally {
      await other.stop();
    }
  });

  it("turns ready once the processor started and its group is stable, then counts events in and out, dead letters, decisions and latency", async () => {
    expect(ops.server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await get("/health/live")).status).toBe(200);
    const starting = await get("/health/ready");
    expect(starting.status).toBe(503);
    expect(((await starting.json()) as { reasons: string[] }).reasons).toContain("the pipeline is starting");

    ops.starting(tallyProcessor.name, group);
    tally = await startOnKafka(tallyProcessor, redisTally(redis, keys), s, group);
    ops.started(tally, group);
    ops.running();
    const ready = await eventually("ready", async () => {
      const res = await get("/health/ready");
      return res.status === 200 ? ((await res.json()) as { ready: boolean; processors: Record<string, { state: string; members: number }> }) : undefined;
    });
    expect(ready.ready).toBe(true);
    expect(ready.processors.tally).toMatchObject({ state: "Stable", members: 1 });

    const run = uid("run");
    const send = (calls: ToolCall[]) => producer.send({ topic: "oz0.tool-calls", messages: calls.map((c) => ({ key: run, value: s.encode("ToolCall", c) })) });
    await send([toolCall({ run_id: run }), toolCall({ run_id: run }), toolCall({ run_id: run, arguments: "[1]" }), toolCall({ run_id: run })]);
    await producer.send({ topic: "oz0.tool-calls", messages: [{ key: run, value: Buffer.from("not avro") }] });

    // Other tests may publish to the same topic; what these inputs must show holds whatever else comes.
    const m = await eventually("the metrics to count the inputs", async () => {
      const res = await get("/metrics");
      expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
      const got = samples(await res.text());
      const dead = (error: string) => got.get(`oz0_processor_dead_letters_total{processor="tally",error="${error}"}`) ?? 0;
      return (got.get('oz0_processor_events_in_total{processor="tally"}') ?? 0) >= 5 && dead("invalid") >= 1 && dead("undecodable") >= 1 ? got : undefined;
    });
    const inputs = m.get('oz0_processor_events_in_total{processor="tally"}') ?? NaN;
    const outputs = m.get('oz0_processor_events_out_total{processor="tally"}') ?? NaN;
    const deadLetters = [...m].filter(([k]) => k.startsWith('oz0_processor_dead_letters_total{processor="tally"')).reduce((a, [, v]) => a + v, 0);
    expect(outputs).toBeGreaterThanOrEqual(3);
    // The tally answers each valid call with one allow: every input is an output or a dead letter.
    expect(inputs).toBe(outputs + deadLetters);
    expect(m.get('oz0_processor_decisions_total{processor="tally",kind="allow"}')).toBe(outputs);
    expect(m.get('oz0_processor_decision_latency_seconds_count{processor="tally"}')).toBe(inputs);
    expect(m.get('oz0_processor_decision_latency_seconds_bucket{processor="tally",le="+Inf"}')).toBe(inputs);
    expect(m.get('oz0_processor_batches_total{processor="tally"}')).toBeGreaterThanOrEqual(1);
    expect(m.get("oz0_ready")).toBe(1);

    const lag = await eventually("the lag to be read", async () => {
      const v = samples(await (await get("/metrics")).text()).get('oz0_processor_consumer_lag{processor="tally"}');
      return v !== undefined && !Number.isNaN(v) ? v : undefined;
    });
    expect(lag).toBeGreaterThanOrEqual(0);

    ops.health.stopping();
    const stopping = await get("/health/ready");
    expect(stopping.status).toBe(503);
    expect(((await stopping.json()) as { phase: string }).phase).toBe("stopping");
    expect((await get("/nothing")).status).toBe(404);
  });
});
