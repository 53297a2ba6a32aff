// The caps every fitted answer keeps (FIT-9), and what counts as asking for fitting (FIT-8).
import type { FitOptions, Reason, View } from "./types.ts";
import { VIEWS } from "./types.ts";

/** Most tokens of a fitted answer, whatever the budget (and with none). */
export const CAP = 50_000;
/** Most characters of a fitted answer, whatever the budget (and with none). */
export const CAP_CHARS = 200_000;
/** Where a result carries its fit note in `_meta`. */
export const META_KEY = "oz0/fit";
/** Characters allowed per token of budget. */
export const CHARS_PER_TOKEN = 8;

/** The character bound a budget allows: 8 characters per token, never above CAP_CHARS. */
export function charsOf(budget: number): number {
  if (!Number.isFinite(budget) || budget <= 0) return CAP_CHARS;
  return Math.min(CAP_CHARS, Math.floor(budget) * CHARS_PER_TOKEN);
}

/** A budget given as a positive number (fractions round down), else null. */
export function budgetOf(budget: number | null | undefined): number | null {
  if (typeof budget !== "number" || !Number.isFinite(budget)) return null;
  const b = Math.floor(budget);
  return b > 0 ? b : null;
}

/** The view asked for, or null (absent or not one of the four views). */
export function viewOf(view: string | null | undefined): View | null {
  return typeof view === "string" && (VIEWS as readonly string[]).includes(view) ? (view as View) : null;
}

/** The query, trimmed, or null when absent or blank. */
export function queryOf(query: string | null | undefined): string | null {
  if (typeof query !== "string") return null;
  const q = query.trim();
  return q === "" ? null : q;
}

/**
 * Whether the caller asked for fitting at all (FIT-8): any of view, budget or query given.
 * When it did not, answer exactly as before the convention: no fitting, no note.
 */
export function wanted(view?: string | null, budget?: number | null, query?: string | null): boolean {
  return (typeof view === "string" && view !== "") || budgetOf(budget) !== null || queryOf(query) !== null;
}

/** The bounds one answer must keep, and which bound each comes from. */
export type Bounds = {
  /** The caller's budget, or null. */
  readonly budget: number | null;
  /** Most tokens: the budget within CAP. */
  readonly tokens: number;
  readonly tokensReason: Reason;
  /** Most characters: CAP_CHARS, 8 per token of budget, and the tool's own bound, whichever is least. */
  readonly chars: number;
  readonly charsReason: Reason;
};

export function boundsOf(opts: FitOptions): Bounds {
  const budget = budgetOf(opts.budget);
  const tokens = budget !== null && budget < CAP ? budget : CAP;
  const tokensReason: Reason = budget !== null && budget <= CAP ? "budget" : "cap";
  let chars = CAP_CHARS;
  let charsReason: Reason = "cap_chars";
  if (budget !== null && charsOf(budget) < chars) {
    chars = charsOf(budget);
    charsReason = "budget";
  }
  const own = typeof opts.chars === "number" && Number.isFinite(opts.chars) && opts.chars >= 0 ? Math.floor(opts.chars) : null;
  if (own !== null && own < chars) {
    chars = own;
    charsReason = "chars";
  }
  return { budget, tokens, tokensReason, chars, charsReason };
}
