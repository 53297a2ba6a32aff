// The token estimate and the fitting library, measured in one run:
//   1. per class of real text: mean absolute error of count against cl100k, and how much
//      faster count is than exact cl100k encoding timed cold (merge cache cleared before
//      every piece, as for text never seen before);
//   2. fitting a 1 MiB document to each view, against one count over all of it.
// Prints Markdown tables and writes them to bench/out/fit.md.
//
//   npx tsx bench/fit/estimate.ts           (the checked-in sample, the held-out corpus pieces
//                                            when bench/fit/corpus.ts has built it, and the
//                                            second held-out set when `corpus.ts --unseen` has)
//   npx tsx bench/fit/estimate.ts --fit-only (only the second table, printed)
//   npx tsx bench/fit/estimate.ts --no-fit   (only the first tables, printed)
//   npx tsx bench/fit/estimate.ts --floor    (only where one pass's time goes, printed)
import { Buffer } from "node:buffer";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { clearMergeCache, encode } from "gpt-tokenizer/encoding/cl100k_base";
import { count, fit, fitDiff, fitDocument } from "../../processors/fit/index.ts";
import type { FitOptions, Fitted } from "../../processors/fit/types.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const FIXTURES = join(ROOT, "test", "fixtures", "tokens");
const CORPUS = join(ROOT, "bench", "out", "fit-corpus.json");
const UNSEEN = join(ROOT, "bench", "out", "fit-unseen.json");
const OUT = join(ROOT, "bench", "out", "fit.md");
const NO_SPECIAL = { disallowedSpecial: new Set<string>() };

type Piece = { cls: string; text: string };

function fixtures(): Piece[] {
  const manifest = JSON.parse(readFileSync(join(FIXTURES, "manifest.json"), "utf8")) as { file: string; class: string }[];
  return manifest.map((m) => ({ cls: m.class, text: readFileSync(join(FIXTURES, m.file), "utf8") }));
}

async function heldOutCorpus(): Promise<Piece[]> {
  if (!existsSync(CORPUS)) return [];
  const { heldOut, loadCorpus } = await import("./corpus.ts");
  return loadCorpus().filter(heldOut);
}

/** Milliseconds of CPU this process spent in f: robust to other processes sharing the machine. */
async function unseenCorpus(): Promise<Piece[]> {
  if (!existsSync(UNSEEN)) return [];
  const { loadUnseen } = await import("./corpus.ts");
  return loadUnseen();
}

function cpu(f: () => unknown): number {
  const start = process.cpuUsage();
  f();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

type ClassRow = {
  cls: string;
  n: number;
  chars: number;
  mare: number;
  bias: number;
  countMs: number;
  loopMs: number;
  encodeMs: number;
  /** count's CPU time over the bare loop's. */
  overLoop: number;
  speedup: number;
};

/** The floor of any one-pass estimate: a loop that reads every UTF-16 code unit and sums them
 * (the sum is returned, so the reads cannot be optimised away). */
function bareLoop(text: string): number {
  let sum = 0;
  for (let i = 0; i < text.length; i++) sum = (sum + text.charCodeAt(i)) | 0;
  return sum;
}
let sink = 0;

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function accuracyAndSpeed(pieces: Piece[]): ClassRow[] {
  // Warm up both over every piece, three times, so that neither pays for compiling (V8
  // optimises, meets new kinds of strings, and optimises again).
  for (let round = 0; round < 3; round++) {
    for (const p of pieces) {
      count(p.text);
      sink ^= bareLoop(p.text);
      encode(p.text, NO_SPECIAL);
    }
  }
  const byClass = new Map<string, Piece[]>();
  for (const p of pieces) byClass.set(p.cls, [...(byClass.get(p.cls) ?? []), p]);
  const out: ClassRow[] = [];
  for (const [cls, list] of [...byClass].sort((a, b) => a[0].localeCompare(b[0]))) {
    let mare = 0;
    let bias = 0;
    let chars = 0;
    for (const p of list) {
      const truth = encode(p.text, NO_SPECIAL).length;
      const e = (count(p.text) - truth) / truth;
      mare += Math.abs(e);
      bias += e;
      chars += p.text.length;
    }
    // CPU time of the whole class in one batch (count and the bare loop repeated to last long
    // enough to measure), count, the bare loop and cl100k one right after the other, five
    // times: each ratio is the median of the five, so that a busy moment hits both sides.
    const repeat = Math.max(1, Math.ceil(2_000_000 / chars));
    const ratios: number[] = [];
    const loopRatios: number[] = [];
    const counts: number[] = [];
    const loops: number[] = [];
    const encodes: number[] = [];
    for (let k = 0; k < 5; k++) {
      const c =
        cpu(() => {
          for (let r = 0; r < repeat; r++) for (const p of list) count(p.text);
        }) / repeat;
      const l =
        cpu(() => {
          for (let r = 0; r < repeat; r++) for (const p of list) sink ^= bareLoop(p.text);
        }) / repeat;
      const e = cpu(() => {
        for (const p of list) {
          clearMergeCache();
          encode(p.text, NO_SPECIAL);
        }
      });
      counts.push(c);
      loops.push(l);
      encodes.push(e);
      ratios.push(e / c);
      loopRatios.push(c / l);
    }
    const countMs = median(counts);
    const loopMs = median(loops);
    const encodeMs = median(encodes);
    const speedup = median(ratios);
    const overLoop = median(loopRatios);
    out.push({ cls, n: list.length, chars, mare: mare / list.length, bias: bias / list.length, countMs, loopMs, encodeMs, overLoop, speedup });
  }
  clearMergeCache();
  const all = out.reduce(
    (a, r) => ({
      ...a,
      n: a.n + r.n,
      chars: a.chars + r.chars,
      mare: a.mare + r.mare * r.n,
      bias: a.bias + r.bias * r.n,
      countMs: a.countMs + r.countMs,
      loopMs: a.loopMs + r.loopMs,
      encodeMs: a.encodeMs + r.encodeMs,
    }),
    { cls: "all", n: 0, chars: 0, mare: 0, bias: 0, countMs: 0, loopMs: 0, encodeMs: 0, overLoop: 0, speedup: 0 },
  );
  out.push({ ...all, mare: all.mare / all.n, bias: all.bias / all.n, overLoop: all.countMs / all.loopMs, speedup: all.encodeMs / all.countMs });
  if (sink === 0.5) console.log(sink); // keeps the loops' sums alive
  return out;
}

function accuracyTable(title: string, rows: ClassRow[]): string {
  const lines = [
    `### ${title}`,
    "",
    "| class | pieces | KB | mean abs error | bias | count ms | bare loop ms | count / loop | cl100k cold ms | speed-up |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const r of rows) {
    const name = r.cls === "all" ? "**all**" : r.cls;
    lines.push(
      `| ${name} | ${r.n} | ${(r.chars / 1024).toFixed(0)} | ${(100 * r.mare).toFixed(2)}% | ${(100 * r.bias).toFixed(2)}% | ${r.countMs.toFixed(2)} | ${r.loopMs.toFixed(2)} | ${r.overLoop.toFixed(2)}x | ${r.encodeMs.toFixed(1)} | ${r.speedup.toFixed(1)}x |`,
    );
  }
  return lines.join("\n");
}

/** Documents of about 1 MiB of each kind, made of the pieces (repeated as needed). */
function bigDocuments(pieces: Piece[]): { kind: string; value: unknown; text: string; query: string; fitter: (o: FitOptions) => Fitted }[] {
  const MiB = 1 << 20;
  const grow = (classes: string[]): string => {
    const parts = pieces.filter((p) => classes.includes(p.cls)).map((p) => p.text);
    let s = "";
    for (let i = 0; s.length < MiB; i++) s += parts[i % parts.length]! + "\n";
    return s.slice(0, s.lastIndexOf("\n", MiB) + 1);
  };
  const md = grow(["markdown", "changelog"]);
  const code = grow(["ts", "js", "python", "go"]);
  const diff = grow(["diff"]);
  const text = grow(["license", "log"]);
  const items: unknown[] = [];
  for (let i = 0; JSON.stringify(items, null, 2).length < MiB - 4096 && i < 100_000; i++) {
    items.push({ id: i, name: `item ${i}`, tags: ["a", "b", String(i % 7)], note: pieces[i % pieces.length]!.text.slice(0, 400) });
  }
  const json = JSON.stringify(items, null, 2);
  const heading = /^#{1,3} (.+)$/m.exec(md)?.[1] ?? "1-200";
  const def = /^(?:export )?(?:async )?function (\w+)/m.exec(code)?.[1] ?? "1-200";
  const path = /^\+\+\+ (\S+)/m.exec(diff)?.[1] ?? "1-200";
  return [
    { kind: "markdown", value: md, text: md, query: heading, fitter: (o) => fitDocument(md, o) },
    { kind: "code", value: code, text: code, query: def, fitter: (o) => fitDocument(code, { ...o, name: "big.ts" }) },
    { kind: "diff", value: diff, text: diff, query: path, fitter: (o) => fitDiff(diff, o) },
    { kind: "text", value: text, text: text, query: "100-400", fitter: (o) => fitDocument(text, o) },
    { kind: "json (parsed)", value: items, text: json, query: "[500]", fitter: (o) => fit(items, o) },
  ];
}

/**
 * Where the time of one pass over the text goes, on the given pieces: steps from reading the
 * characters to count, each over the bare loop over the same texts, measured one right after
 * the other; the median of 9 rounds. The texts made from the pieces keep their kinds of pieces
 * and take away, one at a time, what the processor cannot predict.
 */
function floorTable(pieces: Piece[]): string {
  const flat = (s: string): string => JSON.parse(JSON.stringify(s)) as string; // one flat string, as read from a file
  const texts = pieces.map((p) => p.text);
  const codes = new Uint16Array(Math.max(...texts.map((t) => t.length)) + 2);
  const bytes = Buffer.from(codes.buffer);
  const copySum = (t: string): number => {
    bytes.write(t, 0, 2 * t.length, "utf16le");
    let sum = 0;
    for (let i = 0; i < t.length; i++) sum = (sum + codes[i]!) | 0;
    return sum;
  };
  const hashAll = (t: string): number => {
    bytes.write(t, 0, 2 * t.length, "utf16le");
    let h = 0x811c9dc5 | 0;
    for (let i = 0; i < t.length; i++) h = Math.imul(h ^ codes[i]!, 0x01000193);
    return h;
  };
  const each = (f: (t: string) => string): string[] => texts.map((t) => flat(f(t)));
  const steps: [string, string[], (t: string) => number][] = [
    ["copying the text into a typed array and summing it there", texts, copySum],
    ["that, hashing every character (FNV-1a) instead of summing", texts, hashAll],
    ["count of one word repeated (every branch predicted)", each((t) => " hello".repeat(Math.ceil(t.length / 6))), count],
    ["count of the text's words alone, a space before each (every piece a word)", each((t) => (t.match(/[A-Za-z]+/g) ?? []).map((w) => " " + w).join("")), count],
    ["count of the text with every word made \"hello\" (its kinds of pieces, one word)", each((t) => t.replace(/[A-Za-z]+/g, "hello")), count],
    ["count of the text", texts, count],
  ];
  for (let round = 0; round < 3; round++) for (const [, ts, f] of steps) for (const t of ts) sink ^= f(t) ^ bareLoop(t);
  const lines = ["| step | KB | over the bare loop |", "| --- | ---: | ---: |"];
  for (const [name, ts, f] of steps) {
    const ratios: number[] = [];
    for (let k = 0; k < 9; k++) {
      const l = cpu(() => {
        for (const t of ts) sink ^= bareLoop(t);
      });
      const c = cpu(() => {
        for (const t of ts) sink ^= f(t);
      });
      ratios.push(c / l);
    }
    lines.push(`| ${name} | ${(ts.reduce((n, t) => n + t.length, 0) / 1024).toFixed(0)} | ${median(ratios).toFixed(2)}x |`);
  }
  return lines.join("\n");
}

function fittingTable(pieces: Piece[]): string {
  const views: [string, (q: string) => FitOptions][] = [
    ["full", () => ({ view: "full" })],
    ["section", (q) => ({ view: "section", query: q })],
    ["summary", () => ({ view: "summary" })],
    ["stub", () => ({ view: "stub" })],
    ["no view", () => ({})],
    ["budget 2000", () => ({ budget: 2000 })],
  ];
  const lines = [
    "| document | KB | count ms | " + views.map(([v]) => v).join(" | ") + " |",
    "| --- | ---: | ---: | " + views.map(() => "---:").join(" | ") + " |",
  ];
  for (const d of bigDocuments(pieces)) {
    // Each round measures count and then every fit, one right after the other; a fit's
    // ratio is the median of its rounds' ratios, so that a busy moment hits both sides.
    const ratios: number[][] = views.map(() => []);
    const counts: number[] = [];
    for (let round = 0; round < 9; round++) {
      const c = cpu(() => count(d.text));
      counts.push(c);
      views.forEach(([, o], i) => ratios[i]!.push(cpu(() => d.fitter(o(d.query))) / c));
    }
    const countMs = median(counts);
    const times = ratios.map((r) => median(r) * countMs);
    const got = views.map(([, o]) => d.fitter(o(d.query)).meta().view);
    lines.push(
      `| ${d.kind} | ${(d.text.length / 1024).toFixed(0)} | ${countMs.toFixed(1)} | ` +
        times.map((t, i) => `${(t / countMs).toFixed(2)}x (${got[i]})`).join(" | ") +
        " |",
    );
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  const sample = fixtures();
  const corpus = await heldOutCorpus();
  const unseen = await unseenCorpus();
  if (process.argv.includes("--floor")) {
    const ascii = (corpus.length > 0 ? corpus : sample).filter((p) => p.cls !== "cjk" && p.cls !== "intl");
    console.log(`Where one pass's time goes: ${ascii.length} held-out pieces of the ASCII classes, Node ${process.version}\n\n${floorTable(ascii)}`);
    return;
  }
  if (process.argv.includes("--fit-only")) {
    console.log(fittingTable(corpus.length > 0 ? corpus : sample));
    return;
  }
  const sections: string[] = [
    "## Token estimate (count) against cl100k",
    "",
    `Node ${process.version}. Mean absolute relative error per piece; bias is the mean signed error (positive: count says more). ` +
      "count / loop: CPU time of count over that of a bare loop that sums every character code of the same text (the floor of one pass). " +
      "Speed-up: CPU time of cl100k encode timed cold (merge cache cleared before each piece) over CPU time of count. " +
      "Each over the whole class, measured one after the other five times; the median of the five ratios (for all: total over total of the medians).",
    "",
    accuracyTable(`Checked-in sample (test/fixtures/tokens, ${sample.length} pieces)`, accuracyAndSpeed(sample)),
  ];
  if (corpus.length > 0) sections.push("", accuracyTable(`Held-out corpus pieces (bench/out/fit-corpus.json, ${corpus.length} pieces)`, accuracyAndSpeed(corpus)));
  if (unseen.length > 0) sections.push("", accuracyTable(`Second held-out set, files and kinds the corpus has not got (bench/out/fit-unseen.json, ${unseen.length} pieces)`, accuracyAndSpeed(unseen)));
  if (process.argv.includes("--no-fit")) {
    console.log(sections.join("\n"));
    return;
  }
  sections.push(
    "",
    "## Fitting a 1 MiB document, against one count over all of it",
    "",
    "CPU time of each fit (splitting, sizing every part, building the answer) divided by the CPU time of a count over the same text measured just before it; the median of 9 rounds; the view returned in brackets.",
    "",
    fittingTable(corpus.length > 0 ? corpus : sample),
  );
  const report = sections.join("\n") + "\n";
  console.log(report);
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, report);
  console.log(`written to ${OUT}`);
}

await main();
