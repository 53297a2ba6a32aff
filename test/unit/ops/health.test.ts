import { describe, expect, it } from "vitest";
import { Health } from "../../../processors/ops/health.ts";

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe("the health state machine", () => {
  it("is live at once and ready only when every processor started and its group is stable with a member", () => {
    const c = clock();
    const h = new Health({ now: c.now, staleAfterMs: 10_000 });
    expect(h.live().live).toBe(true);
    expect(h.ready().ready).toBe(false);
    expect(h.ready().reasons).toContain("the pipeline is starting");

    h.starting("loop-calls", "oz0.loop-calls");
    h.starting("fit-results", "oz0.fit-results");
    h.started("loop-calls");
    h.running();
    expect(h.ready().reasons).toEqual(["loop-calls: group oz0.loop-calls not seen yet", "fit-results has not started"]);

    h.started("fit-results");
    h.groupSeen("loop-calls", { state: "Stable", members: 1 });
    h.groupSeen("fit-results", { state: "PreparingRebalance", members: 1 });
    expect(h.ready()).toMatchObject({ ready: false, reasons: ["fit-results: group oz0.fit-results is PreparingRebalance with 1 members"] });

    h.groupSeen("fit-results", { state: "Stable", members: 1 });
    expect(h.ready()).toMatchObject({ ready: true, phase: "running", reasons: [] });
    expect(h.ready().processors["fit-results"]).toEqual({ started: true, group: "oz0.fit-results", state: "Stable", members: 1 });
  });

  it("is not ready when a group lost its members, when what the broker said is stale, or while stopping", () => {
    const c = clock();
    const h = new Health({ now: c.now, staleAfterMs: 10_000 });
    h.starting("p", "g");
    h.started("p");
    h.running();
    h.groupSeen("p", { state: "Stable", members: 1 });
    expect(h.ready().ready).toBe(true);

    h.groupSeen("p", { state: "Empty", members: 0 });
    expect(h.ready().reasons).toEqual(["p: group g is Empty with 0 members"]);

    h.groupSeen("p", { state: "Stable", members: 1 });
    c.advance(10_001);
    expect(h.ready().reasons).toEqual(["p: group g last seen 10 s ago"]);

    h.groupSeen("p", { state: "Stable", members: 1 });
    h.stopping();
    expect(h.ready()).toMatchObject({ ready: false, phase: "stopping", reasons: ["the pipeline is stopping"] });
    expect(h.live().live).toBe(true);
  });

  it("after a fatal error is neither ready nor live, keeps the first reason, and stopping does not hide it", () => {
    const h = new Health();
    h.starting("p", "g");
    h.started("p");
    h.running();
    h.groupSeen("p", { state: "Stable", members: 1 });
    h.failed("the loop deadline timer died: redis gone");
    h.failed("a later error");
    h.stopping();
    expect(h.current).toBe("failed");
    expect(h.ready()).toMatchObject({ ready: false, reasons: ["the pipeline failed: the loop deadline timer died: redis gone"] });
    expect(h.live()).toMatchObject({ live: false, reason: "the loop deadline timer died: redis gone" });
  });

  it("is not ready with no processor, and refuses a start nobody announced", () => {
    const h = new Health();
    h.running();
    expect(h.ready().reasons).toEqual(["no processor runs"]);
    expect(() => h.started("ghost")).toThrow(/without being announced/);
  });
});
