// JSON by its top-level keys or items, read in one form (OFF-5): JSON.stringify with an
// indent of 2, one indented line per value, so that line ranges mean something even when
// the tool wrote the JSON on one line.
import { type Draft, lineStarts } from "./doc.ts";
import { cut, firstSentence } from "./sentence.ts";

/** The read form of a JSON value, its line starts, and the line where each top-level key or item starts. */
export type JsonForm = { text: string; starts: Int32Array; drafts: Draft[] };

function stringify(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? "null";
  } catch {
    return String(value);
  }
}

/** Parses text that is a JSON object or array; else undefined. */
export function parseJson(text: string): unknown {
  const t = text.trimStart();
  if (!(t.startsWith("{") || t.startsWith("["))) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Where the JSON string literal starting at i ends (after its closing quote). */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === 92) j++; // a backslash escapes the next character
    else if (c === 34) return j + 1;
  }
  return text.length;
}

/** What the summary shows of a value in [at, end): a string's first sentence, else the start of its JSON on one line. */
function preview(text: string, at: number, end: number): string {
  if (text.charCodeAt(at) === 34) {
    const end = stringEnd(text, at);
    try {
      return JSON.stringify(firstSentence(JSON.parse(text.slice(at, end)) as string));
    } catch {
      return cut(text.slice(at, end), 160);
    }
  }
  return cut(text.slice(at, Math.min(end, at + 400)).replace(/\n\s*/g, "").replace(/,$/, ""), 160);
}

/**
 * The read form of a value, with a part per top-level key (object) or item (array). The
 * whole is stringified once; a top-level entry is a line indented by exactly two spaces
 * that does not close a bracket.
 */
export function jsonForm(input: unknown): JsonForm {
  const text = stringify(input);
  const starts = lineStarts(text);
  const drafts: Draft[] = [];
  const first = text.charCodeAt(0);
  if ((first !== 123 && first !== 91) || starts.length <= 3) return { text, starts, drafts };
  const array = first === 91;
  const lines = starts.length - 1;
  const entries: number[] = [];
  for (let l = 1; l < lines - 1; l++) {
    const s = starts[l]!;
    const c = text.charCodeAt(s + 2);
    if (text.charCodeAt(s) === 32 && text.charCodeAt(s + 1) === 32 && c !== 32 && c !== 125 && c !== 93) entries.push(l);
  }
  entries.forEach((l, n) => {
    const s = starts[l]! + 2;
    const stop = n + 1 < entries.length ? starts[entries[n + 1]!]! : starts[lines - 1]!;
    if (array) {
      const title = `[${n}]`;
      drafts.push({ line: l, level: 1, title, keys: [title], label: "item", sentenceOf: () => preview(text, s, stop) });
    } else {
      const end = stringEnd(text, s);
      const title = text.slice(s, end);
      let key = title;
      try {
        key = JSON.parse(title) as string;
      } catch {
        // keep the literal
      }
      drafts.push({ line: l, level: 1, title, keys: [key, title], label: "key", sentenceOf: () => preview(text, end + 2, stop) });
    }
  });
  // The first part starts at the opening bracket, so that the parts cover the whole.
  if (drafts[0] !== undefined) drafts[0] = { ...drafts[0], line: 0 };
  return { text, starts, drafts };
}
