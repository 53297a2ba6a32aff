import { describe, expect, it } from "vitest";
import { held, mostHeld, sweepChart, sweepMarkdown, type SweepPoint, type SweepSide } from "../../../bench/load/sweep.ts";

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

const side = (p99: number, unanswered = 0, perSecond = 100): SweepSide => ({ perSecond, p50: p99 / 4, p99, answers: 1_000, unanswered });
const at = (agents: number, pipe: SweepSide, pass: SweepSide): SweepPoint => ({ runtimes: agents, offered: { inRun: agents * 0.36, longRun: agents * 0.18 }, pipeline: pipe, passthrough: pass });

describe("SYS-6 the agents sweep's most agents held", () => {
  it("holds a level where every answer came and the p99 is at most 100 ms", () => {
    expect(held(side(100))).toBe(true);
    expect(held(side(101))).toBe(false);
    expect(held(side(20, 1))).toBe(false);
    expect(held({ perSecond: 0, p50: NaN, p99: NaN, answers: 0 })).toBe(false);
  });

  it("takes the largest number of agents held there and at every smaller number swept, in any order", () => {
    const points = [at(1_000, side(140), side(40)), at(100, side(30), side(10)), at(3_000, side(90), side(60)), at(300, side(70), side(20))];
    // 3,000 came in under 100 ms, but 1,000 did not: 300 is the most held.
    expect(mostHeld(points, (p) => p.pipeline)).toBe(300);
    expect(mostHeld(points, (p) => p.passthrough)).toBe(3_000);
    expect(mostHeld([at(100, side(150), side(10))], (p) => p.pipeline)).toBeUndefined();
    expect(mostHeld([at(100, side(20, 3), side(10))], (p) => p.pipeline)).toBeUndefined();
    expect(mostHeld(points, (p) => p.pipeline, 150)).toBe(3_000);
  });

  it("reports the offered rate, each side's rate and latency, and the most agents held beside the passthrough's", () => {
    const points = [at(100, side(30, 0, 17), side(10, 0, 18)), at(300, side(70, 0, 50), side(20, 0, 54)), at(1_000, side(140, 2, 150), side(40, 0, 178))];
    const md = sweepMarkdown("npm run load -- --agents 100,300,1000", points, "agents");
    expect(md).toContain("# Load sweep (agents)");
    expect(md).toContain("| agents | 300 | 1000 |");
    expect(md).toContain("| 1000 | 360.0 | 180.0 | 150.0 | 178.0 | 35 | 140 | 2 | no | 10 | 40 | 0 | yes |");
    expect(md).toContain("| 100 | 36.0 | 18.0 | 17.0 | 18.0 | 8 | 30 | 0 | yes | 3 | 10 | 0 | yes |");
    expect(sweepChart(points, "agents")).toContain("at 100, 300, 1000 agents");
    expect(mostHeld(points.slice(0, 1), (p) => p.pipeline)).toBe(100);
    const none = sweepMarkdown("c", [at(100, side(300), side(300))], "agents");
    expect(none).toContain("| agents | none of those swept | none of those swept |");
  });
});

