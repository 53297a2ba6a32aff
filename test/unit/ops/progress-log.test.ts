import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { createLogger, formatLine } from "../../../processors/runner/log.ts";
import { Histogram } from "../../../processors/ops/metrics.ts";
import { progressReport, summaryReport, type Snapshot } from "../../../processors/ops/progress.ts";

describe("structured log lines", () => {
  it("hold ts, level and msg, which no field overwrites, and write errors and bigints readably", () => {
    const err = Object.assign(new Error("connection refused"), { code: "ECONNREFUSED" });
    const line = formatLine("warn", "dependency failed", { component: "pipeline", level: "debug", msg: "other", error: err, offset: 12n }, new Date("2025-01-02T03:04:05.000Z"));
    expect(line.endsWith("\n")).toBe(true);
    const parsed = JSON.parse(line) as Record<string, unknown>;
    expect(Object.keys(parsed).slice(0, 2)).toEqual(["level", "ts"]);
    // Each name once: a line read by a tool that keeps the first of two is read the same.
    expect(line.match(/"(level|ts|msg)":/g)).toEqual(['"level":', '"ts":', '"msg":']);
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

describe("loggers", () => {
  const capture = (base: Record<string, unknown> = {}) => {
    const lines: Array<Record<string, unknown>> = [];
    const raw: string[] = [];
    const log = createLogger(base, (l) => {
      raw.push(l);
      lines.push(JSON.parse(l) as Record<string, unknown>);
    });
    return { log, lines, raw };
  };

  it("write the logger's fields, a child's and the call's, the call's winning, each name once", () => {
    const { log, lines, raw } = capture({ component: "pipeline", processor: "a" });
    log.child({ processor: "loop-calls", group: "g" }).warn("slow", { processor: "other", partition: 3 });
    log.info("plain");
    expect(lines[0]).toMatchObject({ level: "warn", msg: "slow", component: "pipeline", processor: "other", group: "g", partition: 3 });
    expect(new Date(String(lines[0]?.ts)).toISOString()).toBe(lines[0]?.ts);
    expect(raw[0]?.match(/"processor":/g)).toHaveLength(1);
    expect(lines[1]).toMatchObject({ level: "info", msg: "plain", component: "pipeline", processor: "a" });
    expect(raw.every((l) => l.endsWith("}\n") && l.split("\n").length === 2)).toBe(true);
  });

  it("leave out what is below OZ0_LOG_LEVEL (info unless set)", () => {
    const before = process.env.OZ0_LOG_LEVEL;
    try {
      process.env.OZ0_LOG_LEVEL = "warn";
      const warned = capture();
      warned.log.info("no");
      warned.log.error("yes");
      expect(warned.lines.map((l) => [l.level, l.msg])).toEqual([["error", "yes"]]);
      delete process.env.OZ0_LOG_LEVEL;
      const usual = capture();
      usual.log.debug("no");
      usual.log.info("yes");
      expect(usual.lines.map((l) => l.msg)).toEqual(["yes"]);
      process.env.OZ0_LOG_LEVEL = "debug";
      const all = capture();
      all.log.debug("yes");
      expect(all.lines.map((l) => l.level)).toEqual(["debug"]);
    } finally {
      if (before === undefined) delete process.env.OZ0_LOG_LEVEL;
      else process.env.OZ0_LOG_LEVEL = before;
    }
  });

  it("write to stderr by default, a line logged just before exit included", () => {
    const code = `import { createLogger } from "./processors/runner/log.ts"; createLogger({ component: "exit" }).error("last words", { n: 1 }); process.exit(3);`;
    const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { cwd: process.cwd(), encoding: "utf8", timeout: 30_000, env: { ...process.env, OZ0_LOG_LEVEL: "info" } });
    expect(run.status).toBe(3);
    expect(run.stdout).toBe("");
    const line = JSON.parse(run.stderr.trim().split("\n").at(-1) ?? "") as Record<string, unknown>;
    expect(line).toMatchObject({ level: "error", msg: "last words", component: "exit", n: 1 });
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
