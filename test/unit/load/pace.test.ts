import { describe, expect, it } from "vitest";
import { random } from "../../../client/synthetic.ts";
import { makePlan } from "../../../bench/load/mix.ts";
import { playAgents, Recorder, type LoadTarget } from "../../../bench/load/play.ts";
import type { Decision, ResultDelivered } from "../../../schemas/types.ts";
import { agentStarts, agentsEvents, CAP_S, cappedLognormalOf, cappedMean, draw, lognormalOf, normalCdf, offered, offeredInRun, planWaits, THINK, THINK_DIST, TOOL, TOOL_DIST, waitKind } from "../../../bench/load/pace.ts";

const corpus = ["# Title\n\nsome text of a document\nline two\n", "another document, longer ".repeat(200)];

function stats(xs: number[]): { median: number; mean: number; max: number } {
  const sorted = [...xs].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)] ?? NaN, mean: xs.reduce((s, x) => s + x, 0) / xs.length, max: sorted[sorted.length - 1] ?? NaN };
}

const within = (actual: number, target: number, share: number): void => {
  expect(Math.abs(actual - target) / target, `${actual} against ${target}`).toBeLessThan(share);
};

describe("SYS-6 how the load's agents pace their calls", () => {
  it("fits the think time as the traces give it: mu = ln 4.9, sigma = sqrt(2 ln(11.5/4.9)), about 1.31", () => {
    expect(THINK_DIST.mu).toBeCloseTo(Math.log(4.9), 12);
    expect(THINK_DIST.sigma).toBeCloseTo(1.3062, 3);
    expect(lognormalOf(1, Math.E).sigma).toBeCloseTo(Math.SQRT2, 12);
    expect(() => lognormalOf(2, 1)).toThrow();
  });

  it("computes the normal distribution function and the capped mean", () => {
    expect(normalCdf(0)).toBeCloseTo(0.5, 7);
    expect(normalCdf(1.959964)).toBeCloseTo(0.975, 6);
    expect(normalCdf(-1)).toBeCloseTo(0.158655, 6);
    // With a cap far above every draw, the capped mean is the lognormal's own.
    expect(cappedMean(lognormalOf(4.9, 11.5), 1e12)).toBeCloseTo(11.5, 4);
    // With the cap at the median, half the draws are capped: the mean is below the median.
    expect(cappedMean({ mu: 0, sigma: 1 }, 1)).toBeLessThan(1);
  });

  it("chooses the tool's spread so that capped draws keep a median of 0.3 s and 14 s a call, 16.8 s a step at 1.2 calls", () => {
    expect(TOOL_DIST.mu).toBeCloseTo(Math.log(0.3), 12);
    expect(cappedMean(TOOL_DIST, CAP_S)).toBeCloseTo(TOOL.stepMean / TOOL.callsPerStep, 6);
    // Wider than the uncapped fit, which the cap would pull down to about 8.7 s a call.
    expect(TOOL_DIST.sigma).toBeGreaterThan(lognormalOf(0.3, 14).sigma);
    expect(cappedMean(lognormalOf(0.3, 14), CAP_S)).toBeLessThan(10);
    expect(() => cappedLognormalOf(0.3, 400, CAP_S)).toThrow();
  });

  it("draws think times with the traces' median and mean (20,000 seeded draws)", () => {
    const rnd = random(1);
    const s = stats(Array.from({ length: 20_000 }, () => draw(rnd, THINK_DIST)));
    within(s.median, THINK.median, 0.03);
    within(s.mean, THINK.mean, 0.05);
    expect(s.max).toBeLessThanOrEqual(CAP_S);
  });

  it("draws tool times with a median of 0.3 s a call and 16.8 s a step at 1.2 calls a step (20,000 seeded draws)", () => {
    const rnd = random(1);
    const s = stats(Array.from({ length: 20_000 }, () => draw(rnd, TOOL_DIST)));
    within(s.median, TOOL.median, 0.05);
    within(s.mean * TOOL.callsPerStep, TOOL.stepMean, 0.05);
    expect(s.max).toBeLessThanOrEqual(CAP_S);
  });

  it("caps every draw", () => {
    const rnd = random(7);
    const draws = Array.from({ length: 5_000 }, () => draw(rnd, TOOL_DIST, 2));
    expect(Math.max(...draws)).toBe(2);
    expect(draws.filter((d) => d === 2).length).toBeGreaterThan(100);
    const plan = makePlan({ seed: 2, events: 2_000, tag: "c", corpus });
    const waits = [...planWaits(plan, { seed: 2, capS: 1 }).values()].flat();
    expect(Math.max(...waits)).toBeLessThanOrEqual(1_000);
  });

  it("waits before a model call's usage (the generation) and a tool call's result (the tool's run), and nowhere else", () => {
    const plan = makePlan({ seed: 3, events: 1_000, tag: "w", corpus });
    const waits = planWaits(plan, { seed: 3 });
    let think = 0;
    let tool = 0;
    for (const tree of plan.trees) {
      const w = waits.get(tree) ?? [];
      expect(w).toHaveLength(tree.steps.length);
      tree.steps.forEach((step, i) => {
        const kind = waitKind(step);
        if (kind === null) expect(w[i], step.kind).toBe(0);
        else expect(w[i], step.kind).toBeGreaterThan(0);
        if (kind === "think") think++;
        if (kind === "tool") tool++;
        if (step.kind === "model_usage") expect(kind).toBe("think");
        if (step.kind === "tool_result") expect(kind).toBe("tool");
        if (step.kind === "model_ask" || step.kind === "tool_call" || step.kind === "read_result") expect(kind).toBeNull();
      });
    }
    expect(think).toBeGreaterThan(50);
    expect(tool).toBeGreaterThan(50);
  });

  it("gives the same waits and starts for the same seed and plan, and others for another seed", () => {
    const plan = makePlan({ seed: 4, events: 1_000, tag: "s", corpus });
    const a = planWaits(plan, { seed: 4 });
    const b = planWaits(plan, { seed: 4 });
    const c = planWaits(plan, { seed: 5 });
    const flat = (m: ReadonlyMap<unknown, readonly number[]>) => [...m.values()].flat();
    expect(flat(a)).toEqual(flat(b));
    expect(flat(a)).not.toEqual(flat(c));
    // A tree's waits depend on the seed and its place alone: the same in a longer plan of the same seed.
    const longer = makePlan({ seed: 4, events: 2_000, tag: "s", corpus });
    expect(planWaits(longer, { seed: 4 }).get(longer.trees[3] ?? longer.trees[0]!)).toEqual(a.get(plan.trees[3] ?? plan.trees[0]!));
    for (const start of ["steady", "cold"] as const) {
      expect(agentStarts(50, a, { seed: 4, start })).toEqual(agentStarts(50, b, { seed: 4, start }));
      expect(agentStarts(50, a, { seed: 4, start })).not.toEqual(agentStarts(50, a, { seed: 5, start }));
    }
  });

  it("scales every wait and the starts by the think scale", () => {
    const plan = makePlan({ seed: 6, events: 500, tag: "k", corpus });
    const full = [...planWaits(plan, { seed: 6 }).values()].flat();
    const scaled = [...planWaits(plan, { seed: 6, thinkScale: 0.01 }).values()].flat();
    scaled.forEach((w, i) => expect(w).toBeCloseTo((full[i] ?? NaN) * 0.01, 9));
    const starts = agentStarts(200, planWaits(plan, { seed: 6, thinkScale: 0.01 }), { seed: 6, thinkScale: 0.01, start: "cold" });
    expect(Math.max(...starts)).toBeLessThan(THINK.mean * 1000 * 0.01);
    // Steady starts come from the waits, so they scale with them.
    const steady = agentStarts(200, planWaits(plan, { seed: 6 }), { seed: 6 });
    const steadyScaled = agentStarts(200, planWaits(plan, { seed: 6, thinkScale: 0.01 }), { seed: 6, thinkScale: 0.01 });
    steadyScaled.forEach((t, i) => expect(t).toBeCloseTo((steady[i] ?? NaN) * 0.01, 6));
  });

  it("starts cold agents spread over the first think time, not all at once", () => {
    const plan = makePlan({ seed: 1, events: 3_000, tag: "c", corpus });
    const starts = agentStarts(1_000, planWaits(plan, { seed: 1 }), { seed: 1, start: "cold" });
    expect(starts).toHaveLength(1_000);
    expect(Math.min(...starts)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...starts)).toBeLessThan(THINK.mean * 1000);
    // Uniform: about a tenth in each tenth of the span.
    for (let d = 0; d < 10; d++) {
      const n = starts.filter((s) => s >= d * 1_150 && s < (d + 1) * 1_150).length;
      expect(n, `tenth ${d}`).toBeGreaterThan(60);
      expect(n, `tenth ${d}`).toBeLessThan(140);
    }
  });

  it("offers about 0.16 to 0.2 events a second an agent, and N times that for N agents", () => {
    const plan = makePlan({ seed: 1, events: 20_000, tag: "o", corpus });
    const waits = planWaits(plan, { seed: 1 });
    const one = offered(plan, waits, 1);
    // 0.16 a step of a model call and 1.2 tool calls; the plan's starts, ends, child asks and
    // oz.read_result calls come without a wait, so it offers somewhat more.
    expect(one.eventsPerAgentSecond).toBeGreaterThan(0.14);
    expect(one.eventsPerAgentSecond).toBeLessThan(0.23);
    expect(one.answersPerSecond).toBeLessThan(one.eventsPerSecond);
    const many = offered(plan, waits, 300);
    expect(many.eventsPerSecond).toBeCloseTo(one.eventsPerSecond * 300, 6);
    // Scaled waits offer more in proportion.
    expect(offered(plan, planWaits(plan, { seed: 1, thinkScale: 0.1 }), 1).eventsPerSecond).toBeCloseTo(one.eventsPerSecond * 10, 6);
  });

  it("sizes an agents plan with a tree for every agent and what the agents offer over the seconds, with a margin", () => {
    expect(agentsEvents(1, 1)).toBe(3_000);
    expect(agentsEvents(3_000, 120)).toBe(165_000);
    expect(agentsEvents(40, 20, 0.01)).toBe(21_000);
    expect(agentsEvents(3_000, 3_600, 0.001)).toBe(500_000);
    // Every agent has a tree to start with, and more to go on to.
    for (const [agents, seconds] of [
      [300, 30],
      [1_000, 10],
    ] as const) {
      const plan = makePlan({ seed: 1, events: agentsEvents(agents, seconds), tag: "e", corpus });
      expect(plan.trees.length, `${agents} agents`).toBeGreaterThan(agents * 1.1);
    }
  });

  it("offers within a run what agents playing the plan with these waits would send, each taking the next tree when free", () => {
    const plan = makePlan({ seed: 8, events: 300, tag: "r", corpus });
    // Every step a second after the last.
    const waits = new Map(plan.trees.map((t) => [t, t.steps.map(() => 1_000)]));
    const first = plan.trees[0]?.steps.length ?? 0;
    const second = plan.trees[1]?.steps.length ?? 0;
    // One agent: the steps at 1 s, 2 s, ... before the end.
    expect(offeredInRun(plan, waits, [0], 3_500).events).toBe(3);
    // It goes on to the next tree when the first is done.
    expect(offeredInRun(plan, waits, [0], (first + 2) * 1_000 + 500).events).toBe(first + 2);
    // Two agents: the second, starting later, takes the second tree.
    const two = offeredInRun(plan, waits, [0, 400], 3_500);
    expect(two.events).toBe(6);
    expect(two.eventsPerSecond).toBeCloseTo(6 / 3.5, 9);
    // An agent starting after the end sends nothing; with time enough, every tree is played.
    expect(offeredInRun(plan, waits, [5_000], 3_500).events).toBe(0);
    expect(offeredInRun(plan, waits, [0, 0, 0], 1e9).events).toBe(plan.events);
    expect(second).toBeGreaterThan(3);
  });

  it("offers more over a run of minutes than in the long run when every agent starts cold: the long waits have barely begun", () => {
    const agents = 1_000;
    const plan = makePlan({ seed: 1, events: agentsEvents(agents, 40), tag: "l", corpus });
    const waits = planWaits(plan, { seed: 1 });
    const inRun = offeredInRun(plan, waits, agentStarts(agents, waits, { seed: 1, start: "cold" }), 40_000);
    const longRun = offered(plan, waits, agents);
    expect(inRun.eventsPerSecond).toBeGreaterThan(longRun.eventsPerSecond * 1.3);
    expect(inRun.answersPerSecond).toBeLessThan(inRun.eventsPerSecond);
  });

  it("offers the long run's load from the first seconds when agents start as if long at play", () => {
    for (const agents of [1_000, 3_000]) {
      const plan = makePlan({ seed: 1, events: agentsEvents(agents, 60), tag: "st", corpus });
      const waits = planWaits(plan, { seed: 1 });
      const starts = agentStarts(agents, waits, { seed: 1 });
      const longRun = offered(plan, waits, agents).eventsPerSecond;
      // Over a minute within about a tenth of the long run's rate (the first seconds a little
      // under it: an agent that was inside a think starts a fresh tree, whose think comes first),
      // and each quarter of it within a quarter; agents started cold offer 1.7 to 1.9 times it.
      const over = offeredInRun(plan, waits, starts, 60_000).eventsPerSecond;
      expect(over, `${agents} agents over 60 s`).toBeGreaterThan(longRun * 0.85);
      expect(over, `${agents} agents over 60 s`).toBeLessThan(longRun * 1.1);
      let before = 0;
      for (const end of [15, 30, 45, 60]) {
        const upTo = offeredInRun(plan, waits, starts, end * 1_000).events;
        const rate = (upTo - before) / 15;
        expect(rate, `${agents} agents, the 15 s up to ${end} s`).toBeGreaterThan(longRun * 0.75);
        expect(rate, `${agents} agents, the 15 s up to ${end} s`).toBeLessThan(longRun * 1.25);
        before = upTo;
      }
      // Most agents begin inside a long wait: half start after 10 s, none after the longest wait.
      const sorted = [...starts].sort((x, y) => x - y);
      expect(sorted[agents >> 1]).toBeGreaterThan(10_000);
      expect(sorted.at(-1)).toBeLessThanOrEqual(CAP_S * 1_000);
      expect(sorted[0]).toBeGreaterThanOrEqual(0);
    }
    // Without waits, every agent starts at once.
    const plan = makePlan({ seed: 1, events: 500, tag: "z", corpus });
    expect(agentStarts(5, planWaits(plan, { seed: 1, thinkScale: 0 }), { seed: 1 })).toEqual([0, 0, 0, 0, 0]);
  });

  it("matches what agents send when every answer comes at once (a short run, waits scaled down)", async () => {
    const plan = makePlan({ seed: 2, events: 6_000, tag: "m", corpus });
    const thinkScale = 0.02;
    const waits = planWaits(plan, { seed: 2, thinkScale });
    const starts = agentStarts(30, waits, { seed: 2, thinkScale });
    const rec = new Recorder();
    const allow = (id: string): Decision => ({ id: `d-${id}`, input_id: id, processor: "f", tenant: "t", tree_id: "t", job_id: "j", run_id: null, subject: id, verdict: "allow", reason_code: null, limit: null, numbers: {}, message: "", evidence: null, ts: 0 });
    const result = (id: string): ResultDelivered => ({ id: `r-${id}`, input_id: id, processor: "f", tenant: "t", tree_id: "t", job_id: "j", run_id: "r", call_id: "c", plugin: "p", tool: "p", function: "f", is_error: false, content: "ok", truncated: false, fit: null, ts: 0 });
    const target: LoadTarget = {
      askModelCall: (a) => Promise.resolve(allow(a.id)),
      askChild: (a) => Promise.resolve(allow(a.id)),
      requestToolCall: (c) => Promise.resolve(allow(c.id)),
      deliverToolResult: (r) => Promise.resolve(result(r.id)),
      readResult: (c) => Promise.resolve(result(c.id)),
      awaitAdmission: (id) => Promise.resolve(allow(id)),
      publishModelCalls: () => Promise.resolve(),
      publishJobEvents: () => Promise.resolve(),
    };
    const ms = 3_000;
    await playAgents(plan, target, rec, { deadline: Date.now() + ms, waits, starts });
    const expected = offeredInRun(plan, waits, starts, ms).events;
    expect(expected).toBeGreaterThan(300);
    // Timers run a little late, so the agents send somewhat less (or a little more, as trees go to agents in another order).
    expect(rec.events).toBeLessThanOrEqual(expected * 1.05);
    expect(rec.events).toBeGreaterThan(expected * 0.8);
  });
});

