import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { AGENTS_GRACE_MS } from "../../bench/load/run.ts";
import { runSoak } from "../../bench/load/soak-run.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { endpoints } from "../support/kafka.ts";

describe("the load test's soak against the real services", () => {
  let out: string | undefined;
  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  // SYS-6's soak in its short form: half a minute sampled every 5 s (the shortest sample a soak
  // takes) still runs every part of one (the agents' play, each sample's window, lag, memory and
  // dead letters, the end sample, the verdicts on thirds of six samples, the report and the
  // chart); the soak that measures is `npm run load -- --agents N --minutes M` (docs/load.md).
  const minutes = 0.5;
  const sampleSeconds = 5;
  it("SYS-6 soaks the in-process pipeline with 20 agents for half a minute, sampled every 5 s: every awaited answer comes, and the report has its samples over time and a verdict on each series", async () => {
    out = await mkdtemp(join(tmpdir(), "oz0-load-soak-"));
    const started = Date.now();
    const { result, markdown, files } = await runSoak({
      endpoints: endpoints(),
      agents: { count: 20, thinkScale: 0.01 },
      minutes,
      sampleSeconds,
      seed: 7,
      warmUpEvents: 100,
      external: false,
      outDir: out,
      command: `npm run load -- --agents 20 --minutes ${minutes} --sample-seconds ${sampleSeconds} --think-scale 0.01 --seed 7 --warm-up 100`,
      progress: false,
      log: createLogger({ test: "load-soak" }, () => {}),
    });
    // Bounded: starting the pipeline, a warm-up of 100 events, half a minute and its grace.
    expect(Date.now() - started).toBeLessThan(240_000);

    // Every awaited answer came, none failed, and the agents were stopped by the time.
    expect(result.totals.unanswered).toBe(0);
    expect(result.errors).toEqual([]);
    expect(result.totals.answers).toBeGreaterThan(100);
    expect(result.plan.exhausted).toBe(false);

    // A sample every 5 s over the half minute, then the end sample of the grace.
    const timed = result.samples.filter((s) => !s.end);
    expect(timed.length).toBeGreaterThanOrEqual(4);
    expect(timed.length).toBeLessThanOrEqual(6);
    for (const [i, s] of timed.entries()) {
      expect(s.t, `sample ${i}`).toBeGreaterThanOrEqual(sampleSeconds * (i + 1) - 0.5);
      expect(s.t, `sample ${i}`).toBeLessThan(sampleSeconds * (i + 1) + 5);
      expect(s.all.count, `sample ${i}`).toBeGreaterThan(0);
      expect(s.lag, `sample ${i}`).not.toBeNull();
      expect(Object.keys(s.lag ?? {}).length, `sample ${i}`).toBeGreaterThan(3);
      expect(s.rss, `sample ${i}`).toBeGreaterThan(50 * 1024 * 1024);
      expect(s.heap, `sample ${i}`).toBeGreaterThan(0);
      expect(s.deadLetters, `sample ${i}`).not.toBeNull();
      expect(s.unanswered, `sample ${i}`).toBe(0);
    }
    const end = result.samples[result.samples.length - 1];
    if (end?.end) expect(end.t).toBeLessThan(minutes * 60 + AGENTS_GRACE_MS / 1000 + 5);
    // Every answer falls in exactly one window.
    expect(result.samples.reduce((s, x) => s + x.all.count, 0)).toBe(result.totals.answers);
    expect(result.samples.reduce((s, x) => s + x.events, 0)).toBe(result.totals.events);

    const md = await readFile(files.markdown, "utf8");
    expect(md).toBe(markdown);
    expect(md).toContain("## Over time");
    expect(md).toContain("a soak plays no passthrough phase");
    const rows = md.split("\n").filter((l) => /^\| \d/.test(l));
    expect(rows).toHaveLength(result.samples.length);
    for (const series of ["latency p50, all exchanges", "latency p99, all exchanges", "latency p99, model-call ask to admission", "consumer lag, all processors", "pipeline RSS", "pipeline heap used"]) {
      expect(md).toMatch(new RegExp(`^- ${series}: \\*\\*(flat|rising|falling)\\*\\*, first third's median [\\d.,]+ \\w+, last third's [\\d.,]+`, "m"));
    }
    const json = JSON.parse(await readFile(files.json, "utf8")) as { samples: unknown[]; verdicts: Array<{ series: string; trend: string }> };
    expect(json.samples).toHaveLength(result.samples.length);
    const judged = new Map(json.verdicts.map((v) => [v.series, v.trend]));
    for (const series of ["latency p99, all exchanges", "consumer lag, all processors", "pipeline RSS"]) expect(["flat", "rising", "falling"], series).toContain(judged.get(series));
    const svg = await readFile(files.chart, "utf8");
    expect(svg.match(/<g class="panel">/g)).toHaveLength(3);
  }, 300_000);
});
