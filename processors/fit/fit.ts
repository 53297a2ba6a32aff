// Fitting results to a budget (seed 000, "Results that fit a budget"): each function cuts
// the views along its content's natural parts (FIT-18) and returns the answer with its note.
import { kindOfText } from "./detect.ts";
import type { Doc } from "./doc.ts";
import { docOf, docOfText, nameOf } from "./read.ts";
import type { FitOptions, Fitted } from "./types.ts";
import { fitDoc } from "./views.ts";

/** A document (markdown by headings, code by definitions, anything else by runs of lines). */
export function fitDocument(text: string, opts: FitOptions = {}): Fitted {
  const name = nameOf(opts.name);
  const kind = kindOfText(text, name);
  return fitDoc(docOfText(kind === "json" ? "text" : kind, text, name), opts);
}

/** A unified diff, by file and hunk (`path`, `path#n`). */
export function fitDiff(diff: string, opts: FitOptions = {}): Fitted {
  return fitDoc(docOfText("diff", diff, nameOf(opts.name)), opts);
}

/**
 * Any result: a parsed JSON value (or a string holding a JSON object or array) by its
 * top-level keys or items in its read form; a string that looks like a unified diff as a
 * diff; any other string as a document.
 */
export function fit(value: unknown, opts: FitOptions = {}): Fitted {
  return fitDoc(docOf(value, nameOf(opts.name)), opts);
}

/**
 * What `fit` reads a result into, for a caller that fits the same result more than once
 * (`fitRead`): reading is most of a fit's work, and a document is never changed by a fit.
 */
export function readForFit(value: unknown, name?: string | null): Doc {
  return docOf(value, nameOf(name));
}

/** `fit` of a result already read by `readForFit`. */
export function fitRead(doc: Doc, opts: FitOptions = {}): Fitted {
  return fitDoc(doc, opts);
}
