/**
 * The platform's price table: what each model charges per million tokens, in micro-dollars.
 * It is part of the processor's environment (`LimitsEnv.prices`), so a deployment passes its
 * own (an operator's prices file, `OZ0_PRICES`, price-file.ts); the default below is the
 * platform's list. A model is priced by its own entry, else, when its name is a listed
 * model's followed by a date (a provider's dated snapshot: `gpt-4o-2024-08-06`,
 * `claude-sonnet-4-20250514`), by that model's entry. A model the table does not price is
 * priced at the table's highest price of each kind: a budget never under-reserves for a model
 * nobody priced.
 */
import type { ModelPrice } from "./money.ts";

export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** Micro-dollars per million tokens from whole micro-dollars (a literal reads as the published USD price). */
function p(input: number, output: number, cache_read: number, cache_write: number, max_output_tokens: number): ModelPrice {
  return Object.freeze({ input, output, cache_read, cache_write, max_output_tokens });
}

/**
 * Micro-dollars per million tokens (USD per million tokens times 1,000,000), at each provider's
 * standard (not batch, not priority, not long-context) rate.
 *
 * The providers' published prices as read on 2026-12-02: Anthropic's pricing page
 * (platform.claude.com/docs/en/about-claude/pricing; the cache write is the 5-minute write)
 * and models overview (max output); OpenAI's model pages (developers.openai.com/api/docs/models/<model>;
 * the cache read is the cached input price; OpenAI charges no cache writes). Prices change:
 * an operator sets their own with a prices file (docs/limits.md, "Prices"), which this default
 * does not replace unless told to.
 *
 * The first three names are the platform's own since its start and keep their values.
 */
export const DEFAULT_PRICES: PriceTable = Object.freeze({
  // Anthropic
  "claude-opus-4": p(15_000_000, 75_000_000, 1_500_000, 18_750_000, 32_000),
  "claude-sonnet-4": p(3_000_000, 15_000_000, 300_000, 3_750_000, 64_000),
  "claude-haiku-3.5": p(800_000, 4_000_000, 80_000, 1_000_000, 8_192),
  "claude-opus-4-0": p(15_000_000, 75_000_000, 1_500_000, 18_750_000, 32_000),
  "claude-opus-4-1": p(15_000_000, 75_000_000, 1_500_000, 18_750_000, 32_000),
  "claude-opus-4-5": p(5_000_000, 25_000_000, 500_000, 6_250_000, 64_000),
  "claude-opus-4-6": p(5_000_000, 25_000_000, 500_000, 6_250_000, 128_000),
  "claude-sonnet-4-0": p(3_000_000, 15_000_000, 300_000, 3_750_000, 64_000),
  "claude-sonnet-4-5": p(3_000_000, 15_000_000, 300_000, 3_750_000, 64_000),
  "claude-sonnet-4-6": p(3_000_000, 15_000_000, 300_000, 3_750_000, 64_000),
  "claude-haiku-4-5": p(1_000_000, 5_000_000, 100_000, 1_250_000, 64_000),
  "claude-3-7-sonnet": p(3_000_000, 15_000_000, 300_000, 3_750_000, 64_000),
  "claude-3-5-haiku": p(800_000, 4_000_000, 80_000, 1_000_000, 8_192),
  "claude-3-haiku": p(250_000, 1_250_000, 30_000, 300_000, 4_096),
  // OpenAI (Chat Completions models; cache_write 0: OpenAI charges none)
  "gpt-4o": p(2_500_000, 10_000_000, 1_250_000, 0, 16_384),
  // A snapshot priced apart from its model: listed, so it is not priced as gpt-4o. OpenAI
  // caches none of its prompts; its cache read is held to its input price all the same.
  "gpt-4o-2024-05-13": p(5_000_000, 15_000_000, 5_000_000, 0, 4_096),
  "gpt-4o-mini": p(150_000, 600_000, 75_000, 0, 16_384),
  "gpt-4.1": p(2_000_000, 8_000_000, 500_000, 0, 32_768),
  "gpt-4.1-mini": p(400_000, 1_600_000, 100_000, 0, 32_768),
  "gpt-4.1-nano": p(100_000, 400_000, 25_000, 0, 32_768),
  "o3": p(2_000_000, 8_000_000, 500_000, 0, 100_000),
  "o3-mini": p(1_100_000, 4_400_000, 550_000, 0, 100_000),
  "o4-mini": p(1_100_000, 4_400_000, 275_000, 0, 100_000),
  "gpt-5": p(1_250_000, 10_000_000, 125_000, 0, 128_000),
  "gpt-5-mini": p(250_000, 2_000_000, 25_000, 0, 128_000),
  "gpt-5-nano": p(50_000, 400_000, 5_000, 0, 128_000),
  "gpt-5.1": p(1_250_000, 10_000_000, 125_000, 0, 128_000),
  "gpt-5.2": p(1_750_000, 14_000_000, 175_000, 0, 128_000),
  "gpt-5.4": p(2_500_000, 15_000_000, 250_000, 0, 128_000),
  "gpt-5.4-mini": p(750_000, 4_500_000, 75_000, 0, 128_000),
  "gpt-5.4-nano": p(200_000, 1_250_000, 20_000, 0, 128_000),
});

/** A provider's snapshot date after a model's name: `-20250514` (Anthropic) or `-2024-08-06` (OpenAI). */
const SNAPSHOT_DATE = /^-(?:\d{8}|\d{4}-\d{2}-\d{2})$/;

/**
 * The entry `model` is priced by: its own, else the longest listed name that `model` is
 * followed by a snapshot date of (`gpt-4o-2024-08-06` → `gpt-4o`, `gpt-4o-mini-2024-07-18` →
 * `gpt-4o-mini`, never `gpt-4o`), else none.
 */
export function entryOf(table: PriceTable, model: string): string | null {
  if (Object.hasOwn(table, model)) return model;
  let best: string | null = null;
  for (const name of Object.keys(table)) {
    if (model.length > name.length && model.startsWith(name) && SNAPSHOT_DATE.test(model.slice(name.length)) && (best === null || name.length > best.length)) best = name;
  }
  return best;
}

/** The table's highest price of each kind: what a model it does not price is held to. */
export function highestPrice(table: PriceTable): ModelPrice {
  const all = Object.values(table);
  if (all.length === 0) throw new Error("the price table is empty: no model call can be priced, so no budget can be kept");
  const max = (k: keyof ModelPrice) => Math.max(...all.map((price) => price[k]));
  return { input: max("input"), output: max("output"), cache_read: max("cache_read"), cache_write: max("cache_write"), max_output_tokens: max("max_output_tokens") };
}

/**
 * The price of `model` (its own entry, or its snapshot's model's: `entry` names which), or the
 * table's highest price of each kind for a model it does not price (`listed: false`, `entry: null`).
 */
export function priceOf(table: PriceTable, model: string): { price: ModelPrice; listed: boolean; entry: string | null } {
  const entry = entryOf(table, model);
  const listed = entry === null ? undefined : table[entry];
  if (entry !== null && listed) return { price: listed, listed: true, entry };
  return { price: highestPrice(table), listed: false, entry: null };
}
