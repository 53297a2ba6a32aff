// What the offload step needs of a result (OFF-3..OFF-5): how it is read (kind, lines in
// the read form, size), and its outline made without a model: the outline summary (each
// heading or top-level key with its first sentence), or the bare stub (the headings
// alone) when the summary does not fit, never above OUTLINE_CAP tokens. Same text, same outline.
import { tokensOf, weighUnits } from "./count.ts";
import { docOf, nameOf } from "./read.ts";
import type { Kind } from "./types.ts";
import { outlineEntries } from "./views.ts";

/** Most tokens of an offloaded result's outline. */
export const OUTLINE_CAP = 1000;

/** How a result is read (OFF-5). */
export type ResultForm = {
  readonly kind: Kind;
  /** The text as read: for JSON, one indented line per value (JSON.stringify with indent 2). */
  readonly text: string;
  /** Lines of `text`. */
  readonly lines: number;
  /** weigh(text). */
  readonly size: number;
};

/** The read form of a result: a string (JSON text, a diff, a document) or a parsed JSON value. */
export function readResult(value: unknown, name?: string | null): ResultForm {
  const doc = docOf(value, nameOf(name));
  return { kind: doc.kind, text: doc.text, lines: doc.lines, size: tokensOf(doc.units) };
}

/** A result's outline and how it is read. */
export type ResultOutline = {
  readonly kind: Kind;
  readonly lines: number;
  readonly size: number;
  /** The outline: one line per heading, definition, file or hunk, key or item, or run of lines. */
  readonly outline: string;
  /** "summary" when each entry carries its first sentence, "stub" for headings alone. */
  readonly form: "summary" | "stub";
  /** weigh(outline), at most the bound asked for. */
  readonly tokens: number;
  /** False when entries were left out to keep the bound (the last line then says how many). */
  readonly complete: boolean;
};

/**
 * The outline of a result within maxTokens (capped at OUTLINE_CAP): the summary when it
 * fits, else the stub; a stub too big keeps its top levels, then its first entries, and
 * ends with a line saying how many parts it leaves out.
 */
export function outlineResult(value: unknown, maxTokens: number, name?: string | null): ResultOutline {
  const bound = Math.max(0, Math.min(OUTLINE_CAP, Math.floor(Number.isFinite(maxTokens) ? maxTokens : 0)));
  const doc = docOf(value, nameOf(name));
  const base = { kind: doc.kind, lines: doc.lines, size: tokensOf(doc.units) };
  const fits = (text: string): number | null => {
    const t = tokensOf(weighUnits(text));
    return t <= bound ? t : null;
  };
  // The summary is only built when its entries could fit: at most ~8 characters a token.
  const summary = outlineEntries(doc, true);
  const summaryText = summary.lines.join("\n");
  if (summaryText.length <= bound * 16) {
    const t = fits(summaryText);
    if (t !== null) return { ...base, outline: summaryText, form: "summary", tokens: t, complete: true };
  }
  const stub = outlineEntries(doc, false);
  const all = stub.lines.join("\n");
  const whole = all.length <= bound * 16 ? fits(all) : null;
  if (whole !== null) return { ...base, outline: all, form: "stub", tokens: whole, complete: true };
  // Fewer levels, then the first entries, each time with a line saying what is left out.
  const n = stub.lines.length;
  const levels = [...new Set(stub.levels)].sort((a, b) => b - a);
  for (const level of levels.slice(1)) {
    const kept = stub.lines.filter((_, i) => stub.levels[i]! <= level);
    const text = [...kept, `(${n - kept.length} deeper parts are not listed.)`].join("\n");
    const t = text.length <= bound * 16 ? fits(text) : null;
    if (t !== null) return { ...base, outline: text, form: "stub", tokens: t, complete: false };
  }
  const top = levels[levels.length - 1] ?? 1;
  const tops = stub.lines.filter((_, i) => stub.levels[i]! <= top);
  let lo = 0;
  let hi = tops.length;
  const textOf = (k: number): string => [...tops.slice(0, k), `(${n - k} more parts are not listed.)`].join("\n");
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    const text = textOf(mid);
    if (text.length <= bound * 16 && fits(text) !== null) lo = mid;
    else hi = mid - 1;
  }
  const text = n === 0 ? "" : textOf(lo);
  const t = fits(text);
  if (t !== null) return { ...base, outline: text, form: "stub", tokens: t, complete: n === 0 };
  return { ...base, outline: "", form: "stub", tokens: 0, complete: n === 0 };
}
