/**
 * The platform's price table: what each model charges per million tokens, in micro-dollars.
 * It is part of the processor's environment (`LimitsEnv.prices`), so a deployment passes its
 * own; the default below is the platform's list. A model missing from the table is priced at
 * the table's highest price of each kind: a budget never under-reserves for a model nobody
 * priced.
 */
import type { ModelPrice } from "./money.ts";

export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** Micro-dollars per million tokens (USD per million tokens times 1,000,000). */
export const DEFAULT_PRICES: PriceTable = Object.freeze({
  "claude-opus-4": { input: 15_000_000, output: 75_000_000, cache_read: 1_500_000, cache_write: 18_750_000, max_output_tokens: 32_000 },
  "claude-sonnet-4": { input: 3_000_000, output: 15_000_000, cache_read: 300_000, cache_write: 3_750_000, max_output_tokens: 64_000 },
  "claude-haiku-3.5": { input: 800_000, output: 4_000_000, cache_read: 80_000, cache_write: 1_000_000, max_output_tokens: 8_192 },
});

/** The price of `model`, or the table's highest price of each kind for a model it does not list. */
export function priceOf(table: PriceTable, model: string): { price: ModelPrice; listed: boolean } {
  const listed = Object.hasOwn(table, model) ? table[model] : undefined;
  if (listed) return { price: listed, listed: true };
  const all = Object.values(table);
  if (all.length === 0) throw new Error("the price table is empty: no model call can be priced, so no budget can be kept");
  const max = (k: keyof ModelPrice) => Math.max(...all.map((p) => p[k]));
  return {
    price: { input: max("input"), output: max("output"), cache_read: max("cache_read"), cache_write: max("cache_write"), max_output_tokens: max("max_output_tokens") },
    listed: false,
  };
}
