import { describe, expect, it } from "vitest";
import { CAP, CAP_CHARS, charsOf, fit, fitDiff, fitDocument, META_KEY, wanted, weigh } from "../../../processors/fit/index.ts";
import type { Fitted, FitNote } from "../../../processors/fit/types.ts";
import { CODE, DIFF, page } from "./samples.ts";

const BIG = page(12, 40); // about 6,500 tokens
const note = (f: Fitted): FitNote => f.meta();

describe("the fitting functions and their arguments", () => {
  it("FIT-1 a fitting function takes three optional arguments: view, budget and query", () => {
    expect(note(fitDocument(BIG)).view).toBe("full");
    expect(note(fitDocument(BIG, { view: "stub" })).view).toBe("stub");
    expect(note(fitDocument(BIG, { budget: 400 })).budget).toBe(400);
    expect(fitDocument(BIG, { query: "Part 3" }).text.startsWith("## Part 3\n")).toBe(true);
    for (const view of ["stub", "summary", "section", "full"] as const) expect(note(fitDocument(BIG, { view, query: "Part 1" })).view).toBe(view);
  });

  it("FIT-8 wanted is false unless a view, a budget or a query is given, so the call is answered as before", () => {
    expect(wanted()).toBe(false);
    expect(wanted(undefined, undefined, undefined)).toBe(false);
    expect(wanted(null, null, null)).toBe(false);
    expect(wanted("", 0, "  ")).toBe(false);
    expect(wanted("stub")).toBe(true);
    expect(wanted(undefined, 500)).toBe(true);
    expect(wanted(undefined, undefined, "Install")).toBe(true);
  });

  it("FIT-13 every fitted answer carries the note {view, budget, size, tokens, omitted}, kept under _meta's oz0/fit", () => {
    expect(META_KEY).toBe("oz0/fit");
    for (const opts of [{}, { budget: 300 }, { view: "summary" }, { query: "Part 2" }, { query: "no such part" }]) {
      const f = fitDocument(BIG, opts);
      const n = note(f);
      expect(Object.keys(n).sort()).toEqual(expect.arrayContaining(["budget", "omitted", "size", "tokens", "view"]));
      expect(n.size).toBe(weigh(BIG));
      expect(n.tokens).toBe(weigh(f.text));
      expect(typeof n.omitted).toBe("string");
      expect(n.omitted).toMatch(/^[A-Z].*\.$/);
    }
    // meta() is a fresh copy every time.
    const f = fitDocument(BIG, { budget: 300 });
    const a = f.meta() as { tokens: number };
    a.tokens = -1;
    expect(f.meta().tokens).not.toBe(-1);
  });

  it("FIT-13 the omitted sentence names what was left out, as 'the section matching X; the rest of the page (N tokens) was left out'", () => {
    const f = fitDocument(BIG, { query: "Part 5" });
    const n = note(f);
    expect(n.view).toBe("section");
    expect(n.omitted).toBe(`This is the section matching 'Part 5'; the rest of the document (${n.size - n.tokens} tokens) was left out.`);
    expect(note(fitDocument(BIG)).omitted).toMatch(/nothing was left out/);
  });
});

describe("the views", () => {
  it("FIT-2 the stub holds metadata, the size and an outline of the headings", () => {
    const f = fitDocument(BIG, { view: "stub", name: "widget.md" });
    const size = weigh(BIG);
    expect(f.text).toContain(`widget.md: markdown, ${size} tokens`);
    for (let s = 0; s < 12; s++) expect(f.text).toContain(`## Part ${s} (lines`);
    expect(f.text).not.toContain("Line 3 of part");
  });

  it("FIT-2 the stub of a diff is its file list", () => {
    const f = fitDiff(DIFF, { view: "stub" });
    expect(f.text).toMatch(/^src\/app\.ts \(\+2 -1, 2 hunks\)/m);
    expect(f.text).toMatch(/^README\.md \(\+1 -1, 1 hunk\)/m);
    expect(f.text).not.toContain("const port");
  });

  it("FIT-3 the summary is the outline with each part's first sentence, cut from the text", () => {
    const f = fitDocument(BIG, { view: "summary" });
    for (let s = 0; s < 12; s++) {
      const line = f.text.split("\n").find((l) => l.startsWith(`## Part ${s} `));
      expect(line).toBeDefined();
      const sentence = line!.slice(line!.indexOf(": ") + 2);
      expect(sentence).toBe(`Part ${s} begins here.`);
      expect(BIG).toContain(sentence);
    }
    expect(f.text).not.toContain("It goes on for a while");
  });

  it("FIT-4 a section is the part a heading names, with its sub-headings, whole", () => {
    const doc = ["# A", "intro", "## B", "b text", "### B1", "b1 text", "## C", "c text", ""].join("\n");
    expect(fitDocument(doc, { query: "B" }).text).toBe("## B\nb text\n### B1\nb1 text\n");
    expect(fitDocument(doc, { query: "## b1" }).text).toBe("### B1\nb1 text\n");
    expect(fitDocument(doc, { query: "C" }).text).toBe("## C\nc text\n");
  });

  it("FIT-4 a section is a definition named in code, running to the next definition at its depth", () => {
    expect(fitDocument(CODE, { query: "add", name: "widget.ts" }).text).toBe(
      "/** Adds two numbers. Returns their sum. */\nexport function add(a: number, b: number): number {\n  return a + b;\n}\n\n",
    );
    const widget = fitDocument(CODE, { query: "Widget", name: "widget.ts" }).text;
    expect(widget.startsWith("export class Widget {")).toBe(true);
    expect(widget).toContain("render(): string");
    expect(widget).not.toContain("function helper");
    expect(fitDocument(CODE, { query: "Widget.render", name: "widget.ts" }).text).toBe("  render(): string {\n    return `<${this.name}>`;\n  }\n}\n\n");
  });

  it("FIT-4 definitions are named the same way in Python, Go, Rust and C, with what documents them", () => {
    const py = ["import os", "", "class Store:", '    """Keeps things. Forever."""', "", "    def put(self, k, v):", "        self.d[k] = v", "", "    @property", "    def size(self):", "        return len(self.d)", "", "def main():", "    Store().put(1, 2)", ""].join("\n");
    expect(fitDocument(py, { query: "Store.size", name: "s.py" }).text).toBe("    @property\n    def size(self):\n        return len(self.d)\n\n");
    expect(fitDocument(py, { query: "main", name: "s.py" }).text).toBe("def main():\n    Store().put(1, 2)\n");
    expect(fitDocument(py, { view: "summary", name: "s.py" }).text).toContain("class Store: (lines 3-12): Keeps things.");
    const go = ["package main", "", "// Server serves.", "type Server struct {", "\taddr string", "}", "", "func (s *Server) Start() error {", "\treturn nil", "}", ""].join("\n");
    expect(fitDocument(go, { query: "Server", name: "s.go" }).text).toBe("// Server serves.\ntype Server struct {\n\taddr string\n}\n\n");
    expect(fitDocument(go, { query: "Start", name: "s.go" }).text).toBe("func (s *Server) Start() error {\n\treturn nil\n}\n");
    const rs = ["pub struct Point { x: i32 }", "", "impl fmt::Display for Point {", "    fn fmt(&self) -> String {", "        String::new()", "    }", "}", "", "pub(crate) fn origin() -> Point {", "    Point { x: 0 }", "}", ""].join("\n");
    expect(fitDocument(rs, { query: "fmt::Display for Point", name: "p.rs" }).text.startsWith("impl fmt::Display for Point {\n")).toBe(true);
    expect(fitDocument(rs, { query: "origin", name: "p.rs" }).text).toBe("pub(crate) fn origin() -> Point {\n    Point { x: 0 }\n}\n");
    const c = ["#include <stdio.h>", "", "#define MAX 10", "", "static int add(int a, int b)", "{", "    return a + b;", "}", ""].join("\n");
    expect(fitDocument(c, { query: "add", name: "a.c" }).text).toBe("static int add(int a, int b)\n{\n    return a + b;\n}\n");
    expect(fitDocument(c, { query: "MAX", name: "a.c" }).text).toBe("#define MAX 10\n\n");
  });

  it("FIT-4 a section is a path of a diff, or <path>#<n> for its n-th hunk with the file's header", () => {
    const file = fitDiff(DIFF, { query: "src/app.ts" }).text;
    expect(file.startsWith("diff --git a/src/app.ts")).toBe(true);
    expect(file).toContain("+  log('started');");
    expect(file).not.toContain("README");
    const hunk = fitDiff(DIFF, { query: "src/app.ts#2" });
    expect(hunk.text).toBe(
      ["diff --git a/src/app.ts b/src/app.ts", "index 1111111..2222222 100644", "--- a/src/app.ts", "+++ b/src/app.ts", "@@ -20,3 +20,4 @@ export function start()", "   start();", "+  log('started');", " }", ""].join("\n"),
    );
    expect(note(hunk).omitted).toMatch(/^This is hunk 2 of 'src\/app\.ts'/);
    expect(fitDiff(DIFF, { query: "app.ts#1" }).text).toContain("+const port = 9090;");
  });

  it("FIT-4 a section is a line range such as 120-180, whole lines", () => {
    const f = fitDocument(BIG, { query: "5-7" });
    expect(f.text).toBe(BIG.split("\n").slice(4, 7).join("\n") + "\n");
    expect(note(f).omitted).toMatch(/^This is lines 5-7;/);
  });

  it("FIT-4 an unknown query says so in the omitted sentence and falls to the summary, never making text up", () => {
    const f = fitDocument(BIG, { query: "Nothing like this" });
    const n = note(f);
    expect(n.view).toBe("summary");
    expect(n.omitted).toMatch(/^Nothing in the document matches 'Nothing like this'/);
    expect(f.truncated).toBe(false);
    expect(f.text).toBe(fitDocument(BIG, { view: "summary" }).text);
  });

  it("FIT-4 view section with no query falls to the summary and says a query is needed", () => {
    const f = fitDocument(BIG, { view: "section" });
    expect(note(f).view).toBe("summary");
    expect(note(f).omitted).toMatch(/^View section needs a query naming the part/);
  });

  it("FIT-5 with no view the answer is the biggest view that fits: full, then summary, then stub", () => {
    const full = fitDocument(BIG);
    expect(note(full).view).toBe("full");
    expect(full.text).toBe(BIG);
    const summaryTokens = note(fitDocument(BIG, { view: "summary" })).tokens;
    expect(note(fitDocument(BIG, { budget: summaryTokens })).view).toBe("summary");
    expect(note(fitDocument(BIG, { budget: summaryTokens - 1 })).view).toBe("stub");
    expect(note(fitDocument(BIG, { budget: weigh(BIG) })).view).toBe("full");
  });

  it("FIT-5 with no view and a query, the section comes first", () => {
    const f = fitDocument(BIG, { query: "Part 4", budget: 2000 });
    expect(note(f).view).toBe("section");
    expect(f.text.startsWith("## Part 4\n")).toBe(true);
  });

  it("FIT-6 a view asked for that does not fit falls to the next smaller view, never a bigger one", () => {
    const summaryTokens = note(fitDocument(BIG, { view: "summary" })).tokens;
    const f = fitDocument(BIG, { view: "full", budget: summaryTokens + 5 });
    expect(note(f).view).toBe("summary");
    expect(note(fitDocument(BIG, { view: "summary", budget: summaryTokens - 1 })).view).toBe("stub");
    // A stub asked for stays a stub even when the full text would fit.
    expect(note(fitDocument(BIG, { view: "stub", budget: 100_000 })).view).toBe("stub");
    expect(note(fitDocument(BIG, { view: "summary", budget: 100_000 })).view).toBe("summary");
  });

  it("FIT-6 a section that does not fit falls to its own summary, which names a line range that fits", () => {
    const f = fitDocument(BIG, { query: "Part 2", budget: 200 });
    const n = note(f);
    expect(n.view).toBe("summary");
    expect(n.omitted).toMatch(/^The section matching 'Part 2' \(\d+ tokens, \d+ characters\) does not fit the budget of 200 tokens/);
    expect(n.omitted).toMatch(/lines \d+-\d+ would fit\.$/);
    expect(f.text).toContain("## Part 2 (lines");
    expect(f.text).not.toContain("## Part 3");
    const range = /lines (\d+)-(\d+) would fit/.exec(n.omitted)!;
    expect(note(fitDocument(BIG, { query: `${range[1]}-${range[2]}`, budget: 200 })).view).toBe("section");
  });

  it("FIT-7 the stub is the floor: when nothing else fits it still says how big the whole is and how to ask for more", () => {
    const summaryTokens = note(fitDocument(BIG, { view: "summary" })).tokens;
    for (const budget of [40, 100, summaryTokens - 1]) {
      const f = fitDocument(BIG, { budget });
      expect(note(f).view).toBe("stub");
      expect(f.text).toContain(`${weigh(BIG)} tokens`);
      expect(f.text).toMatch(/ask for|call again/i);
      expect(weigh(f.text)).toBeLessThanOrEqual(budget);
    }
  });

  it("FIT-7 a stub too big for the bounds lists fewer parts and says how many it left out", () => {
    const many = page(300, 1);
    const f = fitDocument(many, { budget: 400 });
    expect(note(f).view).toBe("stub");
    expect(weigh(f.text)).toBeLessThanOrEqual(400);
    expect(f.text).toMatch(/^\(\d+ more parts are not listed\.\)$/m);
    // It lists as many entries as fit, not just the single top heading.
    expect(f.text.split("\n").filter((l) => l.startsWith("## Part")).length).toBeGreaterThan(5);
    expect(note(f).omitted).toMatch(/the outline lists \d+ of 301 parts/);
  });

  it("FIT-7 when not even the outline fits, the stub leaves it out and says so", () => {
    const f = fitDocument(page(300, 1), { budget: 30 });
    expect(note(f).view).toBe("stub");
    expect(weigh(f.text)).toBeLessThanOrEqual(30);
    expect(f.text).toMatch(/tokens, \d+ lines; ask for a section, a line range or a bigger budget\.$/);
    expect(note(f).omitted).toMatch(/the outline of 301 parts was left out\.$/);
  });
});

describe("the bounds", () => {
  const huge = page(60, 300); // about 170,000 tokens and 700,000 characters

  it("FIT-9 an answer holds at most 50,000 tokens and 200,000 characters, whatever the budget and with none", () => {
    for (const opts of [{ view: "full" }, { budget: 1_000_000 }, { query: "1-9000" }]) {
      const f = fitDocument(huge, opts);
      expect(weigh(f.text)).toBeLessThanOrEqual(CAP);
      expect(f.text.length).toBeLessThanOrEqual(CAP_CHARS);
      expect(f.truncated).toBe(true);
    }
    expect(CAP).toBe(50_000);
    expect(CAP_CHARS).toBe(200_000);
  });

  it("FIT-9 a budget allows at most 8 characters per token, and a tool may pass its own character bound", () => {
    expect(charsOf(1000)).toBe(8000);
    expect(charsOf(30_000)).toBe(CAP_CHARS);
    const spaced = "x".repeat(7000) + "\n" + "word ".repeat(200);
    const f = fitDocument(spaced, { budget: 900 });
    expect(f.text.length).toBeLessThanOrEqual(7200);
    expect(note(f).reason).toBe("budget");
    const own = fitDocument(BIG, { chars: 2000 });
    expect(own.text.length).toBeLessThanOrEqual(2000);
    expect(note(own).reason).toBe("chars");
  });

  it("FIT-12 when a bound forces a smaller view the note names it (budget, chars, cap, cap_chars) and truncated is set", () => {
    const byBudget = fitDocument(BIG, { budget: 500 });
    expect([byBudget.truncated, note(byBudget).reason]).toEqual([true, "budget"]);
    const byChars = fitDocument(BIG, { chars: 3000 });
    expect([byChars.truncated, note(byChars).reason]).toEqual([true, "chars"]);
    const byCap = fitDocument(huge, { view: "full" });
    expect([byCap.truncated, note(byCap).reason]).toEqual([true, "cap"]);
    expect(note(byCap).omitted).toMatch(/does not fit the cap of 50000 tokens/);
    // Few tokens, many characters: the character cap is the reason.
    const wide = " information".repeat(17_500);
    const byCapChars = fitDocument(wide, { view: "full" });
    expect(weigh(wide)).toBeLessThan(CAP);
    expect([byCapChars.truncated, note(byCapChars).reason]).toEqual([true, "cap_chars"]);
    // Nothing forced: no reason, not truncated.
    const asked = fitDocument(BIG, { view: "summary" });
    expect([asked.truncated, note(asked).reason]).toEqual([false, undefined]);
  });

  it("FIT-10 views are measured by weigh, so a page of spaces does not pass for a few tokens", () => {
    const padded = "# Title\n\nSome text.\n" + " ".repeat(8000) + "\nEnd.\n";
    const f = fitDocument(padded, { budget: 500 });
    expect(note(f).view).not.toBe("full");
    expect(note(f).size).toBe(weigh(padded));
    expect(note(f).size).toBeGreaterThan(2000);
  });
});

describe("natural parts of each kind", () => {
  it("FIT-18 fitDocument cuts Markdown by headings, not inside fenced code", () => {
    const md = ["# Title", "", "```sh", "# not a heading", "```", "", "## Real", "text", ""].join("\n");
    const stub = fitDocument(md, { view: "stub" }).text;
    expect(stub).toContain("# Title (lines 1-8");
    expect(stub).toContain("## Real (lines 7-8");
    expect(stub).not.toContain("not a heading (lines");
  });

  it("FIT-18 fitDiff cuts a diff by file and hunk", () => {
    const summary = fitDiff(DIFF, { view: "summary" }).text;
    expect(summary).toMatch(/^src\/app\.ts \(\+2 -1, 2 hunks\) \(lines 1-13\)$/m);
    expect(summary).toMatch(/^ {2}@@ -1,4 \+1,4 @@ import \(lines 5-9\): -const port = 8080;$/m);
    expect(summary).toMatch(/^README\.md \(\+1 -1, 1 hunk\) \(lines 14-20\)$/m);
  });

  it("FIT-18 fit cuts a JSON object by top-level keys and an array by [n] items", () => {
    const obj = { name: "widget", tags: ["a", "b"], config: { depth: 3, modes: ["x", "y"] } };
    // The last key's part ends with the closing brace of the object.
    expect(fit(obj, { query: "config" }).text).toBe('  "config": {\n    "depth": 3,\n    "modes": [\n      "x",\n      "y"\n    ]\n  }\n}');
    const arr = [{ id: 1 }, { id: 2 }, { id: 3 }];
    expect(fit(arr, { query: "[1]" }).text).toBe('  {\n    "id": 2\n  },\n');
    const stub = fit(obj, { view: "stub" }).text;
    expect(stub).toContain('"name" (lines 1-2');
    expect(stub).toContain('"config" (lines 7-14');
  });

  it("FIT-18 fit reads a JSON string as JSON, a string that looks like a unified diff as a diff, and other strings as documents", () => {
    expect(fit(JSON.stringify({ a: 1, b: [1, 2] }), { view: "stub" }).text).toContain("json,");
    expect(fit(DIFF, { view: "stub" }).text).toContain("diff,");
    expect(fit(BIG, { view: "stub" }).text).toContain("markdown,");
    expect(fit(CODE, { view: "stub", name: "w.ts" }).text).toContain("code,");
    expect(fit("just some words\nand more words\n", { view: "stub" }).text).toContain("text,");
  });
});
