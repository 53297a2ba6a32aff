// Fits the tables of the token estimate (processors/fit/count-tables.ts) to cl100k on the
// calibration corpus, learning only from pieces outside the held-out set.
//
//   npx tsx bench/fit/corpus.ts && npx tsx bench/fit/calibrate.ts [--known N]
//
// What it learns, all in thousandths of a token:
//   singles     the pieces cl100k holds as one token (count-vocab.ts): the tokens of its
//               vocabulary that the pre-tokenizer keeps whole, words and runs of marks. Known
//               at one token, they leave the rules below to price pieces of two or more
//   known       the other pieces (as the pre-tokenizer cuts them) worth pricing exactly: seen
//               in at least MIN_SOURCES corpus pieces and mispriced by the rules below (ranked
//               by miss times spread); grouped by token count
//   wordPair    for each pair of ASCII letters (a-z, A-Z), how often cl100k cuts between them
//   wordPrefix  how often the character before a word is a token of its own
//   wordLength  what the pair rule misses on average, by word length
//   scriptLetter, scriptSwitch, foreignWord   non-ASCII letters, by least squares
//   punctPair, punctNewline, symbol, symbolSwitch   the same for punctuation runs
//   spaceJoin   what a white-space piece of several runs saves over its runs apart
//   lineLetters what a line that holds Latin, Greek or Cyrillic letters beyond ASCII still
//               misses, by least squares over the lines, for each time each of those letters
//               occurs in it (the letters tell the language)
//   hanTraditional  the Han characters of the training pieces of TypeScript's traditional Chinese
//               messages that its simplified Chinese ones never use, and what each costs more
//               (least squares over the training CJK pieces)
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { decode, encode } from "gpt-tokenizer/encoding/cl100k_base";
import { CHUNK_DIGITS, CHUNK_PUNCT, CHUNK_SPACE, CHUNK_WORD, CJK_RANGES, createScan, scan, scriptOf, SCRIPTS, symbolOf, SYMBOLS, type Tables as CountTables } from "../../processors/fit/count.ts";
import { heldOut, loadCorpus, type Piece } from "./corpus.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const TABLES_PATH = join(ROOT, "processors", "fit", "count-tables.ts");
const VOCABULARY_PATH = join(ROOT, "processors", "fit", "count-vocab.ts");
const KNOWN_MAX = Number(process.argv[process.argv.indexOf("--known") + 1] ?? 0) || 6000;
const MIN_SOURCES = 3;
const MIN_MISS = Number(process.env.MIN_MISS ?? 50);

const NO_SPECIAL = { disallowedSpecial: new Set<string>() };
const tokenCache = new Map<string, number[]>();
/** Lengths (in UTF-16 units, ASCII pieces only meaningful) of cl100k's tokens of a piece. */
function tokens(piece: string): number[] {
  let v = tokenCache.get(piece);
  if (v === undefined) {
    v = encode(piece, NO_SPECIAL).map((t) => decode([t]).length);
    tokenCache.set(piece, v);
  }
  return v;
}
const truth = (piece: string): number => tokens(piece).length;

/** How often a piece occurs, and in how many corpus pieces (its spread). */
type Stat = { kind: number; n: number; sources: Set<string> };

function collect(pieces: Piece[]): Map<string, Stat> {
  const stats = new Map<string, Stat>();
  for (const p of pieces) {
    scan(p.text, 0, p.text.length, false, (kind, s, e) => {
      const piece = p.text.slice(s, e);
      let st = stats.get(piece);
      if (st === undefined) {
        st = { kind, n: 0, sources: new Set() };
        stats.set(piece, st);
      }
      st.n++;
      st.sources.add(`${p.src}@${p.at}`);
    });
  }
  return stats;
}

// --- Feature extraction mirroring count.ts (kept simple; the evaluation uses count.ts itself).
const isAsciiLetter = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
const letterIndex = (c: number): number => (c >= 97 ? c - 97 : c - 39);
const PUNCTS: number[] = [];
for (let c = 33; c < 127; c++) if (!isAsciiLetter(c) && !(c >= 48 && c <= 57)) PUNCTS.push(c);
const punctIndex = (c: number): number => {
  const i = PUNCTS.indexOf(c);
  return i < 0 ? 32 : i;
};
const prefixIndex = (c: number): number => (c === 32 ? 33 : c === 9 || c === 11 || c === 12 || /\s/u.test(String.fromCharCode(c)) ? 34 : c < 128 ? punctIndex(c) : 35);
const isAscii = (s: string): boolean => {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 127) return false;
  return true;
};
/** Token cut positions of an ASCII piece. */
function cuts(piece: string): Set<number> {
  const out = new Set<number>();
  let at = 0;
  for (const len of tokens(piece)) {
    at += len;
    out.add(at);
  }
  return out;
}
/** Least squares with a little ridge toward `prior`. */
function solve(rows: number[][], ys: number[], prior: number[], ridge: number): number[] {
  const k = prior.length;
  const a = Array.from({ length: k }, (_, i) => Array.from({ length: k + 1 }, (_, j) => (j === i ? ridge : 0)));
  for (let i = 0; i < k; i++) a[i]![k] = ridge * prior[i]!;
  rows.forEach((x, r) => {
    for (let i = 0; i < k; i++) {
      if (x[i] === 0) continue;
      for (let j = 0; j < k; j++) a[i]![j]! += x[i]! * x[j]!;
      a[i]![k]! += x[i]! * ys[r]!;
    }
  });
  for (let c = 0; c < k; c++) {
    let p = c;
    for (let r = c + 1; r < k; r++) if (Math.abs(a[r]![c]!) > Math.abs(a[p]![c]!)) p = r;
    [a[c], a[p]] = [a[p]!, a[c]!];
    for (let r = 0; r < k; r++) {
      if (r === c || a[c]![c] === 0) continue;
      const f = a[r]![c]! / a[c]![c]!;
      for (let j = c; j <= k; j++) a[r]![j]! -= f * a[c]![j]!;
    }
  }
  return a.map((row, i) => (row[i] === 0 ? prior[i]! : row[k]! / row[i]!));
}

/** Kana, Han and Hangul: which characters are one token, and per block of 64 what the others take. */
function cjkTables(): { singles: string; blocks: string; cost: Map<number, number> } {
  let singles = "";
  let blocks = "";
  const cost = new Map<number, number>();
  for (const [lo, hi] of CJK_RANGES) {
    for (let b = lo; b < hi; b += 64) {
      const seen = [0, 0, 0, 0];
      for (let c = b; c < b + 64; c++) {
        const n = Math.min(3, truth(String.fromCharCode(c)));
        if (n === 1) singles += String.fromCharCode(c);
        else seen[n]!++;
      }
      blocks += seen[3]! > seen[2]! ? "3" : "2";
    }
  }
  let b = 0;
  for (const [lo, hi] of CJK_RANGES) for (let c = lo; c < hi; c += 64, b++) for (let d = c; d < c + 64; d++) cost.set(d, Number(blocks[b]));
  for (const ch of singles) cost.set(ch.charCodeAt(0), 1);
  return { singles, blocks, cost };
}
const CJK = cjkTables();

type Tables = {
  known: string[][];
  singles?: string[];
  foreignLength: number[];
  lineLetters?: string;
  lineLetterUnits?: number[];
  hanTraditional?: string;
  hanTraditionalUnits?: number;
  cjkSingles: string;
  cjkBlocks: string;
  wordPair: number[];
  wordPrefix: number[];
  wordLength: number[];
  scriptLetter: number[];
  punctPair: number[];
  symbol: number[];
  constants: Record<string, number>;
};

function fitRules(stats: Map<string, Stat>, known: Set<string>): Tables {
  const pairN = new Float64Array(52 * 52), pairCut = new Float64Array(52 * 52);
  const preN = new Float64Array(72), preCut = new Float64Array(72);
  const ppN = new Float64Array(34 * 34), ppCut = new Float64Array(34 * 34);
  let nlN = 0, nlCut = 0, joinN = 0, joinSave = 0;
  let allPairN = 0, allPairCut = 0;
  const words: [string, number][] = [];
  const foreign: [string, number][] = [];
  const symbolic: [string, number][] = [];
  for (const [piece, st] of stats) {
    if (known.has(piece)) continue;
    const w = st.n;
    if (st.kind === CHUNK_WORD) {
      if (!isAscii(piece)) {
        foreign.push([piece, w]);
        continue;
      }
      words.push([piece, w]);
      const body = isAsciiLetter(piece.charCodeAt(0)) ? 0 : 1;
      const at = cuts(piece);
      if (body === 1) {
        const k = prefixIndex(piece.charCodeAt(0)) * 2 + (piece.charCodeAt(1) <= 90 ? 1 : 0);
        preN[k]! += w;
        if (at.has(1)) preCut[k]! += w;
      }
      for (let i = body + 1; i < piece.length; i++) {
        const k = letterIndex(piece.charCodeAt(i - 1)) * 52 + letterIndex(piece.charCodeAt(i));
        pairN[k]! += w;
        allPairN += w;
        if (at.has(i)) {
          pairCut[k]! += w;
          allPairCut += w;
        }
      }
    } else if (st.kind === CHUNK_PUNCT) {
      if (!isAscii(piece)) {
        symbolic.push([piece, w]);
        continue;
      }
      const at = cuts(piece);
      let i = 0;
      let prev = -1;
      if (piece.charCodeAt(0) === 32) {
        prev = 33;
        i = 1;
      }
      for (; i < piece.length && piece.charCodeAt(i) !== 10 && piece.charCodeAt(i) !== 13; i++) {
        const idx = punctIndex(piece.charCodeAt(i));
        if (prev >= 0) {
          ppN[prev * 34 + idx]! += w;
          if (at.has(i)) ppCut[prev * 34 + idx]! += w;
        }
        prev = idx;
      }
      if (i < piece.length) {
        nlN += w;
        nlCut += w * Math.max(0, truth(piece) - truth(piece.slice(0, i)));
      }
    } else if (st.kind === CHUNK_SPACE) {
      const runs = piece.replace(/(.)\1*/gs, "x").length;
      if (runs > 1) {
        let sum = 0;
        for (const m of piece.match(/(.)\1*/gs) ?? []) sum += truth(m);
        joinN += w * (runs - 1);
        joinSave += w * (sum - truth(piece));
      }
    }
  }
  const meanPair = allPairCut / allPairN;
  const rate = (cut: number, n: number, prior: number, alpha: number): number => Math.round((1000 * (cut + alpha * prior)) / (n + alpha));
  const wordPair = Array.from(pairN, (n, k) => rate(pairCut[k]!, n, meanPair, 4));
  const wordPrefix = Array.from(preN, (n, k) => rate(preCut[k]!, n, 0.5, 4));
  const punctPair = Array.from(ppN, (n, k) => rate(ppCut[k]!, n, 0.5, 4));

  // What the pair rule misses, by word length.
  const lenErr = new Float64Array(3 * 4 * 32), lenN = new Float64Array(3 * 4 * 32);
  for (const [piece, w] of words) {
    const body = isAsciiLetter(piece.charCodeAt(0)) ? 0 : 1;
    let est = 1000;
    if (body) est += wordPrefix[prefixIndex(piece.charCodeAt(0)) * 2 + (piece.charCodeAt(1) <= 90 ? 1 : 0)]!;
    for (let i = body + 1; i < piece.length; i++) est += wordPair[letterIndex(piece.charCodeAt(i - 1)) * 52 + letterIndex(piece.charCodeAt(i))]!;
    const letters = piece.slice(body);
    const len = Math.min(31, letters.length);
    const uppers = letters.replace(/[a-z]/g, "").length;
    const shape = uppers === 0 ? 0 : uppers === letters.length && letters.length > 1 ? 2 : uppers === 1 && /^[A-Z]/.test(letters) ? 1 : 3;
    const prefix = body === 0 ? 0 : piece[0] === " " ? 1 : 2;
    const k = (prefix * 4 + shape) * 32 + len;
    lenErr[k]! += w * (1000 * truth(piece) - est);
    lenN[k]! += w;
  }
  const wordLength = Array.from(lenN, (n, k) => (n > 0 ? Math.round(lenErr[k]! / (n + 5)) : 0));

  // Non-ASCII words: per-script letter cost (per token of a CJK character on its own) and a
  // cost for switching between ASCII and other letters, by least squares; then the mean miss
  // by script and length.
  const foreignRow = (piece: string): { x: number[]; est: number; script: number; letters: number } => {
    const x = new Array<number>(SCRIPTS.length + 1).fill(0);
    let est = 1000;
    const chars = [...piece];
    let start = 0;
    const first = chars[0]!.codePointAt(0)!;
    if (!/\p{L}/u.test(chars[0]!)) {
      start = 1;
      const second = chars[1]!.codePointAt(0)!;
      est += wordPrefix[prefixIndex(first < 0x10000 ? first : 0x2000) * 2 + (second >= 65 && second <= 90 ? 1 : 0)]!;
    }
    let prev = -1;
    let script = -1;
    for (let i = start; i < chars.length; i++) {
      const cp = chars[i]!.codePointAt(0)!;
      if (cp < 128) {
        const idx = letterIndex(cp);
        if (prev >= 0) est += wordPair[prev * 52 + idx]!;
        else if (prev === -2) x[SCRIPTS.length]!++;
        prev = idx;
      } else {
        const sc = scriptOf(cp);
        if (script < 0) script = sc;
        x[sc]! += CJK.cost.get(cp) ?? 1;
        if (prev >= 0) x[SCRIPTS.length]!++;
        prev = -2;
      }
    }
    return { x, est, script, letters: chars.length - start };
  };
  const rows: number[][] = [];
  const ys: number[] = [];
  for (const [piece, w] of foreign) {
    const { x, est } = foreignRow(piece);
    const sw = Math.sqrt(w);
    rows.push(x.map((v) => v * sw));
    ys.push((1000 * truth(piece) - est) * sw);
  }
  const foreignFit = solve(rows, ys, [...new Array<number>(SCRIPTS.length).fill(700), 300], 50);
  const flErr = new Float64Array(SCRIPTS.length * 16), flN = new Float64Array(SCRIPTS.length * 16);
  for (const [piece, w] of foreign) {
    const { x, est, script, letters } = foreignRow(piece);
    let e = est;
    x.forEach((v, i) => (e += v * foreignFit[i]!));
    const k = script * 16 + Math.min(15, letters);
    flErr[k]! += w * (1000 * truth(piece) - e);
    flN[k]! += w;
  }
  const foreignLength = Array.from(flN, (n, k) => (n > 0 ? Math.round(flErr[k]! / (n + 5)) : 0));

  // Non-ASCII punctuation: per-group symbol cost and a switch cost.
  const srows: number[][] = [];
  const sys: number[] = [];
  for (const [piece, w] of symbolic) {
    const x = new Array<number>(SYMBOLS.length + 1).fill(0);
    let est = 1000;
    let prev = -1;
    let i = 0;
    const chars = [...piece];
    if (chars[0] === " ") {
      prev = 33;
      i = 1;
    }
    for (; i < chars.length; i++) {
      const cp = chars[i]!.codePointAt(0)!;
      if (cp === 10 || cp === 13) {
        est += 300;
        break;
      }
      if (cp < 128) {
        const idx = punctIndex(cp);
        if (prev >= 0) est += punctPair[prev * 34 + idx]!;
        else if (prev === -2) x[SYMBOLS.length]!++;
        prev = idx;
      } else {
        x[symbolOf(cp)]!++;
        if (prev >= 0) x[SYMBOLS.length]!++;
        prev = -2;
      }
    }
    const sw = Math.sqrt(w);
    srows.push(x.map((v) => v * sw));
    sys.push((1000 * truth(piece) - est) * sw);
  }
  const symbolFit = solve(srows, sys, [...new Array<number>(SYMBOLS.length).fill(1000), 500], 50);

  // Non-ASCII digits: what a group costs beyond one token, per non-ASCII digit.
  let fdN = 0, fdExtra = 0;
  for (const [piece, st] of stats) {
    if (st.kind !== CHUNK_DIGITS || isAscii(piece)) continue;
    const n = [...piece].filter((ch) => !/[0-9]/.test(ch)).length;
    fdN += st.n * n;
    fdExtra += st.n * (truth(piece) - 1);
  }

  return {
    known: [],
    foreignLength,
    cjkSingles: CJK.singles,
    cjkBlocks: CJK.blocks,
    wordPair,
    wordPrefix,
    wordLength,
    scriptLetter: foreignFit.slice(0, SCRIPTS.length).map(Math.round),
    punctPair,
    symbol: symbolFit.slice(0, SYMBOLS.length).map(Math.round),
    constants: {
      wordBase: 1000,
      scriptSwitch: Math.round(foreignFit[SCRIPTS.length]!),
      punctBase: 1000,
      symbolSwitch: Math.round(symbolFit[SYMBOLS.length]!),
      punctNewline: nlN > 0 ? Math.round((1000 * nlCut) / nlN) : 300,
      spaceJoin: joinN > 0 ? Math.round((1000 * joinSave) / joinN) : 500,
      contraction: 1000,
      foreignDigit: fdN > 0 ? Math.round((1000 * fdExtra) / fdN) : 500,
    },
  };
}

function chunkString(s: string, per: number): string {
  const lines: string[] = [];
  for (let i = 0; i < s.length; i += per) lines.push("    " + JSON.stringify(s.slice(i, i + per)));
  return lines.join(" +\n");
}

function render(t: Tables): string {
  const nums = (a: number[], per: number): string => {
    const lines: string[] = [];
    for (let i = 0; i < a.length; i += per) lines.push("    " + a.slice(i, i + per).join(", ") + ",");
    return "[\n" + lines.join("\n") + "\n  ]";
  };
  const known = t.known.map((group) => {
    const lines: string[] = [];
    let line = "    [";
    for (const piece of group) {
      const item = JSON.stringify(piece) + ", ";
      if (line.length + item.length > 110) {
        lines.push(line.trimEnd());
        line = "     ";
      }
      line += item;
    }
    lines.push(line.trimEnd().replace(/,$/, "") + "],");
    return lines.join("\n");
  });
  return `// Generated by bench/fit/calibrate.ts from the calibration corpus (bench/fit/corpus.ts);
// do not edit by hand. Units are thousandths of a token; see count.ts for how each is used.
// known[n] lists pieces (as the pre-tokenizer cuts them) that cl100k encodes as n + 1 tokens.
import { SINGLES } from "./count-vocab.ts";

export const TABLES = {
  known: [
${known.join("\n")}
  ] as readonly (readonly string[])[],
  // The pieces of one token in cl100k's vocabulary (count-vocab.ts).
  singles: SINGLES,
  // wordPair[a * 52 + b]: letters a-z are 0-25 and A-Z 26-51.
  wordPair: ${nums(t.wordPair, 26)},
  // wordPrefix[p * 2 + (first letter upper ? 1 : 0)]: p is the printable ASCII mark's index, 33 space, 34 other white space, 35 other.
  wordPrefix: ${nums(t.wordPrefix, 24)},
  // wordLength[(prefix * 4 + shape) * 32 + letters]: prefix none, space, other; shape lower, Capital, UPPER, miXed; letters 31 or more at 31.
  wordLength: ${nums(t.wordLength, 16)},
  // scriptLetter[script], scripts as SCRIPTS in count.ts.
  scriptLetter: ${nums(t.scriptLetter, 11)},
  // foreignLength[script * 16 + letters]: scripts as SCRIPTS in count.ts, letters 15 or more at 15.
  foreignLength: ${nums(t.foreignLength, 16)},
  // lineLetterUnits[k]: what a word costs more, known or not, for each time it holds lineLetters[k].
  lineLetters:
${chunkString(t.lineLetters ?? "", 40)},
  lineLetterUnits: ${nums(t.lineLetterUnits ?? [], 20)},
  // hanTraditional: what each costs more than its script's letter cost, hanTraditionalUnits.
  hanTraditional:
${chunkString(t.hanTraditional ?? "", 40)},
  hanTraditionalUnits: ${t.hanTraditionalUnits ?? 0},
  cjkSingles:
${chunkString(t.cjkSingles, 40)},
  // One digit per block of 64 characters of CJK_RANGES in count.ts.
  cjkBlocks:
${chunkString(t.cjkBlocks, 100)},
  // punctPair[a * 34 + b]: the printable ASCII marks 0-31, 32 other, 33 a leading space.
  punctPair: ${nums(t.punctPair, 34)},
  // symbol[group], groups as SYMBOLS in count.ts.
  symbol: ${nums(t.symbol, 5)},
  constants: ${JSON.stringify(t.constants).replace(/"(\w+)":/g, "$1: ").replace(/,/g, ", ")},
};
`;
}

/** count-vocab.ts: the single-token pieces by length, in lines of about 100 characters. */
function renderVocabulary(singles: readonly string[]): string {
  const groups = singles.map((pieces, n) => (n === 0 ? '  "", // (no piece is empty)' : `  // ${pieces.length / n} of ${n} code units\n${pieces === "" ? '    ""' : chunkString(pieces, Math.max(n, Math.floor(100 / n) * n))},`));
  return `// Generated by bench/fit/calibrate.ts from cl100k's vocabulary; do not edit by hand.
// The tokens that the pre-tokenizer keeps whole (words and runs of marks): SINGLES[n] holds
// those of n UTF-16 code units one after another.
export const SINGLES: readonly string[] = [
${groups.join("\n")}
];
`;
}

/** Writes count-tables.ts and count-vocab.ts. */
function writeTables(tables: Tables): void {
  writeFileSync(TABLES_PATH, render(tables));
  writeFileSync(VOCABULARY_PATH, renderVocabulary(tables.singles ?? []));
}

function evaluate(pieces: Piece[], units: (text: string) => number): Map<string, number[]> {
  const errs = new Map<string, number[]>();
  for (const p of pieces) {
    const t = truth(p.text);
    const e = (Math.round(units(p.text) / 1000) - t) / t;
    const list = errs.get(p.cls) ?? [];
    list.push(e);
    errs.set(p.cls, list);
  }
  return errs;
}

function report(errs: Map<string, number[]>): string {
  const rows: string[] = [];
  let all: number[] = [];
  for (const [cls, es] of [...errs].sort()) {
    all = all.concat(es);
    const mare = es.reduce((s, e) => s + Math.abs(e), 0) / es.length;
    const bias = es.reduce((s, e) => s + e, 0) / es.length;
    rows.push(`${cls.padEnd(10)} ${String(es.length).padStart(4)}  MARE ${(100 * mare).toFixed(2)}%  bias ${(100 * bias).toFixed(2)}%`);
  }
  rows.push(`${"all".padEnd(10)} ${String(all.length).padStart(4)}  MARE ${((100 * all.reduce((s, e) => s + Math.abs(e), 0)) / all.length).toFixed(2)}%`);
  return rows.join("\n");
}

function unitsOf(tables: Tables): (text: string) => number {
  const s = createScan(tables as unknown as CountTables);
  return (text) => s(text, 0, text.length, false);
}

const LETTER = /\p{L}/u;
/**
 * The code point of ch when it is a letter beyond ASCII of the Latin, Greek or Cyrillic
 * scripts (as count.ts tells a line in another language; all are below U+2000), else -1.
 */
function foreignLetter(ch: string): number {
  const cp = ch.codePointAt(0)!;
  return cp >= 128 && scriptOf(cp) <= 2 && LETTER.test(ch) ? cp : -1;
}

/** The lines of a text, each with its newline. */
function* linesOf(text: string): Generator<string> {
  let start = 0;
  while (start < text.length) {
    const nl = text.indexOf("\n", start);
    const end = nl < 0 ? text.length : nl + 1;
    yield text.slice(start, end);
    start = end;
  }
}

/** The letters of a line that count as its features for lineLetters, with how often each occurs. */
function lineLetterCounts(line: string): Map<number, number> {
  const counts = new Map<number, number>();
  for (const ch of line) {
    const cp = foreignLetter(ch);
    if (cp >= 0) counts.set(cp, (counts.get(cp) ?? 0) + 1);
  }
  return counts;
}

/**
 * What a line that holds Latin, Greek or Cyrillic letters beyond ASCII still misses, with the
 * other tables as fitted, as a sum over its letters of a charge per
 * letter: ridge least squares (`solve`) over the training pieces' lines.
 */
function fitLineLetters(train: Piece[], tables: Tables): { lineLetters: string; lineLetterUnits: number[] } {
  const s = createScan({ ...tables, lineLetters: undefined, lineLetterUnits: undefined } as unknown as CountTables);
  const lines: { counts: Map<number, number>; miss: number }[] = [];
  const index = new Map<number, number>();
  for (const p of train) {
    for (const line of linesOf(p.text)) {
      const counts = lineLetterCounts(line);
      if (counts.size === 0) continue;
      for (const cp of counts.keys()) if (!index.has(cp)) index.set(cp, index.size);
      lines.push({ counts, miss: 1000 * truth(line) - s(line, 0, line.length, false) });
    }
  }
  const rows = lines.map(({ counts }) => {
    const x = new Array<number>(index.size).fill(0);
    for (const [cp, n] of counts) x[index.get(cp)!] = n;
    return x;
  });
  const fit = solve(rows, lines.map((l) => l.miss), new Array<number>(index.size).fill(0), LINE_LETTER_RIDGE);
  const fitted = [...index].map(([cp, i]) => [cp, Math.round(fit[i]!)] as const).filter(([, u]) => u !== 0).sort((x, y) => x[0] - y[0]);
  return { lineLetters: fitted.map(([cp]) => String.fromCharCode(cp)).join(""), lineLetterUnits: fitted.map(([, u]) => u) };
}
/** The ridge of the lineLetters fit, in squared thousandths: measured, a little below 20 to 100 changes little. */
const LINE_LETTER_RIDGE = 20;

/** The Han characters of a text, once each. */
function hanOf(text: string): Set<string> {
  return new Set([...text].filter((ch) => scriptOf(ch.codePointAt(0)!) === SCRIPTS.indexOf("han")));
}

/**
 * Traditional Chinese's own characters and their extra cost: the Han characters of the
 * training pieces of TypeScript's traditional Chinese messages (`/zh-tw/`) that its simplified
 * Chinese ones (`/zh-cn/`), a translation of the same messages, never use; and, by least squares
 * over the training CJK pieces with the other tables as they are, what each occurrence costs
 * more (ridge HAN_RIDGE).
 */
function fitTraditional(train: Piece[], tables: Tables): Pick<Tables, "hanTraditional" | "hanTraditionalUnits"> {
  const simplified = new Set(train.filter((p) => p.src.includes("/zh-cn/")).flatMap((p) => [...hanOf(p.text)]));
  const traditional = [...new Set(train.filter((p) => p.src.includes("/zh-tw/")).flatMap((p) => [...hanOf(p.text)]))].filter((ch) => !simplified.has(ch) && ch.length === 1).sort();
  if (traditional.length === 0) return { hanTraditional: "", hanTraditionalUnits: 0 };
  const set = new Set(traditional);
  const units = unitsOf({ ...tables, hanTraditional: undefined, hanTraditionalUnits: undefined });
  let num = 0;
  let den = 0;
  for (const p of train) {
    if (p.cls !== "cjk") continue;
    const x = [...p.text].filter((ch) => set.has(ch)).length;
    num += x * (1000 * truth(p.text) - units(p.text));
    den += x * x;
  }
  return { hanTraditional: traditional.join(""), hanTraditionalUnits: Math.round(num / (den + HAN_RIDGE)) };
}
/** The ridge of hanTraditionalUnits, in squared thousandths (one token squared). */
const HAN_RIDGE = 1e6;

/**
 * The pieces cl100k holds as one token: the tokens of its vocabulary, as text, that the
 * pre-tokenizer keeps whole and that are words or runs of marks (digit groups, white space
 * and contractions have prices of their own). Sorted.
 */
function vocabularySingles(): string[] {
  const out: string[] = [];
  for (let t = 0; t < VOCABULARY; t++) {
    const piece = decode([t]);
    if (piece.includes("\ufffd")) continue; // part of a character
    let whole = 0;
    scan(piece, 0, piece.length, false, (kind, from, to) => {
      whole = from === 0 && to === piece.length && (kind === CHUNK_WORD || kind === CHUNK_PUNCT) ? 1 : -1;
    });
    // (gpt-tokenizer, the reference here, encodes a few dozen of them, pairs of CJK characters
    // mostly, in two tokens.)
    if (whole === 1 && truth(piece) === 1) out.push(piece);
  }
  return out.sort();
}
/** cl100k's ordinary tokens (its special tokens come after). */
const VOCABULARY = 100256;

/**
 * Whether count.ts prices a piece of this kind from the known table: words, runs of marks, and
 * white space that is not one character repeated (a digit group, a contraction or a run of one
 * white-space character has a price of its own).
 */
function lookedUp(piece: string, kind: number): boolean {
  if (kind === CHUNK_WORD || kind === CHUNK_PUNCT) return true;
  return kind === CHUNK_SPACE && piece.replaceAll(piece[0]!, "") !== "";
}

/** Pieces as count.ts takes its singles: singles[n] holds those of n code units one after another. */
function byLength(pieces: readonly string[]): string[] {
  const out: string[] = [];
  for (const piece of pieces) {
    while (out.length <= piece.length) out.push("");
    out[piece.length] += piece;
  }
  return out;
}

function main(): void {
  const corpus = loadCorpus();
  const train = corpus.filter((p) => !heldOut(p));
  const test = corpus.filter(heldOut);
  const stats = collect(train);
  console.log(`${train.length} training pieces, ${test.length} held out, ${stats.size} distinct pieces`);

  // Round 1: the rules, with the vocabulary's single tokens known. Rounds 2..: pick the other
  // pieces the rules misprice most (by how many sources they occur in, so one file's own
  // identifiers do not crowd out common words).
  const singles = vocabularySingles();
  const single = new Set(singles);
  console.log(`${singles.length} pieces of one token in cl100k's vocabulary`);
  let known = new Set<string>(singles);
  let tables: Tables = { ...fitRules(stats, known), singles: byLength(singles) };
  for (let round = 0; round < 3; round++) {
    const units = unitsOf(tables);
    const gain: [string, number][] = [];
    for (const [piece, st] of stats) {
      if (single.has(piece) || !lookedUp(piece, st.kind) || st.sources.size < MIN_SOURCES || piece.length > 40) continue;
      const t = truth(piece);
      if (t > 8) continue;
      const miss = Math.abs(units(piece) - 1000 * t);
      if (known.has(piece) || miss >= MIN_MISS) gain.push([piece, miss * st.sources.size + (known.has(piece) ? 1e9 : 0)]);
    }
    gain.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    const chosen = gain.slice(0, KNOWN_MAX).map(([p]) => p);
    known = new Set([...singles, ...chosen]);
    tables = { ...fitRules(stats, known), singles: byLength(singles) };
    const groups: string[][] = [];
    for (const piece of [...chosen].sort()) {
      const t = truth(piece);
      while (groups.length < t) groups.push([]);
      groups[t - 1]!.push(piece);
    }
    tables.known = groups;
    console.log(`round ${round + 1}: ${chosen.length} known pieces besides the single tokens`);
  }
  Object.assign(tables, fitLineLetters(train, tables));
  Object.assign(tables, fitTraditional(train, tables));
  writeTables(tables);
  const units = unitsOf(tables);
  console.log("training pieces\n" + report(evaluate(train, units)));
  console.log("held-out pieces\n" + report(evaluate(test, units)));
}

main();
