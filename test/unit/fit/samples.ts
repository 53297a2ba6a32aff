// Shared inputs of the fit tests: the checked-in sample of real text (test/fixtures/tokens)
// and small documents made up for the views.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "fixtures", "tokens");

export type Sample = { readonly file: string; readonly class: string; readonly source: string; readonly text: string };

/** The pieces of real text named in test/fixtures/tokens/manifest.json. */
export function samples(): Sample[] {
  const manifest = JSON.parse(readFileSync(join(FIXTURES, "manifest.json"), "utf8")) as { file: string; class: string; source: string }[];
  return manifest.map((m) => ({ ...m, text: readFileSync(join(FIXTURES, m.file), "utf8") }));
}

/** A Markdown page of `sections` sections, each with a paragraph of `lines` lines. */
export function page(sections: number, lines: number): string {
  const out = ["# Acme widget", "", "The widget turns input into output. It is small.", ""];
  for (let s = 0; s < sections; s++) {
    out.push(`## Part ${s}`, "", `Part ${s} begins here. It goes on for a while.`);
    for (let l = 0; l < lines; l++) out.push(`Line ${l} of part ${s} says something about item ${l * 7 + s} and the widget.`);
    out.push("");
  }
  return out.join("\n");
}

/** A small unified diff over two files, three hunks in all. */
export const DIFF = [
  "diff --git a/src/app.ts b/src/app.ts",
  "index 1111111..2222222 100644",
  "--- a/src/app.ts",
  "+++ b/src/app.ts",
  "@@ -1,4 +1,4 @@ import",
  " import { run } from './run';",
  "-const port = 8080;",
  "+const port = 9090;",
  " run(port);",
  "@@ -20,3 +20,4 @@ export function start()",
  "   start();",
  "+  log('started');",
  " }",
  "diff --git a/README.md b/README.md",
  "--- a/README.md",
  "+++ b/README.md",
  "@@ -1,2 +1,2 @@",
  "-# Old title",
  "+# New title",
  " Some text.",
  "",
].join("\n");

/** A TypeScript file with a class (two methods) and two functions, one documented. */
export const CODE = [
  "import { x } from './x.ts';",
  "",
  "/** Adds two numbers. Returns their sum. */",
  "export function add(a: number, b: number): number {",
  "  return a + b;",
  "}",
  "",
  "export class Widget {",
  "  constructor(private name: string) {",
  "    this.name = name;",
  "  }",
  "",
  "  render(): string {",
  "    return `<${this.name}>`;",
  "  }",
  "}",
  "",
  "function helper(): void {",
  "  add(1, 2);",
  "}",
  "",
].join("\n");
