import { describe, expect, it } from "vitest";
import { StoreRefused, TransientError } from "../../../processors/runner/errors.ts";
import { Health } from "../../../processors/ops/health.ts";
import { Histogram } from "../../../processors/ops/metrics.ts";
import { pipelineFamilies } from "../../../processors/ops/ops-metrics.ts";
import { backoffMs, DEFAULT_RETRY, retrySettingsFromEnv, RetryWatch } from "../../../processors/runner/retry.ts";

const oom = new TransientError("Redis failed running limitsTreeSteps: OOM command not allowed when used memory > 'maxmemory'.", { dependency: "redis" });

describe("a failing dependency retried with capped exponential backoff and jitter", () => {
  it("SYS-1 doubles the pause each attempt up to the cap, half of it random", () => {
    const low = (a: number) => backoffMs(a, DEFAULT_RETRY, () => 0);
    const high = (a: number) => backoffMs(a, DEFAULT_RETRY, () => 1);
    expect([1, 2, 3, 4].map(low)).toEqual([100, 200, 400, 800]);
    expect([1, 2, 3, 4].map(high)).toEqual([200, 400, 800, 1600]);
    expect(high(7)).toBe(10_000);
    expect(high(50)).toBe(10_000);
    expect(low(50)).toBe(5_000);
    for (let a = 1; a < 40; a++) {
      const b = backoffMs(a, DEFAULT_RETRY);
      expect(b).toBeGreaterThanOrEqual(low(a));
      expect(b).toBeLessThanOrEqual(high(a));
    }
  });

  it("SYS-1 reads its bounds from OZ0_RETRY_*, with defaults, refusing what is out of range", () => {
    expect(retrySettingsFromEnv({})).toEqual(DEFAULT_RETRY);
    expect(retrySettingsFromEnv({ OZ0_RETRY_MAX_BACKOFF_MS: "2000", OZ0_RETRY_UNHEALTHY_AFTER_MS: "5000", OZ0_RETRY_UNHEALTHY_AFTER_ATTEMPTS: "3" })).toEqual({ baseMs: 100, maxBackoffMs: 2000, unhealthyAfterMs: 5000, unhealthyAfterAttempts: 3 });
    expect(() => retrySettingsFromEnv({ OZ0_RETRY_UNHEALTHY_AFTER_ATTEMPTS: "0" })).toThrow("OZ0_RETRY_UNHEALTHY_AFTER_ATTEMPTS=0 is not a whole number of attempts from 1 to 1000000");
  });

  it("SYS-1 a batch failing past the time bound makes the processor not ready, naming the dependency and what to check, until it goes through", () => {
    let now = 1_000_000;
    const watch = new RetryWatch({ ...DEFAULT_RETRY, unhealthyAfterMs: 30_000, unhealthyAfterAttempts: 1_000 }, () => now);
    const health = new Health({ now: () => now });
    health.starting("limits-model-calls", "g");
    health.started("limits-model-calls", () => watch.failing());
    health.running();
    health.groupSeen("limits-model-calls", { state: "Stable", members: 1 });
    expect(health.ready().ready).toBe(true);

    const episode = watch.begin();
    const crossings: boolean[] = [];
    for (let attempt = 1; attempt <= 5; attempt++) {
      crossings.push(episode.failed(oom, attempt).crossed);
      now += 10_000;
      health.groupSeen("limits-model-calls", { state: "Stable", members: 1 });
    }
    // Attempts at 0, 10, 20, 30 and 40 s: the fourth is 30 s after the first.
    expect(crossings).toEqual([false, false, false, true, false]);
    const r = health.ready();
    expect(r.ready).toBe(false);
    expect(r.reasons.join("\n")).toContain("limits-model-calls: redis failing for 50 s (5 attempts), still retrying: Redis failed running limitsTreeSteps: OOM");
    expect(r.reasons.join("\n")).toContain("OZ0_REDIS_URL");
    expect(health.live().live).toBe(true);
    expect(watch.retryingSeconds()).toBe(50);

    expect(episode.end()?.dependency).toBe("redis");
    expect(watch.failing()).toBeNull();
    expect(health.ready().ready).toBe(true);
    expect(watch.retryingSeconds()).toBe(0);
  });

  it("SYS-1 past the attempts bound it is not ready however soon; a batch that never crossed ends quietly", () => {
    const watch = new RetryWatch({ ...DEFAULT_RETRY, unhealthyAfterMs: 3_600_000, unhealthyAfterAttempts: 3 }, () => 0);
    const quiet = watch.begin();
    quiet.failed(oom, 1);
    expect(quiet.end()).toBeNull();
    const loud = watch.begin();
    expect([1, 2, 3].map((a) => loud.failed(new StoreRefused("x", { dependency: "minio", server: "x" }), a).crossed)).toEqual([false, false, true]);
    expect(watch.failing()?.dependency).toBe("minio");
  });

  it("SYS-1 the metrics show the failing dependency and how long the batch has retried", () => {
    let now = 0;
    const watch = new RetryWatch({ ...DEFAULT_RETRY, unhealthyAfterAttempts: 2 }, () => now);
    const p = { name: "loop-calls", stats: { in: 0, out: 0, deadLetters: 0, batches: 0, retries: 0, outcomes: {}, deadLetterErrors: {} }, latency: new Histogram(), failing: () => watch.failing(), retryingSeconds: () => watch.retryingSeconds() };
    const gauge = (name: string) => pipelineFamilies({ processors: [p], lag: () => 0 }).find((f) => f.name === name)?.samples;
    expect(gauge("oz0_processor_dependency_failing")).toEqual([{ labels: { processor: "loop-calls" }, value: 0 }]);
    const e = watch.begin();
    e.failed(oom, 1);
    now = 4_000;
    e.failed(oom, 2);
    expect(gauge("oz0_processor_dependency_failing")).toEqual([{ labels: { processor: "loop-calls", dependency: "redis" }, value: 1 }]);
    expect(gauge("oz0_processor_retrying_seconds")).toEqual([{ labels: { processor: "loop-calls" }, value: 4 }]);
  });
});
