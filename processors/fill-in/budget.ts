/**
 * The default budget of a fitted tool's call (FIT-16): a quarter of what is left of the
 * agent's context, taking the context as 128,000 tokens and "used" as the newest model request
 * plus its answer, at least 500 and at most 8,000 tokens, and half of that once the job tree
 * has spent the warning share of its budget.
 */
export const CONTEXT_TOKENS = 128_000;
export const MIN_BUDGET = 500;
export const MAX_BUDGET = 8_000;

export interface BudgetInputs {
  /** Tokens of the newest model request plus its answer; unknown counts as nothing used. */
  contextUsed: number | null;
  /** Share of the tree's budget spent (0..1), or null when the tree has no budget. */
  spendShare: number | null;
  /** The warning share in force for the agent (spend.warn_share, default 0.8). */
  warnShare: number;
}

export function defaultBudget({ contextUsed, spendShare, warnShare }: BudgetInputs): number {
  const left = Math.max(0, CONTEXT_TOKENS - Math.max(0, contextUsed ?? 0));
  const quarter = Math.min(MAX_BUDGET, Math.max(MIN_BUDGET, Math.floor(left / 4)));
  return spendShare !== null && spendShare >= warnShare ? Math.floor(quarter / 2) : quarter;
}
