import { describe, expect, it } from "vitest";
import { FIT_SECTION, OFFLOAD_SECTION } from "../../../processors/fit-results/processor.ts";
import { CONTENT_TYPE, Histogram, MetricsRegistry, renderMetrics } from "../../../processors/ops/metrics.ts";
import { pipelineFamilies, type Measured } from "../../../processors/ops/ops-metrics.ts";
import { FITTED_SECTION, OFFLOADED_SECTION, outcomeKind } from "../../../processors/runner/outcomes.ts";
import type { RunnerStats } from "../../../processors/runner/runner.ts";

function measured(name: string, over: Partial<RunnerStats> = {}, latency = new Histogram()): Measured {
  return { name, stats: { in: 0, out: 0, deadLetters: 0, batches: 0, retries: 0, outcomes: {}, deadLetterErrors: {}, ...over }, latency };
}

describe("Prometheus text exposition", () => {
  it("renders HELP, TYPE and one line per sample, with label values escaped", async () => {
    const text = await renderMetrics([
      { name: "oz0_x_total", help: "Things\\counted\non two lines.", type: "counter", samples: [{ labels: { processor: 'a"b\\c\nd' }, value: 3 }] },
      { name: "oz0_lag", help: "Lag.", type: "gauge", samples: [{ value: NaN }, { labels: { p: "inf" }, value: Infinity }] },
    ]);
    expect(text).toBe(
      [
        "# HELP oz0_x_total Things\\\\counted\\non two lines.",
        "# TYPE oz0_x_total counter",
        'oz0_x_total{processor="a\\"b\\\\c\\nd"} 3',
        "",
        "# HELP oz0_lag Lag.",
        "# TYPE oz0_lag gauge",
        "oz0_lag Nan",
        'oz0_lag{p="inf"} +Inf',
        "",
      ].join("\n"),
    );
    expect(CONTENT_TYPE).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it("refuses an invalid metric or label name and a family listed twice", async () => {
    await expect(renderMetrics([{ name: "oz0-bad", help: "", type: "gauge", samples: [] }])).rejects.toThrow(/not valid/);
    await expect(renderMetrics([{ name: "ok", help: "", type: "gauge", samples: [{ labels: { "1x": "v" }, value: 1 }] }])).rejects.toThrow(/label name/);
    await expect(renderMetrics([{ name: "ok", help: "", type: "gauge", samples: [] }, { name: "ok", help: "", type: "gauge", samples: [] }])).rejects.toThrow(/twice/);
  });

  it("serves prom-client's default process and Node.js metrics beside the families, on a registry of its own", async () => {
    const a = new MetricsRegistry();
    const b = new MetricsRegistry();
    let lag = 4;
    a.add(() => [{ name: "oz0_lag", help: "Lag.", type: "gauge", samples: [{ labels: { processor: "p" }, value: lag }] }]);
    b.add(() => [{ name: "oz0_lag", help: "Lag.", type: "gauge", samples: [{ labels: { processor: "q" }, value: 1 }] }]);
    const text = await a.render();
    for (const name of ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_start_time_seconds", "nodejs_eventloop_lag_seconds", "nodejs_heap_size_used_bytes", "nodejs_gc_duration_seconds"]) {
      expect(text).toMatch(new RegExp(`^# TYPE ${name} `, "m"));
    }
    expect(text).toContain('oz0_lag{processor="p"} 4');
    expect(text).not.toContain('processor="q"');
    expect(await b.render()).toContain('oz0_lag{processor="q"} 1');
    // Read again at each scrape.
    lag = 9;
    expect(await a.render()).toContain('oz0_lag{processor="p"} 9');
    expect(a.contentType).toBe(CONTENT_TYPE);
  });

  it("refuses a family that has the name of a default metric", async () => {
    const r = new MetricsRegistry();
    r.add(() => [{ name: "process_cpu_seconds_total", help: "again", type: "counter", samples: [{ value: 1 }] }]);
    await expect(r.render()).rejects.toThrow(/listed twice/);
  });

  it("renders only the families named, in the order asked, skipping names it does not have", async () => {
    const r = new MetricsRegistry();
    r.add(() => [
      { name: "oz0_object_puts_total", help: "Puts.", type: "counter", samples: [{ value: 7 }] },
      { name: "oz0_lag", help: "Lag.", type: "gauge", samples: [{ value: 2 }] },
    ]);
    const text = await r.render(["oz0_object_puts_total", "oz0_no_such", "process_cpu_seconds_total", "oz0_object_puts_total"]);
    const types = [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]);
    expect(types).toEqual(["oz0_object_puts_total", "process_cpu_seconds_total"]);
    expect(text).toContain("oz0_object_puts_total 7");
    // Its value is read at the scrape, though prom-client reads it in another family's collect.
    const cpu = Number(/^process_cpu_seconds_total (\S+)$/m.exec(text)?.[1]);
    expect(cpu).toBeGreaterThan(0);
    const { user, system } = process.cpuUsage();
    expect(cpu).toBeLessThanOrEqual((user + system) / 1e6);
    expect(text).not.toContain("oz0_lag");
    expect(text.endsWith("\n")).toBe(true);
    expect(await r.render(["oz0_no_such"])).toBe("");
    // A source's family listed twice is refused on a narrow scrape too.
    r.add(() => [{ name: "oz0_lag", help: "again", type: "gauge", samples: [] }]);
    await expect(r.render(["oz0_object_puts_total"])).rejects.toThrow(/listed twice/);
  });

  it("drops a family its source no longer gives", async () => {
    const r = new MetricsRegistry({ processMetrics: false });
    let on = true;
    r.add(() => (on ? [{ name: "oz0_sometimes", help: "h", type: "gauge", samples: [{ value: 1 }] }] : []));
    expect(await r.render()).toContain("oz0_sometimes 1");
    on = false;
    expect(await r.render()).not.toContain("oz0_sometimes");
  });
});

describe("histogram buckets", () => {
  it("counts a value in the first bucket whose bound is at least it, cumulatively, with +Inf equal to the count", async () => {
    const h = new Histogram([0.1, 1, 10]);
    for (const v of [0.05, 0.1, 0.1000001, 1, 5, 10, 11, 1000]) h.observe(v);
    expect(h.cumulative()).toEqual([
      { le: 0.1, count: 2 },
      { le: 1, count: 4 },
      { le: 10, count: 6 },
      { le: Infinity, count: 8 },
    ]);
    expect(h.count).toBe(8);
    expect(h.sum).toBeCloseTo(0.05 + 0.1 + 0.1000001 + 1 + 5 + 10 + 11 + 1000, 6);
    const lines = (await renderMetrics([{ name: "lat_seconds", help: "h", type: "histogram", samples: h.samples({ processor: "p" }) }])).split("\n");
    expect(lines).toContain('lat_seconds_bucket{processor="p",le="0.1"} 2');
    expect(lines).toContain('lat_seconds_bucket{processor="p",le="+Inf"} 8');
    expect(lines).toContain('lat_seconds_count{processor="p"} 8');
  });

  it("ignores NaN and refuses bounds that do not increase", () => {
    const h = new Histogram([1, 2]);
    h.observe(NaN);
    expect(h.count).toBe(0);
    expect(() => new Histogram([1, 1])).toThrow(/increase/);
    expect(() => new Histogram([])).toThrow(/at least one/);
  });

  it("estimates quantiles by interpolating within the bucket, as histogram_quantile does", () => {
    const h = new Histogram([1, 2, 4]);
    expect(h.quantile(0.5)).toBeNaN();
    for (let i = 0; i < 10; i++) h.observe(0.5);
    for (let i = 0; i < 10; i++) h.observe(1.5);
    expect(h.quantile(0.5)).toBeCloseTo(1, 6);
    expect(h.quantile(0.75)).toBeCloseTo(1.5, 6);
    h.observe(100);
    expect(h.quantile(1)).toBe(4);
  });
});

describe("what an output counts as", () => {
  it("keeps the fit processor's trace sections in step with its own names", () => {
    expect(FITTED_SECTION).toBe(FIT_SECTION);
    expect(OFFLOADED_SECTION).toBe(OFFLOAD_SECTION);
  });

  it("counts a decision by its verdict, a delivered result, and a fitted or offloaded result by its trace entry", () => {
    expect(outcomeKind({ to: "oz0.call-decisions", value: { verdict: "stop" } })).toBe("stop");
    expect(outcomeKind({ to: "oz0.admissions", value: { verdict: "refuse" } })).toBe("refuse");
    expect(outcomeKind({ to: "oz0.results-delivered", value: {} })).toBe("delivered");
    expect(outcomeKind({ to: "oz0.trace", value: { section: FIT_SECTION } })).toBe("fitted");
    expect(outcomeKind({ to: "oz0.trace", value: { section: OFFLOAD_SECTION } })).toBe("offloaded");
    expect(outcomeKind({ to: "oz0.trace", value: { section: "Loop findings" } })).toBeUndefined();
    expect(outcomeKind({ to: "oz0.tool-calls", value: {} })).toBeUndefined();
  });
});

describe("the pipeline's metrics", () => {
  it("has counters per processor, dead letters by every error class, decisions by kind, lag and the latency histogram", async () => {
    const h = new Histogram([0.1, 1]);
    h.observe(0.05);
    const text = await renderMetrics(
      pipelineFamilies({
        processors: [measured("loop-calls", { in: 7, out: 6, deadLetters: 1, batches: 2, retries: 3, outcomes: { report: 1, allow: 5 }, deadLetterErrors: { invalid: 1 } }, h), measured("fit-results")],
        lag: (n) => (n === "loop-calls" ? 4 : NaN),
        readiness: () => ({ ready: false, phase: "starting", reasons: ["the pipeline is starting"], processors: {} }),
      }),
    );
    const lines = text.split("\n");
    expect(lines).toContain('oz0_processor_events_in_total{processor="loop-calls"} 7');
    expect(lines).toContain('oz0_processor_events_out_total{processor="loop-calls"} 6');
    expect(lines).toContain('oz0_processor_batches_total{processor="loop-calls"} 2');
    expect(lines).toContain('oz0_processor_retries_total{processor="loop-calls"} 3');
    expect(lines).toContain('oz0_processor_dead_letters_total{processor="loop-calls",error="invalid"} 1');
    expect(lines).toContain('oz0_processor_dead_letters_total{processor="fit-results",error="undecodable"} 0');
    expect(lines.filter((l) => l.startsWith("oz0_processor_decisions_total"))).toEqual(['oz0_processor_decisions_total{processor="loop-calls",kind="allow"} 5', 'oz0_processor_decisions_total{processor="loop-calls",kind="report"} 1']);
    expect(lines).toContain('oz0_processor_consumer_lag{processor="loop-calls"} 4');
    expect(lines).toContain('oz0_processor_consumer_lag{processor="fit-results"} Nan');
    expect(lines).toContain('oz0_processor_decision_latency_seconds_bucket{processor="loop-calls",le="0.1"} 1');
    expect(lines).toContain('oz0_processor_decision_latency_seconds_count{processor="fit-results"} 0');
    expect(lines).toContain("oz0_ready 0");
    expect(lines).toContain("# TYPE oz0_processor_decision_latency_seconds histogram");
  });
});
