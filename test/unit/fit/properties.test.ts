import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CAP, CAP_CHARS, fit, fitDiff, fitDocument, weigh } from "../../../processors/fit/index.ts";
import type { FitOptions, Fitted, View } from "../../../processors/fit/types.ts";

const RANK: Record<View, number> = { full: 0, section: 1, summary: 2, stub: 3 };

const word = fc.constantFrom("widget", "install", "the", "config", "Kafka", "token", "budget", "use", "a", "of", "données", "数据", "x1", "`code`", "run");
const words = (min: number, max: number): fc.Arbitrary<string> => fc.array(word, { minLength: min, maxLength: max }).map((ws) => ws.join(" "));
const sentence = words(1, 12).map((s) => s.charAt(0).toUpperCase() + s.slice(1) + ".");
const section = fc.record({
  level: fc.integer({ min: 1, max: 4 }),
  title: words(1, 4),
  body: fc.array(sentence, { maxLength: 10 }),
  fence: fc.boolean(),
  spaces: fc.nat(300),
});
const markdown = fc.array(section, { maxLength: 14 }).map((ss) =>
  ss
    .map((s) => [`${"#".repeat(s.level)} ${s.title}`, "", ...s.body, ...(s.fence ? ["```", "# not a heading", "```"] : []), " ".repeat(s.spaces), ""].join("\n"))
    .join("\n"),
);
const diff = fc.array(fc.record({ path: words(1, 3).map((w) => w.replace(/\W+/g, "/") + ".ts"), hunks: fc.array(fc.array(fc.tuple(fc.constantFrom("+", "-", " "), words(0, 8)), { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 4 }) }), { minLength: 1, maxLength: 5 }).map((files) =>
  files
    .map((f) => [`diff --git a/${f.path} b/${f.path}`, `--- a/${f.path}`, `+++ b/${f.path}`, ...f.hunks.flatMap((h, i) => [`@@ -${i * 10 + 1},${h.length} +${i * 10 + 1},${h.length} @@`, ...h.map(([m, w]) => m + w)])].join("\n"))
    .join("\n") + "\n",
);
const input: fc.Arbitrary<unknown> = fc.oneof(markdown, diff, fc.jsonValue({ maxDepth: 3 }), fc.string({ maxLength: 500 }));
const query = fc.option(fc.oneof(words(1, 3), fc.tuple(fc.integer({ min: 1, max: 60 }), fc.nat(40)).map(([a, n]) => `${a}-${a + n}`), fc.constantFrom("[0]", "[2]", "no such thing")), { nil: undefined });
const opts: fc.Arbitrary<FitOptions> = fc.record(
  {
    view: fc.constantFrom("stub", "summary", "section", "full", "bogus"),
    budget: fc.oneof(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 6000 })),
    query,
    chars: fc.integer({ min: 0, max: 30_000 }),
  },
  { requiredKeys: [] },
);

function bounds(o: FitOptions): { tokens: number; chars: number } {
  const budget = typeof o.budget === "number" && o.budget >= 1 ? Math.floor(o.budget) : null;
  let chars = CAP_CHARS;
  if (budget !== null) chars = Math.min(chars, budget * 8);
  if (typeof o.chars === "number") chars = Math.min(chars, o.chars);
  return { tokens: Math.min(budget ?? CAP, CAP), chars };
}

const stubOf = (value: unknown, o: FitOptions): Fitted => fit(value, { ...o, view: "stub" });

describe("properties of fitted answers", () => {
  it("FIT-9 a fitted answer never exceeds its bounds: its text within the character bound always, within the budget when the stub fits", () => {
    fc.assert(
      fc.property(input, opts, (value, o) => {
        const f = fit(value, o);
        const b = bounds(o);
        expect(f.text.length).toBeLessThanOrEqual(b.chars);
        expect(f.meta().tokens).toBe(weigh(f.text));
        // Only the floor of a stub may be over a budget too small for it, and it says so.
        if (!stubOf(value, o).truncated || f.meta().view !== "stub") expect(weigh(f.text)).toBeLessThanOrEqual(b.tokens);
        else if (weigh(f.text) > b.tokens) expect([f.truncated, f.meta().reason !== undefined]).toEqual([true, true]);
      }),
      { numRuns: 300 },
    );
  });

  it("FIT-6 a view never grows when it falls: the answer is the view asked for or a smaller one, and no bigger than what did not fit", () => {
    fc.assert(
      fc.property(input, opts, (value, o) => {
        const f = fit(value, o);
        const note = f.meta();
        const asked = ["stub", "summary", "section", "full"].includes(o.view ?? "") ? (o.view as View) : null;
        if (asked !== null) expect(RANK[note.view]).toBeGreaterThanOrEqual(RANK[asked]);
        if (f.truncated && !stubOf(value, o).truncated) {
          // The view it fell from, with no bound: bigger in the measure that forced the fall.
          const from = fit(value, { view: asked, query: o.query });
          expect(RANK[note.view]).toBeGreaterThan(RANK[from.meta().view]);
          if (note.reason === "budget" || note.reason === "cap") expect(note.tokens).toBeLessThan(from.meta().tokens);
          else expect(f.text.length).toBeLessThan(from.text.length);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("FIT-11 the same input gives the same output", () => {
    fc.assert(
      fc.property(input, opts, (value, o) => {
        const a = fit(value, o);
        const copy = typeof value === "string" ? value.split("").join("") : (JSON.parse(JSON.stringify(value)) as unknown);
        const b = fit(copy, { ...o });
        expect(b.text).toBe(a.text);
        expect(b.meta()).toEqual(a.meta());
        expect(b.truncated).toBe(a.truncated);
      }),
      { numRuns: 150 },
    );
  });

  it("FIT-7 the stub always fits when anything does (for bounds of at least the stub's floor, about 30 tokens)", () => {
    const roomy = fc.record({ budget: fc.integer({ min: 40, max: 4000 }), chars: fc.option(fc.integer({ min: 320, max: 40_000 }), { nil: undefined }), query });
    fc.assert(
      fc.property(fc.oneof(markdown, diff), roomy, (text, o) => {
        const fitsAsked = (["full", "section", "summary"] as const).some((view) => {
          const f = fit(text, { ...o, view });
          return f.meta().view === view && !f.truncated;
        });
        if (fitsAsked) expect(stubOf(text, o).truncated).toBe(false);
      }),
      { numRuns: 200 },
    );
  });

  it("FIT-5 with no view the answer is the first of full (or section), summary, stub that fits", () => {
    fc.assert(
      fc.property(markdown, fc.integer({ min: 40, max: 3000 }), query, (text, budget, q) => {
        const f = fitDocument(text, { budget, query: q });
        const view = f.meta().view;
        for (const bigger of ["full", "section", "summary"] as const) {
          if (RANK[bigger] >= RANK[view]) break;
          if (bigger === "full" && q !== undefined) continue;
          const tried = fitDocument(text, { budget, query: q, view: bigger });
          if (tried.meta().view === bigger) expect(tried.truncated, `${bigger} fits, but ${view} was chosen`).toBe(true);
        }
      }),
      { numRuns: 150 },
    );
  });

  it("FIT-18 a diff's sections are whole hunks and files, whatever the budget", () => {
    fc.assert(
      fc.property(diff, fc.integer({ min: 1, max: 4 }), (text, n) => {
        const path = /^\+\+\+ b\/(.*)$/m.exec(text)![1]!;
        const f = fitDiff(text, { query: `${path}#${n}` });
        if (f.meta().view !== "section") return;
        const lines = f.text.split("\n");
        // The query names the file by its path or the path's tail.
        const header = /^diff --git a\/(.*) b\/(.*)$/.exec(lines[0]!);
        expect(header).not.toBeNull();
        expect(header![2] === path || header![2]!.endsWith(`/${path}`)).toBe(true);
        expect(lines.filter((l) => l.startsWith("@@ ")).length).toBe(1);
        expect(text).toContain(f.text.slice(f.text.indexOf("@@ ")));
      }),
      { numRuns: 100 },
    );
  });
});
