// A document split into its natural parts, each sized once.
//
// Parts are a flat list in document order; a part's own text runs from its first line to
// the next part's first line, and its section is itself with every later part of a deeper
// level (a heading with its sub-headings, a file with its hunks). Every part starts at the
// start of a line that holds more than white space, where the estimate's units add up, so
// the size of any run of parts is the sum of their own units: the text is counted once.
import { scan } from "./count.ts";
import type { Kind } from "./types.ts";

/** A part as a splitter finds it. */
export type Draft = {
  /** 0-based line where the part starts (a line with more than white space). */
  readonly line: number;
  /** 1 for top-level parts; deeper parts belong to the last shallower one before them. */
  readonly level: number;
  /** How the part shows in an outline (a heading line, a signature, a path, a key). */
  readonly title: string;
  /** What a query matches, best first (a heading's text, a name, a path). */
  readonly keys: readonly string[];
  /** How a note names it: "section", "definition", "file", "hunk", "key", "item", "lines". */
  readonly label: string;
  /** A sentence cut from the part, when the splitter knows better than the first line of its body. */
  readonly sentence?: string;
  /** The same, made only when a summary asks for it. */
  readonly sentenceOf?: () => string;
};

export type Part = Draft & {
  /** Character offsets of the part's own text. */
  readonly start: number;
  readonly end: number;
  /** Thousandths of a token (weigh) of the part's own text. */
  readonly units: number;
};

export type Doc = {
  readonly kind: Kind;
  /** The text as read (for JSON, the read form). */
  readonly text: string;
  /** Offsets where each line starts; starts[lines] === text.length. */
  readonly starts: Int32Array;
  readonly lines: number;
  readonly parts: readonly Part[];
  /** Thousandths of a token (weigh) of the whole text. */
  readonly units: number;
  /** What the whole is called in notes: "document", "file", "diff", "result", "text". */
  readonly noun: string;
  readonly name: string | null;
};

/** Offsets of line starts, with a final entry at text.length (a trailing newline ends the last line). */
export function lineStarts(text: string): Int32Array {
  let n = 0;
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) n++;
  const lines = text.length === 0 ? 0 : text.endsWith("\n") ? n : n + 1;
  const starts = new Int32Array(lines + 1);
  let at = 0;
  for (let l = 1; l < lines; l++) {
    at = text.indexOf("\n", at) + 1;
    starts[l] = at;
  }
  starts[lines] = text.length;
  return starts;
}

/** Line l (0-based) without its line ending. */
export function lineAt(text: string, starts: Int32Array, l: number): string {
  let end = starts[l + 1]!;
  if (end > starts[l]! && text.charCodeAt(end - 1) === 10) end--;
  if (end > starts[l]! && text.charCodeAt(end - 1) === 13) end--;
  return text.slice(starts[l], end);
}

/** Whether line l holds something besides white space. */
export function hasContent(text: string, starts: Int32Array, l: number): boolean {
  for (let i = starts[l]!, end = starts[l + 1]!; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 9 && c !== 10 && c !== 13 && c !== 11 && c !== 12) return true;
  }
  return false;
}

const NOUNS: Record<Kind, string> = { markdown: "document", code: "file", diff: "diff", json: "result", text: "text" };

/**
 * Builds the document from its drafts (in line order). Text before the first draft becomes
 * a part of its own ("the top"); drafts that start on blank lines move down to their first
 * line with content, so that sizes add up.
 */
export function buildDoc(kind: Kind, text: string, starts: Int32Array, drafts: readonly Draft[], name: string | null): Doc {
  const lines = starts.length - 1;
  const placed: Draft[] = [];
  let last = -1;
  for (const d of drafts) {
    let line = d.line;
    while (line < lines && !hasContent(text, starts, line)) line++;
    if (line >= lines || line <= last) continue;
    placed.push(line === d.line ? d : { ...d, line });
    last = line;
  }
  const first = placed[0];
  if (lines > 0 && (first === undefined || first.line > 0)) {
    let top = 0;
    while (top < lines && !hasContent(text, starts, top)) top++;
    if (first === undefined || top < first.line) {
      placed.unshift({ line: 0, level: 1, title: "(top)", keys: ["top"], label: "top" });
    } else {
      // Only blank lines before the first part: they belong to it.
      placed[0] = { ...first, line: 0 };
    }
  }
  const parts: Part[] = [];
  let units = 0;
  for (let i = 0; i < placed.length; i++) {
    const d = placed[i]!;
    const start = starts[d.line]!;
    const end = i + 1 < placed.length ? starts[placed[i + 1]!.line]! : text.length;
    const u = scan(text, start, end, true);
    units += u;
    // One shape for every part, so that reading them stays fast (V8 hidden classes).
    parts.push({ line: d.line, level: d.level, title: d.title, keys: d.keys, label: d.label, sentence: d.sentence, sentenceOf: d.sentenceOf, start, end, units: u });
  }
  return { kind, text, starts, lines, parts, units, noun: NOUNS[kind], name };
}
