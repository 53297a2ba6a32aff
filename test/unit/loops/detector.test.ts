import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { EMPTY_CALL_STATE, watchCall, type CallState, type CallThresholds, type LoopFound } from "../../../processors/loops/call-detector.ts";
import { EMPTY_PROGRESS_STATE, watchResult, type NothingNew } from "../../../processors/loops/progress-detector.ts";
import type { ResultSummary } from "../../../processors/loops/digest.ts";

const DEFAULTS: CallThresholds = { repeats: 3, cycles: 2 };

/** Feeds calls (signatures; "h:" marks a harness session's own call) and returns what each found. */
function feed(calls: string[], t: CallThresholds = DEFAULTS, start: CallState = EMPTY_CALL_STATE): Array<LoopFound | null> {
  let state = start;
  return calls.map((c) => {
    const step = watchCall(state, { signature: c, harness: c.startsWith("h:") }, t);
    state = step.state;
    return step.loop;
  });
}

const detectors = (found: Array<LoopFound | null>) => found.map((f) => f?.detector ?? null);

describe("LOOP-2 repeats", () => {
  it("LOOP-2 the same call three times is a repeat, found on the third, which completes it", () => {
    expect(detectors(feed(["read#a", "read#a", "read#a"]))).toEqual([null, null, "repeats"]);
  });

  it("LOOP-2 a paging agent is never flagged: every page is another call", () => {
    const pages = Array.from({ length: 40 }, (_, i) => `read#page${i}`);
    expect(feed(pages).every((f) => f === null)).toBe(true);
  });

  it("LOOP-2 paging is never a repeat, whatever pages and thresholds", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string(), { minLength: 1, maxLength: 60 }), fc.integer({ min: 2, max: 6 }), (pages, repeats) => {
        expect(feed(pages.map((p) => `read#${p}`), { repeats, cycles: 2 }).filter((f) => f?.detector === "repeats")).toEqual([]);
      }),
    );
  });

  it("LOOP-2 repeats count within the run's recent calls, not only in a row", () => {
    const found = feed(["read#a", "search#x", "read#a", "list#y", "read#a"]);
    expect(found.at(-1)).toEqual({ detector: "repeats", calls: ["read#a", "read#a", "read#a"], count: 3 });
  });

  it("LOOP-2 the agent's repeats wins over the default", () => {
    expect(detectors(feed(["r#a", "r#a", "r#a", "r#a"], { repeats: 4, cycles: 2 }))).toEqual([null, null, null, "repeats"]);
  });

  it("LOOP-2 a call repeated only outside the window of recent calls is not a repeat", () => {
    const spaced = ["r#a", ...Array.from({ length: 40 }, (_, i) => `x#${i}`), "r#a", ...Array.from({ length: 40 }, (_, i) => `y#${i}`), "r#a"];
    expect(feed(spaced).every((f) => f === null)).toBe(true);
  });
});

describe("LOOP-3 cycles", () => {
  it("LOOP-3 search, read, search, read is a cycle, found on the fourth call", () => {
    const found = feed(["search#q", "read#1", "search#q", "read#1"]);
    expect(detectors(found)).toEqual([null, null, null, "cycles"]);
    expect(found[3]).toEqual({ detector: "cycles", calls: ["search#q", "read#1", "search#q", "read#1"], count: 2 });
  });

  it("LOOP-3 sequences of three and four calls repeated in a row are cycles", () => {
    expect(detectors(feed(["a#1", "b#1", "c#1", "a#1", "b#1", "c#1"])).at(-1)).toBe("cycles");
    expect(detectors(feed(["a#1", "b#1", "c#1", "d#1", "a#1", "b#1", "c#1", "d#1"])).at(-1)).toBe("cycles");
  });

  it("LOOP-3 a sequence of five is not looked for, and a broken sequence is no cycle", () => {
    expect(feed(["a#1", "b#1", "c#1", "d#1", "e#1", "a#1", "b#1", "c#1", "d#1", "e#1"]).every((f) => f === null)).toBe(true);
    expect(feed(["search#q", "read#1", "search#q", "read#2"]).every((f) => f === null)).toBe(true);
  });

  it("LOOP-3 search and read of the next page each time is no cycle", () => {
    const calls = Array.from({ length: 20 }, (_, i) => [`search#q${i}`, `read#${i}`]).flat();
    expect(feed(calls).every((f) => f === null)).toBe(true);
  });

  it("LOOP-3 the agent's cycles wins over the default: three rounds are needed for cycles 3", () => {
    const calls = ["s#q", "r#1", "s#q", "r#1", "s#q", "r#1"];
    expect(detectors(feed(calls, { repeats: 9, cycles: 3 }))).toEqual([null, null, null, null, null, "cycles"]);
  });
});

describe("LOOP-8 a harness session's own calls", () => {
  it("LOOP-8 the same call again with no other call between is a repeat", () => {
    expect(detectors(feed(["h:test#1", "h:test#1", "h:test#1"]))).toEqual([null, null, "harness_repeats"]);
  });

  it("LOOP-8 edit, test, edit, test is no loop: only a repeat in a row counts, and no cycle is looked for", () => {
    const calls = Array.from({ length: 10 }, (_, i) => [`h:edit#${i % 2}`, "h:test#npm"]).flat();
    expect(feed(calls).every((f) => f === null)).toBe(true);
  });

  it("LOOP-8 another call between breaks the run of repeats", () => {
    expect(detectors(feed(["h:test#1", "h:test#1", "h:edit#a", "h:test#1", "h:test#1"])).every((d) => d === null)).toBe(true);
  });

  it("LOOP-8 the tenant's tools a session calls are watched as an agent's are", () => {
    expect(detectors(feed(["search#q", "h:test#1", "read#1", "search#q", "read#1"])).at(-1)).toBe("cycles");
  });
});

const summary = (hash: string, over: Partial<ResultSummary> = {}): ResultSummary => ({ hash, empty: false, error: false, ...over });

function progress(results: ResultSummary[], noProgress = 5): Array<{ nothingNew: NothingNew | null; crossed: boolean }> {
  let state = EMPTY_PROGRESS_STATE;
  return results.map((r) => {
    const step = watchResult(state, r, noProgress);
    state = step.state;
    return { nothingNew: step.nothingNew, crossed: step.crossed };
  });
}

describe("LOOP-4 no progress", () => {
  it("LOOP-4 five empty results in a row cross the line on the fifth", () => {
    const out = progress(Array.from({ length: 5 }, (_, i) => summary(`e${i}`, { empty: true })));
    expect(out.map((o) => o.crossed)).toEqual([false, false, false, false, true]);
    expect(out.every((o) => o.nothingNew === "empty")).toBe(true);
  });

  it("LOOP-4 the same error five times crosses the line (the first one was new)", () => {
    const out = progress(Array.from({ length: 6 }, () => summary("boom", { error: true })));
    expect(out.map((o) => o.nothingNew)).toEqual([null, "same_error", "same_error", "same_error", "same_error", "same_error"]);
    expect(out.map((o) => o.crossed)).toEqual([false, false, false, false, false, true]);
  });

  it("LOOP-4 results seen before count; one new result starts the count again", () => {
    const out = progress(["a", "b", "a", "b", "a", "c", "a", "b", "a", "b", "a"].map((h) => summary(h)));
    expect(out.map((o) => o.crossed)).toEqual([false, false, false, false, false, false, false, false, false, false, true]);
  });

  it("LOOP-4 a paging agent whose every page is new never crosses", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ minLength: 1 }), { maxLength: 100 }), (pages) => {
        expect(progress(pages.map((p) => summary(p))).some((o) => o.crossed)).toBe(false);
      }),
    );
  });

  it("LOOP-4 the line is crossed once, by the result that reaches no_progress", () => {
    const out = progress(Array.from({ length: 12 }, () => summary("x", { empty: true })), 6);
    expect(out.filter((o) => o.crossed)).toHaveLength(1);
    expect(out.findIndex((o) => o.crossed)).toBe(5);
  });
});
