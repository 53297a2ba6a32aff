import { describe, expect, it } from "vitest";
import { chartSvg, escapeXml, ticks } from "../../../bench/load/chart.ts";
import { leadingId } from "../../../bench/load/echo.ts";
import { MEASURED_KINDS, offloadOf, Recorder } from "../../../bench/load/play.ts";
import { progressLine } from "../../../bench/load/progress.ts";
import { ageWords, loadChart, loadMarkdown, sustained, type LoadResult, type PhaseResult } from "../../../bench/load/report.ts";
import { latency, percentile, perSecond, slowSeconds } from "../../../bench/load/stats.ts";
import { STEP_KINDS, TREE_KINDS } from "../../../bench/load/mix.ts";
import type { ResultDelivered } from "../../../schemas/types.ts";
import avro from "avsc";
import { readFileSync } from "node:fs";

/** Well-formed XML as far as an SVG needs: one root, every tag closed in order, no raw `&` or `<` in text. */
function wellFormed(xml: string): { ok: boolean; why: string } {
  const body = xml.replace(/^<\?xml[^>]*\?>\s*/, "");
  const stack: string[] = [];
  const re = /<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)|(<)/g;
  let roots = 0;
  for (const m of body.matchAll(re)) {
    const [, close, name, , self, text, stray] = m;
    if (stray) return { ok: false, why: `a stray < at ${m.index}` };
    if (text !== undefined) {
      if (/&(?!(amp|lt|gt|quot|apos);)/.test(text)) return { ok: false, why: `a raw & in ${JSON.stringify(text.slice(0, 40))}` };
      if (stack.length === 0 && text.trim() !== "") return { ok: false, why: "text outside the root" };
      continue;
    }
    if (close) {
      if (stack.pop() !== name) return { ok: false, why: `</${name}> closes nothing open` };
    } else if (!self) {
      if (stack.length === 0) roots++;
      stack.push(name ?? "");
    } else if (stack.length === 0) roots++;
  }
  if (stack.length > 0) return { ok: false, why: `<${stack.join("><")}> left open` };
  return roots === 1 ? { ok: true, why: "" } : { ok: false, why: `${roots} roots` };
}

/** A load result with the plan and settings every report test shares, and the given phases and fields. */
function resultOf(fields: Pick<LoadResult, "command" | "external" | "pipeline" | "passthrough" | "processors"> & Partial<Pick<LoadResult, "agents" | "pipelineAge" | "sinkWaitMs">>): LoadResult {
  const twos = <K extends string>(keys: readonly K[]) => Object.fromEntries(keys.map((k) => [k, 2])) as Record<K, number>;
  return { at: new Date(0), seed: 1, seconds: 60, runtimes: 4, node: "v20", plan: { events: 100, trees: twos(TREE_KINDS), steps: twos(STEP_KINDS) }, chartFile: "load.svg", ...fields };
}

describe("the load report's figures", () => {
  it("SYS-6 takes nearest-rank percentiles", () => {
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(hundred, 50)).toBe(50);
    expect(percentile(hundred, 95)).toBe(95);
    expect(percentile(hundred, 99)).toBe(99);
    expect(percentile(hundred, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([1, 2, 3, 4], 50)).toBe(2);
    expect(percentile([], 50)).toBeNaN();
    const l = latency([30, 10, 20, 40, 1_000]);
    expect(l).toEqual({ count: 5, p50: 30, p95: 1_000, p99: 1_000, max: 1_000 });
  });

  it("SYS-6 counts events per whole second from the start", () => {
    const start = 10_000;
    expect(perSecond([10_000, 10_400, 10_999, 11_000, 12_500, 9_000], start, 13_000)).toEqual([
      [0, 3],
      [1, 1],
      [2, 1],
    ]);
  });

  it("SYS-6 picks round ticks covering the data", () => {
    expect(ticks(10)).toEqual([0, 2, 4, 6, 8, 10]);
    expect(ticks(97)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(ticks(0)).toEqual([0, 1]);
    const t = ticks(1234);
    expect(t[t.length - 1]).toBeGreaterThanOrEqual(1234);
  });

  it("SYS-6 draws a valid SVG with titles, axis labels, ticks and a legend, escaping names", () => {
    const svg = chartSvg("a <chart> & more", [
      { title: "Lag", xLabel: "seconds since the phase started", yLabel: "consumer lag (messages)", series: [{ name: "fit-results", points: [[0, 3], [1, 12], [2, 0]] }, { name: "a&b", points: [[0, 1]], dashed: true }] },
      { title: "Rate", xLabel: "seconds", yLabel: "events per second", series: [{ name: "pipeline", points: [] }] },
    ]);
    expect(wellFormed(svg)).toEqual({ ok: true, why: "" });
    expect(svg).toContain('xmlns="http://www.w3.org/2000/svg"');
    expect(svg).toContain("a &lt;chart&gt; &amp; more");
    expect(svg).toMatch(/<text class="x-label"[^>]*>seconds since the phase started<\/text>/);
    expect(svg).toMatch(/<text class="y-label"[^>]*rotate\(-90[^>]*>consumer lag \(messages\)<\/text>/);
    expect(svg).toMatch(/<text class="y-label"[^>]*>events per second<\/text>/);
    expect(svg).toContain(">a&amp;b</text>");
    expect(svg).toContain('stroke-dasharray="6 4"');
    expect(svg.match(/<path /g)?.length).toBe(2);
    // y ticks of the lag panel cover 12 in round steps: 0, 5, 10, 15.
    expect(svg).toMatch(/>15<\/text>/);
    expect(svg).toMatch(/>10<\/text>/);
    expect(escapeXml(`"'`)).toBe("&quot;&apos;");
  });

  it("SYS-6 the checker itself refuses broken SVG", () => {
    expect(wellFormed("<svg><g></svg>").ok).toBe(false);
    expect(wellFormed("<svg><text>a & b</text></svg>").ok).toBe(false);
    expect(wellFormed("<svg/><svg/>").ok).toBe(false);
  });

  it("SYS-6 draws progress as one line with the bar, the rate and the time left", () => {
    const line = progressLine({ phase: "pipeline", events: 50, planned: 100, answers: 30, unanswered: 2, elapsedMs: 10_000, limitMs: 60_000 }, 10);
    expect(line).toBe("pipeline [#####.....] 50/100 events, 30 answers, 2 unanswered, 5/s, 50s left");
    expect(line).not.toContain("\n");
    expect(progressLine({ phase: "p", events: 500, planned: 100, answers: 0, unanswered: 0, elapsedMs: 70_000, limitMs: 60_000 }, 4)).toBe("p [####] 500/100 events, 0 answers, 7/s, 0s left");
  });

  it("SYS-6 reads the event ID first in an Avro event in the wire format, as the echo does", () => {
    const schema = JSON.parse(readFileSync(new URL("../../../schemas/ToolCall.avsc", import.meta.url), "utf8")) as object;
    const type = avro.Type.forSchema(schema as avro.Schema);
    const id = "evt-äö-".repeat(30);
    const body = type.toBuffer({ id, tenant: "t", tree_id: "r", job_id: "j", run_id: "r", call_id: "c", agent: "a", plugin: "p", tool: "p", function: "f", arguments: "{}", origin: "model", context_used: null, spend_share: null, ts: 1 });
    const header = Buffer.from([0, 0, 0, 0, 42]);
    expect(leadingId(Buffer.concat([header, body]))).toBe(id);
    expect(leadingId(Buffer.concat([Buffer.from([1, 0, 0, 0, 42]), body]))).toBeUndefined();
    expect(leadingId(Buffer.concat([header, body.subarray(0, 10)]))).toBeUndefined();
    expect(leadingId(null)).toBeUndefined();
  });

  it("SYS-6 finds an offloaded result's ref and size in what the model reads", () => {
    const d = { content: JSON.stringify({ content: [{ type: "text", text: "{}" }], _meta: { "oz0/offload": { ref: "oz0-file:sha256:ab", size: 1234 } } }) } as ResultDelivered;
    expect(offloadOf(d)).toEqual({ ref: "oz0-file:sha256:ab", size: 1234 });
    expect(offloadOf({ content: "not json" } as ResultDelivered)).toBeUndefined();
    expect(offloadOf({ content: JSON.stringify({ content: [] }) } as ResultDelivered)).toBeUndefined();
  });

  it("SYS-6 writes every section of the report with its figures and ratios to the passthrough", () => {
    const phase = (scale: number, lagName: string): PhaseResult => {
      const rec = new Recorder();
      for (let i = 0; i < 100; i++) rec.sent("tool_call", 1_000 + i * 10);
      for (const k of MEASURED_KINDS) for (let i = 1; i <= 20; i++) rec.answered(k, 0, i * scale, "allow");
      rec.lastAt = 3_000;
      rec.offloaded = scale === 10 ? 3 : 0;
      rec.offloadedBytes = scale === 10 ? 150_000 : 0;
      return { startedAt: 1_000, endedAt: 3_000, rec, lag: [{ at: 1_000, lags: { [lagName]: 5 } }, { at: 2_000, lags: { [lagName]: 40 } }, { at: 3_000, lags: { [lagName]: 1 } }] };
    };
    const r = resultOf({
      command: "npm run load -- --events 100",
      external: false,
      pipeline: phase(10, "fit-results"),
      passthrough: phase(2, "passthrough"),
      processors: [{ name: "fit-results", in: 10, out: 20, deadLetters: 0, retries: 0 }],
    });
    expect(sustained(r.pipeline).perSecond).toBeCloseTo(50, 5);
    const md = loadMarkdown(r);
    for (const h of ["## Throughput", "## Latency from ask to decision", "## Consumer lag", "## Offloaded results", "## Mix", "## Processors (in this process)"]) expect(md).toContain(h);
    expect(md).toContain("| sustained events per second | 50.0 | 50.0 | 1.00x |");
    expect(md).toContain("| model-call ask to admission | limits-model-calls | 20 | 100 | 190 | 200 | 20 | 38 | 40 | 5.00x | 5.00x |");
    expect(md).toContain("| fit-results | oz0.fit-results | 5 | 40 | 1 | 3 |");
    expect(md).toContain("| bytes offloaded | 150000 (146.5 KiB) |");
    expect(md).toContain("![consumer lag and events per second over time](load.svg)");
    const svg = loadChart(r);
    expect(wellFormed(svg).ok).toBe(true);
    expect(svg).toContain(">fit-results</text>");
    expect(svg).toContain(">passthrough (baseline)</text>");
  });

  it("SYS-6 shows the CPU per event of each process sampled in either phase, the pipeline's elsewhere and the stack's services included", () => {
    const phase = (events: number, cpu: PhaseResult["cpu"]): PhaseResult => {
      const rec = new Recorder();
      for (let i = 0; i < events; i++) rec.sent("tool_call", 1_000 + i);
      rec.lastAt = 3_000;
      return { startedAt: 1_000, endedAt: 3_000, rec, lag: [], ...(cpu ? { cpu } : {}) };
    };
    const r = resultOf({
      command: "npm run load -- --external",
      external: true,
      // 100 events each: CPU seconds become milliseconds per event times 10.
      pipeline: phase(100, { machine: 0.9, process: 0.2, redis: null, broker: 0.3, others: { "the pipeline's process (elsewhere; idle in the passthrough's phase)": 0.25, MinIO: 0.1, Redis: null } }),
      passthrough: phase(100, { machine: 0.3, process: 0.1, redis: null, broker: 0.1, others: { "the pipeline's process (elsewhere; idle in the passthrough's phase)": 0.01, MinIO: 0.02, Redis: null } }),
      processors: [],
    });
    const md = loadMarkdown(r);
    expect(md).toContain("| the broker | 3.00 | 1.00 | 3.00x |");
    expect(md).toContain("| the pipeline's process (elsewhere; idle in the passthrough's phase) | 2.50 | 0.10 | 25.00x |");
    expect(md).toContain("| MinIO | 1.00 | 0.20 | 5.00x |");
    // Redis read in neither phase: no row.
    expect(md).not.toMatch(/^\| Redis \|/m);
    expect(md).toContain("| the whole machine (every core, every process) | 9.00 | 3.00 | 3.00x |");
    expect(md.indexOf("| MinIO |")).toBeLessThan(md.indexOf("| this process"));
  });

  it("SYS-6 says a phase is short beside its CPU figures when it lasted under three of the sinks' waits, with the events that would fill a minute", () => {
    const phase = (events: number, seconds: number): PhaseResult => {
      const rec = new Recorder();
      for (let i = 0; i < events; i++) rec.sent("tool_call", 1_000 + Math.floor((i * seconds * 1_000) / events));
      rec.lastAt = 1_000 + seconds * 1_000;
      return { startedAt: 1_000, endedAt: rec.lastAt, rec, lag: [], cpu: { machine: 1, process: 0.5, redis: null, broker: 0.3, others: {} } };
    };
    const base = { command: "npm run load -- --events 3000", external: false, passthrough: phase(3_000, 3), processors: [] } as const;
    // 2,500 events in 5 s, sinks writing every 10 s: short, and 500 a second for a minute is 30,000.
    const short = loadMarkdown(resultOf({ ...base, pipeline: phase(2_500, 5), sinkWaitMs: 10_000 }));
    expect(short).toContain("**A short phase.** The pipeline's phase was active 5.0 s, under 3 of the sinks' waits (10.0 s");
    expect(short).toContain("`--events 30000`");
    expect(short.indexOf("**A short phase.**")).toBeGreaterThan(short.indexOf("Caused by the pipeline, ms per event"));
    // 30 s or more against 10-s waits, or no wait said: nothing.
    expect(loadMarkdown(resultOf({ ...base, pipeline: phase(15_000, 30), sinkWaitMs: 10_000 }))).not.toContain("A short phase");
    expect(loadMarkdown(resultOf({ ...base, pipeline: phase(2_500, 5) }))).not.toContain("A short phase");
    // Sinks writing every second: 5 s is longer than three of their waits.
    expect(loadMarkdown(resultOf({ ...base, pipeline: phase(2_500, 5), sinkWaitMs: 1_000 }))).not.toContain("A short phase");
  });

  it("SYS-6 says how long the pipeline had run, and its CPU by then, when its phase began; nothing when not known", () => {
    const phase = (): PhaseResult => {
      const rec = new Recorder();
      rec.sent("tool_call", 1_000);
      rec.lastAt = 2_000;
      return { startedAt: 1_000, endedAt: 2_000, rec, lag: [] };
    };
    const base = { command: "npm run load -- --external", external: true, pipeline: phase(), passthrough: phase(), processors: [] } as const;
    expect(loadMarkdown(resultOf({ ...base, pipelineAge: { seconds: 311.6, cpuSeconds: 84.24 } }))).toContain("When its phase began, the pipeline had run 312 s (84.2 s of CPU).");
    expect(loadMarkdown(resultOf({ ...base, pipelineAge: { seconds: 40, cpuSeconds: null } }))).toContain("When its phase began, the pipeline had run 40 s.");
    expect(loadMarkdown(resultOf(base))).not.toContain("When its phase began");
    expect(ageWords({ seconds: 0.4, cpuSeconds: 0 })).toBe("had run 0 s (0.0 s of CPU)");
  });

  it("SYS-6 says when the answers slower than the held line came: by second of the phase, the busiest seconds listed in time order", () => {
    // Answers at 0.5 s (slow), 2.1 s and 2.9 s (slow, slowest 300), 4.2 s (not slow: at the line), 7 s (slow), one before the start.
    expect(slowSeconds([10_500, 12_100, 12_900, 14_200, 17_000, 9_000, 13_000], [150, 120, 300, 100, 101, 500, 20], 10_000, 100)).toEqual([
      { second: 0, count: 2, slowest: 500 },
      { second: 2, count: 2, slowest: 300 },
      { second: 7, count: 1, slowest: 101 },
    ]);
    expect(slowSeconds([], [], 0, 100)).toEqual([]);
    const phase = (slowAt: readonly number[]): PhaseResult => {
      const rec = new Recorder();
      for (let i = 0; i < 100; i++) rec.sent("tool_call", 1_000 + i * 100);
      // Fast answers all through, and a burst of slow ones at each of `slowAt` (seconds into the phase).
      for (let i = 0; i < 100; i++) rec.answered("tool_call", 1_000 + i * 100, 1_010 + i * 100, "allow");
      slowAt.forEach((second, j) => {
        for (let n = 0; n <= j; n++) rec.answered("model_ask", 1_000 + second * 1_000, 1_000 + second * 1_000 + 150 + n * 10, "admitted");
      });
      return { startedAt: 1_000, endedAt: 31_000, rec, lag: [] };
    };
    // 22 seconds with slow answers, 1 to 22 of them: the two with fewest are left out of the list.
    const seconds = Array.from({ length: 22 }, (_, i) => i + 5);
    const md = loadMarkdown(resultOf({ command: "npm run load", external: false, pipeline: phase(seconds), passthrough: phase([]), processors: [] }));
    expect(md).toContain("### Slow answers over time");
    const slowTotal = (22 * 23) / 2;
    const listed = seconds.slice(2).map((s, i) => `${s} s: ${i + 3} (${150 + (i + 2) * 10})`).join(", ");
    expect(md).toContain(`| the pipeline's phase | ${slowTotal} of ${100 + slowTotal} | 22 of 30 | ${listed} |`);
    expect(md).not.toContain("| 5 s: 1 (150)");
    expect(md).toContain("| the passthrough's phase | 0 of 100 | 0 of 30 | none |");
  });

  it("SYS-6 the report gives each phase's stalls by event and the slow answers beside them; says when the monitor is off or was not read", () => {
    const phase = (redis: PhaseResult["redis"]): PhaseResult => {
      const rec = new Recorder();
      // Three slow answers: two in second 1,002 (a stall of 224 ms), one in 1,020 (none); one fast.
      for (const [sent, answered] of [
        [1_002_000, 1_002_400],
        [1_002_100, 1_002_500],
        [1_019_800, 1_020_000],
        [1_030_000, 1_030_010],
      ] as const)
        rec.answered("tool_call", sent, answered, "allow");
      return { startedAt: 1_000_000, endedAt: 1_060_000, rec, lag: [], ...(redis ? { redis } : {}) };
    };
    const result = (pipeline: PhaseResult, passthrough: PhaseResult): LoadResult => resultOf({ command: "npm run load", external: false, pipeline, passthrough });
    // The stalls in the phase's seconds, as the run keeps them (`stallsBetween`).
    const stalls = [
      { event: "command", at: 1_000, ms: 12 },
      { event: "aof-fsync-always", at: 1_002, ms: 224 },
      { event: "aof-fsync-always", at: 1_010, ms: 17 },
      { event: "fork", at: 1_030, ms: 14 },
    ];
    const md = loadMarkdown(result(phase({ thresholdMs: 10, stalls }), phase({ thresholdMs: 10, stalls: [] })));
    expect(md).toContain("| phase | threshold | seconds with a stall, by event | slow answers beside one |");
    expect(md).toContain("| the pipeline's phase | 10 ms | aof-fsync-always: 2 s, the longest 224 ms; fork: 1 s, the longest 14 ms; command: 1 s, the longest 12 ms | 2 of 3 |");
    expect(md).toContain("| the passthrough's phase | 10 ms | none | 0 of 3 |");
    const unread = loadMarkdown(result(phase({ thresholdMs: 0, stalls: [] }), phase(undefined)));
    expect(unread).toContain("| the pipeline's phase | off | | |");
    expect(unread).toContain("| the passthrough's phase | not read | | |");
  });

  it("SYS-6 reports an agents run: the agents, the rate offered beside the rates sent and answered, latency without the waits", () => {
    const phase = (events: number, answers: number): PhaseResult => {
      const rec = new Recorder();
      for (let i = 0; i < events; i++) rec.sent("tool_call", 1_000 + i);
      for (let i = 0; i < answers; i++) rec.answered("tool_call", 0, 5 + (i % 10), "allow");
      rec.lastAt = 20_000;
      // A phase of 20 s.
      return { startedAt: 1_000, endedAt: 21_000, rec, lag: [] };
    };
    const r = resultOf({
      command: "npm run load -- --agents 40 --seconds 20 --think-scale 0.01",
      external: false,
      pipeline: phase(600, 400),
      passthrough: phase(800, 560),
      processors: [],
      agents: { count: 40, thinkScale: 0.01, start: "steady", capS: 600, offered: { eventsPerAgentSecond: 1.5, eventsPerSecond: 60, answersPerSecond: 41, waitSeconds: 100 }, inRun: { events: 1_800, eventsPerSecond: 90, answersPerSecond: 62 } },
    });
    const md = loadMarkdown(r);
    expect(md).toContain("40 agents, each waiting between steps as agents do (every wait scaled by 0.01)");
    expect(md).toContain("the same plan and the same agents and waits");
    expect(md).toContain("### Offered and answered");
    expect(md).toContain("(the plan's events over its waits, 1.500 events a second an agent, times 40)");
    expect(md).toContain("| events | 90.0 | 60.0 | 30.0 | 40.0 |");
    expect(md).toContain("| awaited answers | 62.0 | 41.0 | 20.0 | 28.0 |");
    expect(md).toContain("over this run of 60 s");
    expect(md).toContain("each agent starts as if it had long been playing");
    expect(md).not.toContain("A run of minutes offers more than the long run");
    // Agents started cold are said to be, and why the run offers more.
    const cold = loadMarkdown({ ...r, agents: { ...r.agents!, start: "cold" } });
    expect(cold).toContain("every agent starts afresh, spread over the first think time (`--cold-start`)");
    expect(cold).toContain("A run of minutes offers more than the long run");
    expect(md).toContain("an agent's waits are never counted");
    expect(md).toContain("| tool call to call decision | budget-fill-in, loop-calls | 400 | 9 |");
    expect(md).not.toContain("runtimes at once");
    // Without agents, a runtimes run says nothing of offered rates.
    const { agents: _, ...runtimes } = r;
    expect(loadMarkdown(runtimes)).not.toContain("Offered and answered");
  });
});

