import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MEASURED, MEASURED_KINDS } from "../../bench/load/play.ts";
import { runLoad } from "../../bench/load/run.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { endpoints } from "../support/kafka.ts";

/** The cells of the Markdown table row that starts with `first`. */
function row(md: string, first: string): string[] {
  const line = md.split("\n").find((l) => l.startsWith(`| ${first} |`));
  if (!line) throw new Error(`no row "${first}" in the report`);
  return line.split("|").slice(1, -1).map((c) => c.trim());
}

/** Answers whose outcome starts with `prefix` (`tool_call:report` takes `tool_call:report LoopDetected`). */
const outcomes = (map: ReadonlyMap<string, number>, prefix: string): number => [...map].filter(([k]) => k === prefix || k.startsWith(`${prefix} `)).reduce((s, [, n]) => s + n, 0);

const num = (cell: string | undefined): number => Number((cell ?? "").replace(/,/g, "").replace(/x$/, ""));

describe("the load test against the real services", () => {
  let out: string | undefined;
  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  it("SYS-6 plays a small bounded load through the in-process pipeline and the passthrough, and reports every figure", async () => {
    out = await mkdtemp(join(tmpdir(), "oz0-load-"));
    const started = Date.now();
    const { result, markdown, files } = await runLoad({
      endpoints: endpoints(),
      events: 300,
      seconds: 60,
      runtimes: 16,
      seed: 3,
      warmUpEvents: 100,
      external: false,
      outDir: out,
      command: "npm run load -- --events 300 --seconds 60 --runtimes 16 --seed 3",
      progress: false,
      log: createLogger({ test: "load" }, () => {}),
    });
    // Bounded: two warm-ups and two phases of at most 60 s each (the warm-ups of 100 events take
    // seconds), plus starting the pipeline.
    expect(Date.now() - started).toBeLessThan(330_000);
    expect(result.plan.events).toBeGreaterThanOrEqual(300);
    // Seed 3's plan at 300 events has delegators asking one child over the fan-out, loopers, readers and spenders.
    for (const kind of ["delegator", "looper", "reader", "spender"] as const) expect(result.plan.trees[kind], kind).toBeGreaterThan(0);
    expect(result.pipeline.rec.events).toBeLessThanOrEqual(result.plan.events);
    expect(result.passthrough.rec.events).toBe(result.plan.events);

    const md = await readFile(files.markdown, "utf8");
    expect(md).toBe(markdown);
    expect(result.warmUpEvents).toBeGreaterThanOrEqual(100);
    expect(md).toContain(`a warm-up plan of ${result.warmUpEvents} events (seed 4)`);
    for (const h of ["## Throughput", "## Latency from ask to decision", "### Slow answers over time", "## Consumer lag", "## Offloaded results", "## Mix", "## Processors (in this process)"]) expect(md).toContain(h);
    // Every answer counted in the slow answers' row, slow or not.
    expect(row(md, "the pipeline's phase")[1]).toMatch(new RegExp(` of ${result.pipeline.rec.answers}$`));
    // Redis's latency monitor read after each phase: the stack starts Redis with it at 10 ms.
    for (const p of [result.pipeline, result.passthrough]) expect(p.redis?.thresholdMs, "Redis's latency monitor (the stack starts Redis with --latency-monitor-threshold 10; restart a stack started before)").toBe(10);
    expect(md).toContain("| phase | threshold | seconds with a stall, by event | slow answers beside one |");

    const rate = row(md, "sustained events per second");
    expect(num(rate[1])).toBeGreaterThan(0);
    expect(num(rate[2])).toBeGreaterThan(0);
    expect(num(rate[3])).toBeGreaterThan(0);
    expect(num(row(md, "events published")[1])).toBeGreaterThan(100);

    for (const k of MEASURED_KINDS) {
      const cells = row(md, MEASURED[k].exchange);
      // answers, p50, p95, p99, then the passthrough's p50, p95, p99 and both ratios
      for (const i of [2, 3, 4, 5, 6, 7, 8, 9, 10]) expect(num(cells[i]), `${k} column ${i}: ${cells.join(" | ")}`).toBeGreaterThan(0);
    }

    for (const name of ["fit-results", "loop-calls", "limits-model-calls", "limits-jobs", "read-result", "budget-fill-in", "passthrough"]) {
      expect(Number(row(md, name)[5]), `lag samples of ${name}`).toBeGreaterThan(0);
    }
    // The lag is read as the phase starts, once a second, and once more after its last answer: a
    // phase of this size can end within its first second, so two rounds is the least, and they
    // span the answers.
    const lag = result.pipeline.lag;
    expect(lag.length).toBeGreaterThanOrEqual(2);
    expect(lag[0]!.at).toBeLessThanOrEqual(result.pipeline.rec.firstAt!);
    expect(lag[lag.length - 1]!.at).toBeGreaterThanOrEqual(result.pipeline.rec.lastAt!);
    // What the pipeline causes per event beyond the passthrough (its process and each service's
    // extra), and what it writes per event: records to Kafka, objects to MinIO.
    const caused = row(md, "caused by the pipeline");
    expect(num(caused[1]?.replace(/^at least /, "")), caused.join(" | ")).toBeGreaterThan(0);
    expect(md).toMatch(/Caused by the pipeline, ms per event: (at least )?[\d.]+ = this process's extra [\d.]+ \+ the broker's extra (unknown|[\d.]+) \+ MinIO's extra/);
    const records = row(md, "records written to Kafka, beyond the event");
    expect(num(records[1]), records.join(" | ")).toBeGreaterThan(0);
    expect(num(records[2]), records.join(" | ")).toBeGreaterThan(0);
    // Kafka's own topics: the pipeline's transactions write their offsets, markers and states
    // there, the passthrough's consumer its offsets.
    const internal = row(md, "records Kafka wrote to its own topics (committed offsets, transaction state)");
    expect(num(internal[1]), internal.join(" | ")).toBeGreaterThan(0);
    expect(result.pipeline.written?.internal, "the pipeline's phase wrote to __transaction_state and __consumer_offsets").toBeGreaterThan(0);
    expect(num(row(md, "objects the pipeline's process put to MinIO")[1])).toBeGreaterThan(0);
    expect(result.pipeline.written?.objects).toBeGreaterThan(0);
    expect(num(row(md, "results offloaded to MinIO")[1])).toBeGreaterThan(0);
    expect(result.pipeline.rec.offloadedBytes).toBeGreaterThan(10_000);
    // Reads of the offloaded results went to the refs their stubs named, and were answered.
    expect(outcomes(result.pipeline.rec.outcomes, "read_result:read")).toBeGreaterThan(0);
    // Loops, refusals and the budget all answered.
    expect(outcomes(result.pipeline.rec.outcomes, "tool_call:report")).toBeGreaterThan(0);
    expect(outcomes(result.pipeline.rec.outcomes, "child:refuse")).toBeGreaterThan(0);
    expect(outcomes(result.pipeline.rec.outcomes, "model_ask:stop")).toBeGreaterThan(0);
    expect(result.pipeline.rec.errors).toEqual([]);

    const svg = await readFile(files.chart, "utf8");
    expect(svg).toContain("<svg");
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
    expect(svg).toContain("consumer lag (messages)");
    expect(svg).toContain("events per second");
    expect(svg).toContain(">loop-calls</text>");
  }, 420_000);
});
