import { describe, expect, it } from "vitest";
import { formatLine } from "../../../processors/runner/log.ts";
import { Histogram } from "../../../processors/runner/metrics.ts";
import { progressReport, summaryReport, type Snapshot } from "../../../processors/runner/progress.ts";

describe("structured log lines", () => {
  it("start with ts, level and msg, which no field overwrites, and write errors and bigints readably", () => {
    const err = Object.assign(new Error("connection refused"), { code: "ECONNREFUSED" });
    const line = formatLine("warn", "dependency failed", { component: "pipeline", level: "debug", msg: "other", error: err, offset: 12n }, new Date("2025-01-02T03:04:05.000Z"));
    expect(line.endsWith("\n")).toBe(true);
    const parsed = JSON.parse(line) as Record<string, unknown>;
    expect(Object.keys(parsed).slice(0, 3)).toEqual(["ts", "level", "msg"]);
    expect(parsed).toMatchObject({ ts: "2025-01-02T03:04:05.000Z", level: "warn", msg: "dependency failed", component: "pipeline", offset: "12" });
    expect(parsed.error).toEqual({ name: "Error", message: "connection refused", code: "ECONNREFUSED" });
  });

  it("writes a line even when a field cannot be written as JSON", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const parsed = JSON.parse(formatLine("error", "boom", { cyclic })) as Record<string, unknown>;
    expect(parsed).toMatchObject({ level: "error", msg: "boom" });
    expect(String(parsed.log_error)).toMatch(/fields not written/);
  });
});

describe("what npm start prints", () => {
  const snap = (name: string, over: Partial<Snapshot>): Snapshot => ({ name, in: 0, out: 0, deadLetters: 0, outcomes: {}, deadLetterErrors: {}, ...over });

  it("shows events per second, lag and decisions by kind for each processor", () => {
    const before = new Map([["loop-calls", snap("loop-calls", { in: 100 })]]);
    const report = progressReport({
      before,
      now: [snap("loop-calls", { in: 150, out: 150, outcomes: { allow: 140, stop: 2, report: 8 } }), snap("fit-results", { in: 20, out: 20, deadLetters: 1, outcomes: { delivered: 19, offloaded: 3, fitted: 5 }, deadLetterErrors: { invalid: 1 } })],
      seconds: 5,
      elapsedS: 35,
      lag: (n) => (n === "loop-calls" ? 2 : 0),
      ready: true,
    });
    const [head, calls, results] = report.split("\n");
    expect(head).toBe("[35 s] ready: 14/s in, 34/s out, lag 2, 1 dead letters");
    expect(calls).toMatch(/loop-calls\s+10\/s in\s+lag 2\s+allow 140, stop 2, report 8$/);
    expect(results).toMatch(/fit-results\s+4\/s in\s+lag 0\s+delivered 19, fitted 5, offloaded 3; dead letters 1 \(invalid 1\)$/);
  });

  it("sums up each processor with its latency quantiles when it stops", () => {
    const h = new Histogram([0.01, 0.1]);
    h.observe(0.005);
    h.observe(0.05);
    const text = summaryReport([{ name: "limits-jobs", stats: { in: 10, out: 4, deadLetters: 0, batches: 2, retries: 1, outcomes: { allow: 3, refuse: 1 }, deadLetterErrors: {} }, latency: h }], 10);
    expect(text).toBe("summary after 10 s:\n  limits-jobs: 10 in (1.0/s), 4 out, 0 dead letters, 1 retries; allow 3, refuse 1; latency p50 10 ms, p99 98 ms");
  });
});

describe("the summary of a catch-up", () => {
  it("says a latency at the top bucket is over it, not equal to it", () => {
    const h = new Histogram([0.1, 60]);
    h.observe(3600);
    const text = summaryReport([{ name: "p", stats: { in: 1, out: 1, deadLetters: 0, batches: 1, retries: 0, outcomes: {}, deadLetterErrors: {} }, latency: h }], 1);
    expect(text).toMatch(/latency p50 over 60 s, p99 over 60 s$/);
  });
});
