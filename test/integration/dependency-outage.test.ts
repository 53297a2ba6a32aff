/**
 * A dependency failing for a while under the real runner, broker and registry, with the loop
 * state in a private redis-server broken on purpose: Redis answering OOM makes the processor
 * not ready (naming Redis and what to check) while it keeps retrying, then ready again, and
 * every input is decided once, none dead-lettered; a script cache flushed mid-load (as a
 * failover to a node without the scripts would leave it) loses nothing either: ioredis loads a
 * script again when the server answers NOSCRIPT, alone or in a pipeline.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setTimeout as sleep } from "node:timers/promises";
import type { Producer } from "kafkajs";
import { loopCallsProcessor } from "../../processors/loops/calls-processor.ts";
import { RedisLoopStore } from "../../processors/loops/redis-store.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import { Health } from "../../processors/ops/health.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { DEFAULT_RETRY } from "../../processors/runner/retry.ts";
import { startProcessor, type RunningProcessor } from "../../processors/runner/runner.ts";
import { KafkaTransport } from "../../processors/runner/transport.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { Decision, ToolCall } from "../../schemas/types.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { toolCall, uid } from "../support/events.ts";
import { collect, kafka, serde } from "../support/kafka.ts";
import { startPrivateRedis, type PrivateRedis } from "../support/private-redis.ts";
import { until } from "../support/promises.ts";

describe("a dependency failing for a while", () => {
  let s: Serde;
  let server: PrivateRedis;
  let redis: RedisClient;
  let admin: RedisClient;
  let producer: Producer;
  let running: RunningProcessor | undefined;
  const input = `drill.${uid("outage").replace(/-/g, "_")}.tool-calls`;
  const group = uid("outage");
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger({ test: "outage" }, (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
  const health = new Health();

  beforeAll(async () => {
    s = await serde();
    server = await startPrivateRedis("pw");
    redis = redisClient({ redisUrl: `redis://127.0.0.1:${server.port}`, redisPassword: server.password });
    admin = redisClient({ redisUrl: `redis://127.0.0.1:${server.port}`, redisPassword: server.password });
    const k = kafka().admin();
    await k.connect();
    await k.createTopics({ topics: [{ topic: input, numPartitions: 2 }], waitForLeaders: true });
    await k.disconnect();
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    const config = staticConfig([{ kind: "agent", id: "acme-reviewer", value: { on_loop: "stop" } }]);
    const transport = new KafkaTransport({ kafka: kafka(group), log, groupId: group, topics: [input], fromBeginning: true });
    health.starting("loop-calls", group);
    running = await startProcessor(loopCallsProcessor, { config, store: new RedisLoopStore(redis, new Keys("outage")) }, { transport, serde: s, log, retry: { ...DEFAULT_RETRY, maxBackoffMs: 500, unhealthyAfterMs: 2_000 } });
    health.started("loop-calls", () => running?.failing() ?? null);
    health.running();
    health.groupSeen("loop-calls", { state: "Stable", members: 1 });
  });

  afterAll(async () => {
    await running?.stop();
    await producer?.disconnect();
    redis?.disconnect();
    admin?.disconnect();
    await server?.stop();
    const k = kafka().admin();
    await k.connect();
    await k.deleteTopics({ topics: [input] }).catch(() => undefined);
    await k.disconnect();
  });

  const send = (calls: ToolCall[]) => producer.send({ topic: input, messages: calls.map((c) => ({ key: c.run_id, value: s.encode("ToolCall", c) })) });
  const callsOf = (runs: string[], n: number) => runs.flatMap((run) => Array.from({ length: n }, (_, i) => toolCall({ run_id: run, function: "search", arguments: JSON.stringify({ q: `q${i % 3}` }) })));
  const decided = async (ids: Set<string>, timeoutMs: number) => {
    const ds = await collect<Decision>("oz0.call-decisions", "Decision", s, (d) => ids.has(d.input_id), ids.size, timeoutMs);
    return new Set(ds.map((d) => d.input_id));
  };

  it("SYS-3 Redis answering OOM: not ready past the bound, naming Redis and what to check, still retrying; ready again once memory is back, every input decided once, none dead-lettered", async () => {
    const runs = Array.from({ length: 4 }, () => uid("run"));
    const warm = callsOf(runs, 2);
    await send(warm);
    await decided(new Set(warm.map((c) => c.id)), 60_000);
    expect(health.ready().ready).toBe(true);

    await admin.config("SET", "maxmemory", "1");
    const during = callsOf(runs, 5);
    await send(during);
    await until("not ready", () => !health.ready().ready, 30_000);
    const reasons = health.ready().reasons.join("\n");
    expect(reasons).toMatch(/loop-calls: redis failing for \d+ s \(\d+ attempts\), still retrying: .*OOM command not allowed/);
    expect(reasons).toContain("OZ0_REDIS_URL");
    expect(health.live().live).toBe(true);
    expect(lines.some((l) => l.level === "error" && String(l.msg).includes("past the retry bound") && l.dependency === "redis")).toBe(true);
    await sleep(1_500);
    expect(running?.stats.deadLetters).toBe(0);

    await admin.config("SET", "maxmemory", "0");
    const got = await decided(new Set(during.map((c) => c.id)), 60_000);
    expect(got.size).toBe(during.length);
    await until("ready again", () => health.ready().ready, 10_000);
    expect(lines.some((l) => String(l.msg).includes("dependency answering again"))).toBe(true);
    expect(running?.stats.deadLetters).toBe(0);
    expect(running?.stats.retries).toBeGreaterThan(1);
  });

  it("SYS-3 the script cache flushed mid-load, again and again: nothing lost, nothing dead-lettered", async () => {
    const runs = Array.from({ length: 4 }, () => uid("run"));
    const all: ToolCall[] = [];
    for (let round = 0; round < 6; round++) {
      const calls = callsOf(runs, 3);
      all.push(...calls);
      await send(calls);
      await admin.script("FLUSH");
      await sleep(150);
    }
    const got = await decided(new Set(all.map((c) => c.id)), 60_000);
    expect(got.size).toBe(all.length);
    expect(running?.stats.deadLetters).toBe(0);
  });
});
