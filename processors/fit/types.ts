// Types of the fit library (processors/fit). index.ts exports the functions; import the
// types from here.

/** What a fitted answer shows: the outline, the outline with first sentences, one part, or all. */
export type View = "stub" | "summary" | "section" | "full";

/** The views from biggest to smallest: a view that does not fit falls to a later one, never an earlier. */
export const VIEWS: readonly View[] = ["full", "section", "summary", "stub"];

/** How a result is read (OFF-5): its natural parts. */
export type Kind = "markdown" | "json" | "diff" | "code" | "text";

/** The bound that forced a smaller view (FIT-12). */
export type Reason = "budget" | "chars" | "cap" | "cap_chars";

/** Options of fitDocument, fitDiff and fit. Absent, null, "" (and a budget of 0 or less) mean not given. */
export type FitOptions = {
  /** The view asked for (a View; any other string counts as not given); left out, the biggest that fits. */
  readonly view?: string | null;
  /** The most tokens (by `weigh`) the answer's content may take. */
  readonly budget?: number | null;
  /** Names a section: a heading, a definition's name, a path, `<path>#<n>`, a key, `[n]`, or lines `a-b`. */
  readonly query?: string | null;
  /** The tool's own bound in characters. */
  readonly chars?: number | null;
  /** A line put first in a stub or summary, saying what the content is (a path, a URL, a title). */
  readonly head?: string | null;
  /** The content's name (a file name or path): named in notes, and its extension tells the kind. */
  readonly name?: string | null;
};

/** The fit note (FIT-13), carried in the content's `fit` field and in `_meta["oz0/fit"]`. */
export type FitNote = {
  readonly view: View;
  /** The budget the caller gave, or null when none was given. */
  readonly budget: number | null;
  /** The whole answer's estimate (weigh of the whole, in its read form). */
  readonly size: number;
  /** What was returned (weigh of `text`). */
  readonly tokens: number;
  /** A sentence naming what was left out. */
  readonly omitted: string;
  /** The bound that forced a smaller view, when one did. */
  readonly reason?: Reason;
};

/** A fitted answer. */
export type Fitted = {
  readonly text: string;
  /** Set when a bound forced a smaller view (then the note has a reason). */
  readonly truncated: boolean;
  /** A fresh copy of the fit note. */
  meta(): FitNote;
};
