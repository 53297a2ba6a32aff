import { describe, expect, it } from "vitest";
import { weigh } from "../../../processors/fit/index.ts";
import { OUTLINE_CAP, outlineResult, readResult } from "../../../processors/fit/outline.ts";
import { CODE, DIFF, page } from "./samples.ts";

describe("how a result is read and outlined for offloading", () => {
  it("OFF-5 a JSON object is read by its top-level keys, one indented line per value, even when written on one line", () => {
    const value = { name: "widget", tags: ["a", "b"], nested: { depth: 2 } };
    const oneLine = JSON.stringify(value);
    const form = readResult(oneLine);
    expect(form.kind).toBe("json");
    expect(form.text).toBe(JSON.stringify(value, null, 2));
    expect(form.lines).toBe(JSON.stringify(value, null, 2).split("\n").length);
    expect(readResult(value)).toEqual(form);
    const outline = outlineResult(oneLine, 200);
    expect(outline.outline.split("\n").map((l) => l.split(":")[0])).toEqual(['"name"', '"tags"', '"nested"']);
  });

  it("OFF-5 a JSON array is read by its items [n]", () => {
    const outline = outlineResult([{ id: 1 }, { id: 2 }, "three"], 200);
    expect(outline.kind).toBe("json");
    expect(outline.outline).toBe('[0]: {"id": 1}\n[1]: {"id": 2}\n[2]: "three"');
    expect(outline.lines).toBe(JSON.stringify([{ id: 1 }, { id: 2 }, "three"], null, 2).split("\n").length);
  });

  it("OFF-5 Markdown is read by its headings, code by its definitions, a diff by its files and hunks, anything else by runs of lines", () => {
    const md = outlineResult(page(3, 2), 500);
    expect(md.kind).toBe("markdown");
    expect(md.outline.split("\n").slice(0, 2)).toEqual(["# Acme widget: The widget turns input into output.", "## Part 0: Part 0 begins here."]);
    expect(outlineResult(CODE, 500, "widget.ts").outline).toContain("export class Widget");
    expect(outlineResult(DIFF, 500).kind).toBe("diff");
    expect(outlineResult(DIFF, 500).outline.split("\n")[0]).toBe("src/app.ts (+2 -1, 2 hunks)");
    const log = Array.from({ length: 200 }, (_, i) => `2024-01-01 00:00:${String(i % 60).padStart(2, "0")} status installed pkg-${i}`).join("\n");
    const text = outlineResult(log, 500);
    expect(text.kind).toBe("text");
    expect(text.lines).toBe(200);
    expect(text.outline.split("\n")[0]).toMatch(/^lines 1-\d+: 2024-01-01 00:00:00 status installed pkg-0$/);
  });

  it("OFF-4 the outline is the summary (each heading with its first sentence) when it fits the bound", () => {
    const o = outlineResult(page(5, 3), 1000);
    expect(o.form).toBe("summary");
    expect(o.complete).toBe(true);
    expect(o.outline).toContain("## Part 4: Part 4 begins here.");
    expect(o.tokens).toBe(weigh(o.outline));
  });

  it("OFF-4 the outline is the bare stub (headings alone) when the summary does not fit, and never above the bound", () => {
    const doc = page(40, 3);
    const summary = outlineResult(doc, 1000);
    const bound = Math.floor(summary.tokens * 0.6);
    const o = outlineResult(doc, bound);
    expect(o.form).toBe("stub");
    expect(o.outline).toContain("## Part 39");
    expect(o.outline).not.toContain("begins here");
    expect(weigh(o.outline)).toBeLessThanOrEqual(bound);
    const tight = outlineResult(doc, 60);
    expect(weigh(tight.outline)).toBeLessThanOrEqual(60);
    expect(tight.complete).toBe(false);
    expect(tight.outline).toMatch(/\(\d+ (more|deeper) parts are not listed\.\)$/);
  });

  it("OFF-4 the outline never takes more than 1,000 tokens, whatever bound is asked for", () => {
    const o = outlineResult(page(400, 1), 50_000);
    expect(OUTLINE_CAP).toBe(1000);
    expect(o.tokens).toBeLessThanOrEqual(1000);
    expect(weigh(o.outline)).toBeLessThanOrEqual(1000);
  });

  it("OFF-4 the same text gives the same outline", () => {
    const doc = page(30, 4);
    const a = outlineResult(doc, 300);
    const b = outlineResult(doc.split("").join(""), 300);
    expect(b).toEqual(a);
  });
});
