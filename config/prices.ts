/**
 * An operator's prices file (`OZ0_PRICES`, docs/limits.md "Prices"): what each model charges,
 * in US dollars per million tokens, as the providers publish them, read into whole
 * micro-dollars per million tokens (the limits processors' unit) with no float drift.
 *
 * ```yaml
 * replace: false            # true: these models are the whole table; default false: they add to
 *                           # the platform's default table, and override its entries of the same name
 * models:
 *   gpt-4o:
 *     input_usd_per_mtok: 2.5
 *     output_usd_per_mtok: 10
 *     cache_read_usd_per_mtok: 1.25     # OpenAI: the cached input price
 *     cache_write_usd_per_mtok: 0       # OpenAI charges no cache writes
 *     max_output_tokens: 16384          # or 16k
 * ```
 */
import type { Parsed } from "./errors.ts";
import { readBoolean, readCount } from "./fields.ts";
import { YamlFile, type Value } from "./yaml-file.ts";

/** One model's prices in micro-dollars per million tokens, as `ModelPrice` (processors/limits/money.ts) reads them. */
export interface PriceEntry {
  readonly input: number;
  readonly output: number;
  readonly cache_read: number;
  readonly cache_write: number;
  readonly max_output_tokens: number;
}

export interface PricesFile {
  /** True: the file's models are the whole table. @default false (they add to the default table, overriding its entries of the same name) */
  readonly replace: boolean;
  readonly models: Readonly<Record<string, PriceEntry>>;
}

const FILE_KEYS = ["replace", "models"] as const;
const PRICE_KEYS = ["input_usd_per_mtok", "output_usd_per_mtok", "cache_read_usd_per_mtok", "cache_write_usd_per_mtok", "max_output_tokens"] as const;
const PRICE_HINTS = Object.fromEntries(PRICE_KEYS.map((k) => [k, "models.<model name>"]));

/** A model's name as providers write them: `gpt-4o`, `claude-sonnet-4-20250514`, `openai/gpt-4o`, `anthropic.claude-v2:1`. */
const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,255}$/;

/** Dollars per million tokens above which a price is taken for a mistake of unit (micro-dollars written as dollars, say). */
export const MAX_USD_PER_MTOK = 100_000;
const MICROS_PER_USD = 1_000_000n;

/**
 * `usd` dollars per million tokens as whole micro-dollars per million tokens, exactly: read from
 * the number's decimal digits, never multiplied as a float (2.5 → 2,500,000; 0.075 → 75,000;
 * 0.1 → 100,000). A price finer than a micro-dollar per million tokens, negative, or not a
 * finite number is refused with the reason.
 */
export function usdPerMtokToMicros(usd: number): { ok: true; value: number } | { ok: false; reason: string } {
  if (typeof usd !== "number" || !Number.isFinite(usd)) return { ok: false, reason: `expected US dollars per million tokens as a number, such as 2.5; got ${String(usd)}` };
  if (usd < 0) return { ok: false, reason: `expected a price of at least 0 US dollars per million tokens; got ${usd}` };
  if (usd > MAX_USD_PER_MTOK) return { ok: false, reason: `${usd} US dollars per million tokens is above ${MAX_USD_PER_MTOK}: prices are written in US dollars per million tokens (2.5 for $2.50), not micro-dollars` };
  // The shortest decimal that reads back as `usd` (JavaScript's own); below 1e-6 it is written with an exponent.
  const m = /^(\d+)(?:\.(\d+))?$/.exec(String(usd));
  const fraction = m?.[2] ?? "";
  if (m === null || fraction.length > 6) return { ok: false, reason: `${usd} is finer than a micro-dollar per million tokens; write at most 6 decimal places` };
  const micros = BigInt(m[1] ?? "0") * MICROS_PER_USD + BigInt(fraction.padEnd(6, "0"));
  return { ok: true, value: Number(micros) };
}

function readPrice(v: Value, what: string): number | undefined {
  if (v.absent) return v.fail(`is required: ${what} in US dollars per million tokens, such as 2.5 (0 when the provider charges nothing for it)`);
  const raw = v.scalar;
  if (typeof raw !== "number") return v.fail(`expected ${what} in US dollars per million tokens as a number, such as 2.5; got ${v.describe()}`);
  const micros = usdPerMtokToMicros(raw);
  if (!micros.ok) return v.fail(micros.reason);
  return micros.value;
}

function readModel(v: Value): PriceEntry | undefined {
  if (!v.isMapping) return v.fail(`expected a mapping of ${PRICE_KEYS.join(", ")}; got ${v.describe()}`);
  const fields = v.mapping(PRICE_KEYS);
  if (fields === undefined) return undefined;
  const input = readPrice(fields.get("input_usd_per_mtok"), "the price of input tokens");
  const output = readPrice(fields.get("output_usd_per_mtok"), "the price of output tokens");
  const cacheRead = readPrice(fields.get("cache_read_usd_per_mtok"), "the price of tokens read from the prompt cache (OpenAI: cached input)");
  const cacheWrite = readPrice(fields.get("cache_write_usd_per_mtok"), "the price of tokens written to the prompt cache (Anthropic: the 5-minute write; OpenAI: 0)");
  const maxOutputValue = fields.get("max_output_tokens");
  const maxOutput = maxOutputValue.absent
    ? maxOutputValue.fail("is required: the most one request of the model can answer, in tokens, such as 16384 or 64k (the worst case of a call that sets no cap)")
    : readCount(maxOutputValue, { min: 1, what: "the most one request of the model can answer, in tokens" });
  if (input === undefined || output === undefined || cacheRead === undefined || cacheWrite === undefined || maxOutput === undefined) return undefined;
  return Object.freeze({ input, output, cache_read: cacheRead, cache_write: cacheWrite, max_output_tokens: maxOutput });
}

/** Parses a prices file; every error of the file at once, each naming its field and line. */
export function parsePrices(yamlText: string, path: string): Parsed<PricesFile> {
  const file = new YamlFile(path, yamlText);
  if (!file.syntaxOk) return file.failed();
  const root = file.root();
  if (root.absent) {
    root.fail("the file is empty; a prices file is a mapping with models (and replace: true to replace the default table)");
    return file.failed();
  }
  const fields = root.mapping(FILE_KEYS, PRICE_HINTS);
  if (fields === undefined) return file.failed();
  const replace = readBoolean(fields.get("replace")) ?? false;
  const modelsValue = fields.get("models");
  const models: Record<string, PriceEntry> = {};
  if (modelsValue.absent) {
    modelsValue.fail("is required: a mapping of model name to its prices, such as {gpt-4o: {input_usd_per_mtok: 2.5, ...}}");
  } else if (!modelsValue.isMapping) {
    modelsValue.fail(`expected a mapping of model name to its prices; got ${modelsValue.describe()}`);
  } else {
    for (const name of Object.keys(modelsValue.toJS() as Record<string, unknown>)) {
      const v = modelsValue.child(name);
      if (!MODEL_NAME.test(name)) {
        v.fail(`"${name}" is not a model name: letters, digits and . _ : / @ + -, starting with a letter or digit, at most 256 characters`);
        continue;
      }
      const entry = readModel(v);
      if (entry !== undefined) models[name] = entry;
    }
    if (replace && Object.keys(modelsValue.toJS() as Record<string, unknown>).length === 0) {
      modelsValue.fail("lists no model, and replace: true would leave no price at all; list the models, or leave out replace to add to the default table");
    }
  }
  return file.finish({ replace, models: Object.freeze(models) });
}
