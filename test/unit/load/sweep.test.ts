import { describe, expect, it } from "vitest";
import { sweepChart, sweepMarkdown, type SweepPoint } from "../../../bench/load/sweep.ts";

const points: SweepPoint[] = [
  { runtimes: 8, pipeline: { perSecond: 300, p50: 40, p99: 120, answers: 900 }, passthrough: { perSecond: 600, p50: 12, p99: 30, answers: 1000 } },
  { runtimes: 1, pipeline: { perSecond: 40, p50: 20, p99: 50, answers: 100 }, passthrough: { perSecond: 80, p50: 10, p99: 20, answers: 110 } },
];

describe("SYS-1 the load sweep's report", () => {
  it("tabulates each level with its ratios", () => {
    const md = sweepMarkdown("npm run load -- --runtimes 1,8", points);
    expect(md).toContain("| 8 | 300.0 | 600.0 | 0.50x | 40 | 120 | 12 | 30 | 3.33x | 4.00x |");
    expect(md).toContain("| 1 | 40.0 | 80.0 | 0.50x | 20 | 50 | 10 | 20 | 2.00x | 2.50x |");
  });

  it("draws latency against events per second, each line in order of throughput", () => {
    const svg = sweepChart(points);
    expect(svg).toContain("<svg");
    for (const name of ["pipeline p50", "passthrough p50", "pipeline p99", "passthrough p99"]) expect(svg).toContain(`<title>${name}</title>`);
    expect(svg).toContain("at 8, 1 runtimes");
  });
});
