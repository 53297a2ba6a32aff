import { describe, expect, it } from "vitest";
import { bucketOf, forecastFires, HIT, newForecastState, overChance, recordTree, statsOf } from "../../../processors/limits/forecast.ts";
import { limitsTreeKey } from "../../../processors/limits/memory-store.ts";
import type { Decision } from "../../../schemas/types.ts";
import { uid } from "../../support/events.ts";
import { agent, jobEvent, modelCall, setup, tenantSettings, usageOf } from "./support.ts";

describe("LIM-8 spend forecast: pure logic", () => {
  it("LIM-8 a finished tree is kept as a hit (an ask did not fit, or it spent all) or its final share in 5% steps", () => {
    expect(bucketOf(0, 1_000, false)).toBe(0);
    expect(bucketOf(499, 1_000, false)).toBe(9);
    expect(bucketOf(999, 1_000, false)).toBe(19);
    expect(bucketOf(1_000, 1_000, false)).toBe(HIT);
    expect(bucketOf(10, 1_000, true)).toBe(HIT);
  });

  it("LIM-8 the window keeps the last trees, each once", () => {
    const f = newForecastState(3);
    expect(recordTree(f, "a", HIT)).toBe(true);
    expect(recordTree(f, "a", HIT)).toBe(false);
    for (const [t, b] of [["b", 2], ["c", 2], ["d", 5]] as const) recordTree(f, t, b);
    const s = statsOf(f);
    expect([s.finished, s.hits, s.buckets[2], s.buckets[5]]).toEqual([4, 0, 2, 1]);
    // "a" left the window: it counts as new again.
    expect(recordTree(f, "a", HIT)).toBe(true);
  });

  it("LIM-8 the chance counts only past trees that got as far as this one has spent", () => {
    const f = newForecastState();
    for (let i = 0; i < 4; i++) recordTree(f, `hit${i}`, HIT);
    for (let i = 0; i < 12; i++) recordTree(f, `cheap${i}`, 2);
    for (let i = 0; i < 4; i++) recordTree(f, `dear${i}`, 16);
    const s = statsOf(f);
    expect(overChance(s, 0, 1_000)).toBeCloseTo(4 / 20);
    expect(overChance(s, 500, 1_000)).toBeCloseTo(4 / 8);
    expect(overChance(s, 900, 1_000)).toBe(1);
    expect(forecastFires({ stats: s, spent: 900, budget: 1_000, chance: 0.8, minRuns: 20 })).toBe(true);
    expect(forecastFires({ stats: s, spent: 900, budget: 1_000, chance: 0.8, minRuns: 21 })).toBe(false);
    expect(forecastFires({ stats: s, spent: 500, budget: 1_000, chance: 0.8, minRuns: 20 })).toBe(false);
    expect(forecastFires({ stats: s, spent: 1_000, budget: 1_000, chance: 0.8, minRuns: 20 })).toBe(false);
  });
});

describe("LIM-8 spend forecast in the processors", () => {
  // $0.05 a tree: two asks of $0.018 fit, the third does not (the tree hits its budget).
  const boss = agent("boss", { limits: { tree: {}, max_cost_usd: 0.05, reserve: "strict" } });

  async function history(env: ReturnType<typeof setup>, trees: number, hit: boolean) {
    for (let i = 0; i < trees; i++) {
      const tree = uid("tree");
      await env.jobs.pipe(jobEvent(tree, { started_by: "person" }));
      const asks = [modelCall(tree), modelCall(tree), ...(hit ? [modelCall(tree)] : [])];
      await env.calls.pipe(asks, { key: tree });
      await env.calls.pipe(asks.slice(0, 2).map((a) => usageOf(a, 1_000)), { key: tree });
      await env.jobs.pipe(jobEvent(tree, { kind: "ended", outcome: "succeeded" }));
    }
  }

  it("LIM-8 once the agent has min_runs finished trees that mostly hit their budget, a tree's ask waits for more budget (budget_forecast), once per tree", async () => {
    const env = setup([boss]);
    await history(env, 17, true);
    await history(env, 3, false);
    expect(env.calls.read<Decision>("oz0.admissions").filter((d) => d.reason_code === "budget_forecast")).toEqual([]);
    const tree = uid("tree");
    await env.jobs.pipe(jobEvent(tree, { started_by: "person" }));
    const first = modelCall(tree);
    await env.calls.pipe([first, first, modelCall(tree)], { key: tree });
    const [forecast, replay, next] = env.calls.read<Decision>("oz0.admissions").slice(-3);
    expect(forecast).toMatchObject({ verdict: "wait", reason_code: "budget_forecast", limit: "spend.forecast.chance", subject: first.request_id });
    expect(forecast?.numbers).toMatchObject({ chance: 0.85, forecast_chance: 0.8, budget_usd: 0.05 });
    expect(forecast?.message).toMatch(/raise limits\.max_cost_usd of agent boss/);
    expect(replay).toEqual(forecast);
    expect(next).toMatchObject({ verdict: "allow" });
    // The held call reserved nothing in the tree.
    expect(env.store.trees.get(limitsTreeKey("acme", tree))?.reserved).toBe(18_000);
  });

  it("LIM-8 no forecast before min_runs finished trees, nor when the tree's on_budget is fail", async () => {
    const few = setup([boss], tenantSettings({ spend: { forecast: { min_runs: 30 } } }));
    await history(few, 20, true);
    const tree = uid("tree");
    await few.jobs.pipe(jobEvent(tree, { started_by: "person" }));
    await few.calls.pipe(modelCall(tree), { key: tree });
    expect(few.calls.read<Decision>("oz0.admissions").at(-1)?.verdict).toBe("allow");

    const failing = setup([boss]);
    await history(failing, 20, true);
    const other = uid("tree");
    await failing.jobs.pipe(jobEvent(other, { started_by: "app" }));
    await failing.calls.pipe(modelCall(other), { key: other });
    expect(failing.calls.read<Decision>("oz0.admissions").at(-1)?.verdict).toBe("allow");
    expect(failing.store.forecasts.get("acme/boss")?.finished).toBe(20);
  });
});
