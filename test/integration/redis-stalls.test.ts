import { afterAll, describe, expect, it } from "vitest";
import { readRedisStalls, stallsBetween } from "../../bench/load/redis-stalls.ts";
import { redisClient } from "../../store/redis/client.ts";
import { endpoints } from "../support/kafka.ts";

const redis = redisClient(endpoints(), { maxRetriesPerRequest: 1 });
afterAll(() => redis.disconnect());

describe("Redis's stalls, read from its latency monitor", () => {
  it("SYS-6 finds a command that held Redis past the threshold, in the second it ended, with how long it took", async () => {
    const before = await readRedisStalls(redis);
    expect(before, "Redis answered CONFIG GET and LATENCY").not.toBeNull();
    const threshold = before!.thresholdMs;
    expect(threshold, "the stack starts Redis with --latency-monitor-threshold 10 (restart a stack started before it did)").toBeGreaterThan(0);
    // A script that keeps Redis busy for the threshold and 40 ms more: a stall of the kind `command`.
    const from = Date.now();
    const busyMs = threshold + 40;
    await redis.eval("local t0 = redis.call('TIME') local s0 = t0[1] * 1000000 + t0[2] repeat local t = redis.call('TIME') until t[1] * 1000000 + t[2] - s0 >= tonumber(ARGV[1]) * 1000 return 1", 0, busyMs);
    const to = Date.now();
    const after = await readRedisStalls(redis);
    const seen = stallsBetween(after!.stalls, from, to).filter((s) => s.event === "command");
    expect(seen.length, JSON.stringify(after!.stalls.slice(-5))).toBeGreaterThanOrEqual(1);
    expect(Math.max(...seen.map((s) => s.ms))).toBeGreaterThanOrEqual(busyMs);
  });
});
