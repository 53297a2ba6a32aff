import { describe, expect, it } from "vitest";
import { MEASURED_KINDS, Recorder, type Measured } from "../../../bench/load/play.ts";
import {
  markOf,
  soakChart,
  soakMarkdown,
  soakPanels,
  soakVerdicts,
  TOLERANCE,
  totalLag,
  verdictLine,
  verdictOf,
  vmRssBytes,
  windowBetween,
  type SoakResult,
  type SoakSample,
  type WindowFigures,
} from "../../../bench/load/soak.ts";

const MIB = 1024 * 1024;
const none: WindowFigures = { count: 0, p50: NaN, p99: NaN };

/** A sample at t seconds with these pooled figures (model asks alone), lag, memory. */
function sample(t: number, p50: number, p99: number, lag: number, rss: number | null, extra: Partial<SoakSample> = {}): SoakSample {
  const exchanges = Object.fromEntries(MEASURED_KINDS.map((k) => [k, none])) as Record<Measured, WindowFigures>;
  exchanges.model_ask = { count: 10, p50, p99 };
  return { at: 1_000_000 + t * 1000, t, windowS: 10, events: 50, exchanges, all: { count: 10, p50, p99 }, lag: { "limits-model-calls": lag, "fit-results": 1 }, rss, heap: rss === null ? null : rss / 2, deadLetters: 0, unanswered: 0, ...extra };
}

describe("a soak's windows", () => {
  it("SYS-6 takes each window's answers by the order they were recorded in, between two marks", () => {
    // Latencies 1..100 answered in that order, a mark after the fiftieth: the second window holds 51..100.
    const rec = new Recorder();
    const marks = [markOf(rec)];
    for (let l = 1; l <= 100; l++) {
      rec.answered("model_ask", 1_000, 1_000 + l, "admit");
      if (l === 50) marks.push(markOf(rec));
    }
    marks.push(markOf(rec));
    const [start, half, end] = marks as [ReturnType<typeof markOf>, ReturnType<typeof markOf>, ReturnType<typeof markOf>];
    expect(windowBetween(rec, half.answers, end.answers).exchanges.model_ask).toEqual({ count: 50, p50: 75, p99: 100 });
    expect(windowBetween(rec, start.answers, half.answers).exchanges.model_ask).toEqual({ count: 50, p50: 25, p99: 50 });
    const empty = windowBetween(rec, end.answers, end.answers).all;
    expect(empty.count).toBe(0);
    expect(empty.p50).toBeNaN();
  });

  it("SYS-6 windows a Recorder's answers per exchange and pooled", () => {
    const rec = new Recorder();
    const start = markOf(rec);
    rec.answered("model_ask", 900, 1_000, "admit"); // 100 ms
    const first = markOf(rec);
    rec.answered("model_ask", 1_900, 1_910, "admit"); // 10 ms
    rec.answered("tool_call", 1_500, 1_800, "allow"); // 300 ms
    const second = markOf(rec);
    rec.answered("tool_call", 2_500, 2_520, "allow"); // 20 ms
    const third = markOf(rec);
    expect(rec.answeredAt.model_ask).toEqual([1_000, 1_910]);
    expect(windowBetween(rec, start.answers, first.answers).all).toEqual({ count: 1, p50: 100, p99: 100 });
    const w = windowBetween(rec, first.answers, second.answers);
    expect(w.exchanges.model_ask).toEqual({ count: 1, p50: 10, p99: 10 });
    expect(w.exchanges.tool_call).toEqual({ count: 1, p50: 300, p99: 300 });
    expect(w.exchanges.child.count).toBe(0);
    expect(w.all).toEqual({ count: 2, p50: 10, p99: 300 });
    expect(windowBetween(rec, second.answers, third.answers).all).toEqual({ count: 1, p50: 20, p99: 20 });
  });

  it("SYS-6 windows cut at marks of what was recorded hold every record once, those made in a sample's millisecond too", () => {
    const rec = new Recorder();
    rec.sent("model_ask", 1_000);
    rec.answered("model_ask", 990, 1_000, "admit");
    const first = markOf(rec);
    // Recorded after the mark, in the same millisecond: by time, (1000, 1000] would hold neither.
    rec.sent("model_ask", 1_000);
    rec.answered("model_ask", 995, 1_000, "admit");
    rec.answered("tool_call", 1_000, 1_030, "allow");
    const second = markOf(rec);
    expect(second.events - first.events).toBe(1);
    expect(windowBetween(rec, first.answers, second.answers).exchanges.model_ask).toEqual({ count: 1, p50: 5, p99: 5 });
    expect(windowBetween(rec, first.answers, second.answers).all.count).toBe(2);
    const start = markOf(new Recorder());
    expect(windowBetween(rec, start.answers, first.answers).all).toEqual({ count: 1, p50: 10, p99: 10 });
    expect(markOf(rec).events).toBe(2);
  });

  it("SYS-6 reads VmRSS from /proc/<pid>/status in bytes", () => {
    expect(vmRssBytes("Name:\tnode\nVmPeak:\t 900 kB\nVmRSS:\t  204800 kB\nThreads:\t11\n")).toBe(200 * MIB);
    expect(vmRssBytes("Name:\tkthreadd\nState:\tS\n")).toBeNull();
  });
});

describe("a soak's verdicts", () => {
  const tol = { relative: 0.25, floor: 5 };

  it("SYS-6 calls a series flat when the last third's median is within 25% of the first third's, after the warm-up sample", () => {
    // The first sample (500) is the warm-up: dropped. Then thirds of [20,22,21 | 25,19,23 | 24,22,26].
    const v = verdictOf([500, 20, 22, 21, 25, 19, 23, 24, 22, 26], tol);
    expect(v).toEqual({ trend: "flat", first: 21, last: 24, allowed: 5.25, samples: 9 });
  });

  it("SYS-6 calls a series rising or falling, with the numbers, when it moves beyond the tolerance", () => {
    const rising = verdictOf([0, 100, 100, 110, 120, 130, 140], tol);
    expect(rising.trend).toBe("rising");
    expect(rising.first).toBe(100);
    // Six samples judged: thirds of two, medians of (100, 100) and (130, 140).
    expect(rising.last).toBe(135);
    expect(rising.allowed).toBe(25);
    const falling = verdictOf([0, 140, 130, 120, 110, 100, 60], tol);
    expect(falling.trend).toBe("falling");
    expect(falling.last).toBe(80);
    // The warm-up sample counts when told: then 1000 opens the first third and the verdict turns.
    expect(verdictOf([1000, 100, 100, 100, 100, 100], tol, 0).trend).toBe("falling");
    expect(verdictOf([1000, 100, 100, 100, 100, 100], tol).trend).toBe("flat");
  });

  it("SYS-6 allows a small absolute floor, so small values do not flap", () => {
    // 2 ms to 6 ms is three times as much, but within 5 ms.
    expect(verdictOf([0, 2, 2, 2, 6, 6, 6], tol).trend).toBe("flat");
    expect(verdictOf([0, 2, 2, 2, 8, 8, 8], tol).trend).toBe("rising");
  });

  it("SYS-6 skips samples without a value and says when too few are left", () => {
    expect(verdictOf([1, 5, NaN, null, 6], tol)).toMatchObject({ trend: "too few samples", samples: 2 });
    expect(verdictOf([1, 5, NaN, 5, null, 5, 100], tol)).toMatchObject({ trend: "rising", samples: 4, first: 5, last: 100 });
  });

  it("SYS-6 judges latency, lag and memory over the samples in the time, not the end sample", () => {
    const flat = [0, 10, 20, 30, 40, 50, 60].map((t) => sample(t, 10, 40, 100, 200 * MIB));
    const end = sample(65, 900, 900, 9_000, 900 * MIB, { end: true });
    const verdicts = soakVerdicts([...flat, end]);
    const by = new Map(verdicts.map((v) => [v.series, v]));
    expect([...by.keys()]).toEqual([
      "latency p50, all exchanges",
      "latency p99, all exchanges",
      "latency p50, model-call ask to admission",
      "latency p99, model-call ask to admission",
      "consumer lag, all processors",
      "pipeline RSS",
      "pipeline heap used",
    ]);
    for (const v of verdicts) expect(v.trend, v.series).toBe("flat");
    expect(by.get("consumer lag, all processors")?.first).toBe(101);
    expect(by.get("pipeline RSS")).toMatchObject({ first: 200, last: 200, allowed: 50, unit: "MiB" });

    // RSS growing 20 MiB a sample: rising; latency and lag still flat.
    const leak = [0, 10, 20, 30, 40, 50, 60].map((t, i) => sample(t, 10, 40, 100, (200 + 20 * i) * MIB));
    const v = new Map(soakVerdicts(leak).map((x) => [x.series, x]));
    expect(v.get("pipeline RSS")?.trend).toBe("rising");
    expect(v.get("latency p99, all exchanges")?.trend).toBe("flat");
    expect(verdictLine(v.get("pipeline RSS") as never)).toMatch(/^- pipeline RSS: \*\*rising\*\*, first third's median 230\.0 MiB, last third's 310\.0 MiB \(\+35%\), allowed ±57\.5 MiB; 6 samples$/);

    // Memory not known: no memory verdicts.
    expect(soakVerdicts(flat.map((s) => ({ ...s, rss: null, heap: null }))).map((x) => x.series)).not.toContain("pipeline RSS");
    expect(TOLERANCE.memory.floor).toBe(16 * MIB);
  });
});

describe("a soak's chart and report", () => {
  const samples = [0, 10, 20, 30, 40].map((t, i) => sample(t, 10 + i, 40 + i, 100 + i, (200 + i) * MIB));
  samples[2] = { ...samples[2], lag: null } as SoakSample;

  it("SYS-6 draws latency, lag and memory against minutes since the start, skipping missing values", () => {
    const panels = soakPanels(samples);
    expect(panels.map((p) => p.yLabel)).toEqual(["latency (ms)", "consumer lag (messages)", "MiB"]);
    const series = (i: number, name: string) => panels[i]?.series.find((s) => s.name === name);
    expect(series(0, "all p50")?.points).toEqual([[0, 10], [1 / 6, 11], [2 / 6, 12], [3 / 6, 13], [4 / 6, 14]]);
    expect(series(0, "all p99")?.dashed).toBe(true);
    expect(series(0, "model_ask p99")?.points.map(([, y]) => y)).toEqual([40, 41, 42, 43, 44]);
    // Exchanges that never answered are not drawn.
    expect(series(0, "child p50")).toBeUndefined();
    // The sample whose lag was not read is left out of the lag lines.
    expect(series(1, "all processors")?.points.map(([, y]) => y)).toEqual([101, 102, 104, 105]);
    expect(series(1, "fit-results")?.points).toHaveLength(4);
    expect(series(2, "RSS")?.points.map(([, y]) => y)).toEqual([200, 201, 202, 203, 204]);
    expect(series(2, "heap used")?.points[0]).toEqual([0, 100]);
    // Without memory, no memory panel.
    expect(soakPanels(samples.map((s) => ({ ...s, rss: null, heap: null })))).toHaveLength(2);
    expect(totalLag(samples[2] as SoakSample)).toBeNaN();
  });

  const result: SoakResult = {
    at: new Date(0),
    command: "npm run load -- --agents 20 --minutes 1 --sample-seconds 10",
    seed: 1,
    warmUpEvents: 0,
    agents: { count: 20, thinkScale: 0.01 },
    minutes: 1,
    sampleSeconds: 10,
    external: false,
    node: "v20",
    plan: { events: 3000, exhausted: false },
    totals: { events: 250, answers: 50, unanswered: 0, treesDone: 5, treesCut: 1, deadLetters: 0 },
    memorySource: "process.memoryUsage()",
    deadLettersSource: "counters",
    samples: [...samples, sample(45, 7, 9, 3, 210 * MIB, { end: true, windowS: 5 })],
    errors: [],
    chartFile: "load.svg",
  };

  it("SYS-6 writes an Over time row per sample, the verdict lines, and says there is no passthrough phase", () => {
    const md = soakMarkdown(result);
    expect(md).toContain("## Over time");
    expect(md).toContain("a soak plays no passthrough phase");
    const rows = md.split("\n").filter((l) => /^\| \d/.test(l));
    expect(rows).toHaveLength(6);
    expect(rows[1]).toMatch(/^\| 10 \| 5\.0 \| 10 \/ 11 \/ 41 \| 10 \/ 11 \/ 41 \| 102 \| 201\.0 \| 100\.5 \| 0 \| 0 \|$/);
    expect(rows[2]).toContain("| - |"); // the lag not read
    expect(rows[5]).toMatch(/^\| 45 \(end\) \| 10\.0 \|/);
    expect(md).toMatch(/^- latency p99, all exchanges: \*\*(flat|rising)\*\*/m);
    expect(md).toMatch(/^- consumer lag, all processors: /m);
    expect(md).toMatch(/^- pipeline RSS: \*\*flat\*\*/m);
    expect(md).toContain("- dead letters: 0 in the soak (counters)");
    expect(md).not.toContain("took the plan's last tree");
    expect(soakMarkdown({ ...result, plan: { events: 3000, exhausted: true } })).toContain("took the plan's last tree");
  });

  it("SYS-6 draws the chart as one SVG with its three panels", () => {
    const svg = soakChart(result);
    expect(svg.match(/<svg /g)).toHaveLength(1);
    expect(svg.trim().endsWith("</svg>")).toBe(true);
    expect(svg.match(/<g class="panel">/g)).toHaveLength(3);
    expect(svg).toContain("20 agents for 1 min, sampled every 10 s");
  });
});
