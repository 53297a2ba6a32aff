import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisLoopStore } from "../../processors/loops/redis-store.ts";
import { utcDay } from "../../processors/loops/store.ts";
import type { DoctorReport } from "../../processors/ops/doctor.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { DeadLetter } from "../../schemas/types.ts";
import { Keys } from "../../store/redis/keys.ts";
import { uid } from "../support/events.ts";
import { oz0, oz0ViaNpx } from "../support/oz0.ts";
import { endpoints, kafka, serde } from "../support/kafka.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";


describe("oz0 doctor: the pipeline's health at a glance, read from the real services", () => {
  let s: Serde;
  let redis: RedisClient;
  const processor = uid("planted");
  const tool = uid("tool").replace(/-/g, "_");

  beforeAll(async () => {
    s = await serde();
    redis = redisClient(endpoints());
    // A dead letter of a processor of its own, as the runner writes one.
    const letter: DeadLetter = { id: uid("dl"), processor, topic: "oz0.tool-calls", partition: 0, offset: "7", key: null, value: Buffer.from("junk"), reason: "arguments are not JSON: planted", error: "invalid", ts: Date.now() };
    const producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    await producer.send({ topic: "oz0.dead-letter", messages: [{ key: "oz0.tool-calls/0/7", value: s.encode("DeadLetter", letter) }] });
    await producer.disconnect();
    // A tool that looped in three tenants today, counted as loop-calls counts it.
    const store = new RedisLoopStore(redis, new Keys());
    const counts = ["t1", "t2", "t3"].map((tenant) => ({ id: uid("loop"), day: utcDay(Date.now()), tenant: `${tool}-${tenant}`, plugin: "doctor_docs", tool }));
    await store.write("calls", [{ tenant: "t", run: uid("run"), source: "oz0.tool-calls:0", at: "1", from: "1", state: "{}", memos: [], flags: [], deadlines: [], settled: [], counts }]);
  });

  afterAll(() => redis?.disconnect());

  it("LOOP-9 shows every processor's lag and rate, the planted dead letter by processor and reason, and the tool looping in three tenants with its kill switch", async () => {
    const r = await oz0(["doctor", "--json", "--sample", "0.5"]);
    expect(r.code, r.err).toBe(0);
    const report = JSON.parse(r.out) as DoctorReport;
    expect(report.services.map((x) => [x.name, x.ok])).toEqual([
      ["kafka", true],
      ["schema registry", true],
      ["redis", true],
      ["minio", true],
    ]);
    expect(report.processors.map((p) => p.name)).toEqual(expect.arrayContaining(["loop-calls", "limits-model-calls", "fit-results", "trace-sink-trace", "audit-sink-audit"]));
    for (const p of report.processors) {
      expect(p.lag).toBeGreaterThanOrEqual(0);
      expect(p.rate).toBeGreaterThanOrEqual(0);
    }
    const planted = report.dead_letters.filter((d) => d.processor === processor);
    expect(planted.map(({ last_at: _, ...d }) => d)).toEqual([{ processor, error: "invalid", count: 1, reason: "arguments are not JSON: planted" }]);
    expect(planted[0]?.last_at).toBeGreaterThan(Date.now() - 600_000);
    expect(report.looping?.tools.filter((t) => t.tool === tool)).toEqual([expect.objectContaining({ plugin: "doctor_docs", tenants: [`${tool}-t1`, `${tool}-t2`, `${tool}-t3`], loops: 3 })]);

    // As the README runs it: npx oz0 (the other calls start the same bin with node).
    const text = await oz0ViaNpx(["doctor", "--sample", "0"]);
    expect(text.code).toBe(0);
    expect(text.out).toContain(`${processor}  invalid  1`);
    expect(text.out).toContain(`doctor_docs/${tool}  3 tenants`);
    expect(text.out).toContain(`kill-switch doctor_docs/${tool}`);
  });

  it("a service that does not answer is named, nothing is started, and the exit status is 1", async () => {
    const r = await oz0(["doctor", "--json", "--sample", "0"], { OZ0_REDIS_URL: "redis://127.0.0.1:1" });
    expect(r.code).toBe(1);
    const report = JSON.parse(r.out) as DoctorReport;
    const down = report.services.find((x) => x.name === "redis");
    expect(down?.ok).toBe(false);
    expect(down?.error).toMatch(/ECONNREFUSED|connect|closed/i);
    expect(report.services.find((x) => x.name === "kafka")?.ok).toBe(true);
    expect(report.looping).toBeNull();
    const usage = await oz0(["doctor", "--hours", "zero"]);
    expect(usage.code).toBe(2);
  });
});
