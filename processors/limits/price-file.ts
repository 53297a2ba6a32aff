/**
 * The price table the pipeline runs with: the platform's default (prices.ts), or an
 * operator's prices file named by `OZ0_PRICES`, read and validated when the pipeline starts.
 * A file with any error stops the start with every error, each naming its field and line: the
 * pipeline never runs with prices it could not read.
 */
import { readFile } from "node:fs/promises";
import { ConfigError } from "../../config/errors.ts";
import { parsePrices, type PricesFile } from "../../config/prices.ts";
import type { Env } from "../runner/settings.ts";
import { DEFAULT_PRICES, type PriceTable } from "./prices.ts";
import { Oz0Error } from "../../lib/errors.ts";

/** Thrown when the prices file cannot be used: its message lists every error, one a line. */
export class PricesFileError extends Oz0Error {
  override readonly name = "PricesFileError";
  readonly errors: readonly ConfigError[];

  constructor(path: string, errors: readonly ConfigError[]) {
    super(`OZ0_PRICES=${path} cannot be used; the pipeline does not start with prices it could not read:\n${errors.map((e) => `  ${e.message}`).join("\n")}`);
    this.errors = errors;
  }
}

/** The table a file makes: its models alone (`replace: true`), else the default's with the file's added and overriding. */
export function applyPrices(file: PricesFile, defaults: PriceTable = DEFAULT_PRICES): PriceTable {
  return Object.freeze(file.replace ? { ...file.models } : { ...defaults, ...file.models });
}

/** Reads and validates the prices file at `path`; throws PricesFileError with every error it finds. */
export async function loadPrices(path: string, defaults: PriceTable = DEFAULT_PRICES): Promise<PriceTable> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : `cannot be read: ${(err as Error).message}`;
    throw new PricesFileError(path, [new ConfigError({ path, field: "", reason })]);
  }
  const parsed = parsePrices(text, path);
  if (!parsed.ok) throw new PricesFileError(path, parsed.errors);
  return applyPrices(parsed.value, defaults);
}

/** The table `OZ0_PRICES` names, else the default one (unset or blank). */
export async function pricesFromEnv(env: Env = process.env): Promise<PriceTable> {
  const path = env.OZ0_PRICES?.trim();
  if (!path) return DEFAULT_PRICES;
  return loadPrices(path);
}
