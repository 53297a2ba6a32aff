/**
 * Money as whole micro-dollars (1 USD = 1,000,000), so budgets and spend add up in Redis with
 * no float drift. Prices are micro-dollars per million tokens, so $3 per million tokens is
 * 3,000,000 and a cost is `ceil(sum(tokens * price) / 1e6)`: rounded up, never in the agent's
 * favour.
 */

export const MICROS_PER_USD = 1_000_000;

/** What one model charges, in micro-dollars per million tokens of each kind. */
export interface ModelPrice {
  readonly input: number;
  readonly output: number;
  readonly cache_read: number;
  readonly cache_write: number;
  /** The most one request of this model can answer: the worst case when nothing else says. */
  readonly max_output_tokens: number;
}

/** The tokens of one model call (or re-warm), by kind. */
export interface TokenCounts {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
}

export function usdToMicros(usd: number): number {
  return Math.round(usd * MICROS_PER_USD);
}

export function microsToUsd(micros: number): number {
  return micros / MICROS_PER_USD;
}

/** The cost of `tokens` at `price`, in whole micro-dollars, rounded up. */
export function costMicros(price: ModelPrice, tokens: TokenCounts): number {
  const perMillion =
    BigInt(tokens.input) * BigInt(price.input) +
    BigInt(tokens.output) * BigInt(price.output) +
    BigInt(tokens.cacheRead) * BigInt(price.cache_read) +
    BigInt(tokens.cacheWrite) * BigInt(price.cache_write);
  const million = 1_000_000n;
  return Number((perMillion + million - 1n) / million);
}
