/**
 * Units as the seeds write them: durations (`90s`, `10m`, `1h30m`, `500ms`, `1d`) in
 * milliseconds, counts (`4k`, `2M`, `200000`) and byte sizes (`32MiB`, `4KiB`, `1MB`).
 *
 * Every parser has two forms: `tryParseX` answers a result with a reason a person can act on,
 * `parseX` throws that reason as a `UnitError`. `formatX` writes the canonical form, so
 * `formatX(parseX(s)) === s` for a canonical `s` and `parseX(formatX(n)) === n` for every
 * value. `none`, `off` and friends mean different things per field, so callers handle them.
 */
import { closest } from "./suggest.ts";
import { Oz0Error } from "../lib/errors.ts";

export type UnitResult = { readonly ok: true; readonly value: number } | { readonly ok: false; readonly reason: string };

export class UnitError extends Oz0Error {
  override readonly name = "UnitError";
  readonly reason: string;
  constructor(reason: string) {
    super(reason);
    this.reason = reason;
  }
}

const ok = (value: number): UnitResult => ({ ok: true, value });
const fail = (reason: string): UnitResult => ({ ok: false, reason });

function orThrow(result: UnitResult): number {
  if (!result.ok) throw new UnitError(result.reason);
  return result.value;
}

/** `whole.fraction × factor` exactly, or undefined when that is not a whole number. */
function scale(whole: string, fraction: string, factor: number): bigint | undefined {
  const denominator = 10n ** BigInt(fraction.length);
  const numerator = (BigInt(whole) * denominator + BigInt(fraction === "" ? "0" : fraction)) * BigInt(factor);
  return numerator % denominator === 0n ? numerator / denominator : undefined;
}

function safe(total: bigint, text: string): UnitResult {
  return total <= BigInt(Number.MAX_SAFE_INTEGER) ? ok(Number(total)) : fail(`"${text}" is too large`);
}

function assertFormattable(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${what} must be a whole number of at least 0, got ${n}`);
}

// ---- durations ---------------------------------------------------------------------------

/** Largest first: the order a duration's parts must be written in. */
const DURATION_UNITS: readonly (readonly [string, number])[] = [
  ["d", 86_400_000],
  ["h", 3_600_000],
  ["m", 60_000],
  ["s", 1_000],
  ["ms", 1],
];
const DURATION_EXPECTED = "expected a duration such as 90s, 10m or 1h30m (units d, h, m, s, ms)";

/** Milliseconds of a duration such as `90s`, `10m`, `1h30m`, `500ms` or `1d`; `0` alone is 0. */
export function tryParseDuration(text: string): UnitResult {
  const s = text.trim();
  if (s === "") return fail(`nothing is written; ${DURATION_EXPECTED}`);
  if (s.startsWith("-")) return fail(`"${s}" is negative; ${DURATION_EXPECTED}`);
  if (/^\d+(\.\d+)?$/.test(s)) {
    return Number(s) === 0 ? ok(0) : fail(`"${s}" has no unit; write ${s}s for seconds or ${s}m for minutes`);
  }
  const part = /(\d+)(?:\.(\d+))?([^\d.]*)/y;
  let total = 0n;
  let previousRank = -1;
  let pos = 0;
  while (pos < s.length) {
    part.lastIndex = pos;
    const m = part.exec(s);
    if (m === null) return fail(`"${s}" is not a duration: expected a number at "${s.slice(pos)}"; ${DURATION_EXPECTED}`);
    const [all, whole = "", fraction = "", unit = ""] = m;
    const rank = DURATION_UNITS.findIndex(([name]) => name === unit);
    const factor = DURATION_UNITS[rank]?.[1];
    if (unit === "") return fail(`"${s}" is not a duration: ${whole} at the end has no unit; ${DURATION_EXPECTED}`);
    if (factor === undefined) {
      return fail(`"${s}" is not a duration: "${unit}" is not a unit; ${DURATION_EXPECTED}`);
    }
    if (rank <= previousRank) {
      return fail(`"${s}" is not a duration: write units from largest to smallest, each once, such as 1h30m`);
    }
    const ms = scale(whole, fraction, factor);
    if (ms === undefined) return fail(`"${s}" is not a duration: ${whole}.${fraction}${unit} is not a whole number of milliseconds`);
    total += ms;
    previousRank = rank;
    pos += all.length;
  }
  return safe(total, s);
}

export function parseDuration(text: string): number {
  return orThrow(tryParseDuration(text));
}

/** The canonical form: largest units first, each part below the next unit up (`5400000` → `1h30m`), `0s` for 0. */
export function formatDuration(ms: number): string {
  assertFormattable(ms, "a duration");
  if (ms === 0) return "0s";
  let rest = ms;
  let out = "";
  for (const [unit, factor] of DURATION_UNITS) {
    const n = Math.floor(rest / factor);
    if (n > 0) {
      out += `${n}${unit}`;
      rest -= n * factor;
    }
  }
  return out;
}

// ---- counts (tokens, calls) ----------------------------------------------------------------

const COUNT_SUFFIXES: Readonly<Record<string, number>> = { "": 1, k: 1_000, K: 1_000, m: 1_000_000, M: 1_000_000 };
const COUNT_EXPECTED = "expected a whole number, optionally with k (thousands) or M (millions), such as 4k, 2M or 200000";

/** A count such as `200000`, `200_000`, `4k`, `1.5k` or `2M` (k = 1,000, M = 1,000,000). */
export function tryParseCount(text: string): UnitResult {
  const s = text.trim();
  if (s === "") return fail(`nothing is written; ${COUNT_EXPECTED}`);
  if (s.startsWith("-")) return fail(`"${s}" is negative; ${COUNT_EXPECTED}`);
  const m = /^(\d(?:_?\d)*)(?:\.(\d+))?([A-Za-z]*)$/.exec(s);
  if (m === null) return fail(`"${s}" is not a count; ${COUNT_EXPECTED}`);
  const [, whole = "", fraction = "", suffix = ""] = m;
  const factor = COUNT_SUFFIXES[suffix];
  if (factor === undefined) return fail(`"${s}" is not a count: "${suffix}" is not a suffix; ${COUNT_EXPECTED}`);
  const n = scale(whole.replaceAll("_", ""), fraction, factor);
  if (n === undefined) return fail(`"${s}" is not a whole number; ${COUNT_EXPECTED}`);
  return safe(n, s);
}

export function parseCount(text: string): number {
  return orThrow(tryParseCount(text));
}

/** The canonical form: `2M` for whole millions, `4k` for whole thousands, else the digits. */
export function formatCount(n: number): string {
  assertFormattable(n, "a count");
  if (n !== 0 && n % 1_000_000 === 0) return `${n / 1_000_000}M`;
  if (n !== 0 && n % 1_000 === 0) return `${n / 1_000}k`;
  return String(n);
}

// ---- byte sizes ----------------------------------------------------------------------------

const BINARY_UNITS: readonly (readonly [string, number])[] = [
  ["TiB", 2 ** 40],
  ["GiB", 2 ** 30],
  ["MiB", 2 ** 20],
  ["KiB", 2 ** 10],
];
const BYTE_UNITS: Readonly<Record<string, number>> = {
  "": 1,
  B: 1,
  ...Object.fromEntries(BINARY_UNITS),
  kB: 1_000,
  KB: 1_000,
  MB: 1_000_000,
  GB: 1_000_000_000,
  TB: 1_000_000_000_000,
};
const BYTES_EXPECTED = "expected a size such as 32MiB, 512KiB or 1048576 (units B, KiB, MiB, GiB, TiB, and kB, MB, GB, TB of 1000)";

/** Bytes of a size such as `32MiB`, `32 MiB`, `1.5KiB`, `2MB` (decimal) or `1048576`. */
export function tryParseBytes(text: string): UnitResult {
  const s = text.trim();
  if (s === "") return fail(`nothing is written; ${BYTES_EXPECTED}`);
  if (s.startsWith("-")) return fail(`"${s}" is negative; ${BYTES_EXPECTED}`);
  const m = /^(\d(?:_?\d)*)(?:\.(\d+))? ?([A-Za-z]*)$/.exec(s);
  if (m === null) return fail(`"${s}" is not a size; ${BYTES_EXPECTED}`);
  const [, whole = "", fraction = "", unit = ""] = m;
  const factor = BYTE_UNITS[unit];
  if (factor === undefined) {
    const near = closest(unit, Object.keys(BYTE_UNITS).filter((u) => u !== ""));
    const hint = near === undefined ? "" : ` (did you mean ${near}?)`;
    return fail(`"${s}" is not a size: "${unit}" is not a unit${hint}; ${BYTES_EXPECTED}`);
  }
  const n = scale(whole.replaceAll("_", ""), fraction, factor);
  if (n === undefined) return fail(`"${s}" is not a whole number of bytes; ${BYTES_EXPECTED}`);
  return safe(n, s);
}

export function parseBytes(text: string): number {
  return orThrow(tryParseBytes(text));
}

/** The canonical form: the largest binary unit that divides the size (`32MiB`), else bytes (`1500B`). */
export function formatBytes(n: number): string {
  assertFormattable(n, "a size");
  for (const [unit, factor] of BINARY_UNITS) {
    if (n !== 0 && n % factor === 0) return `${n / factor}${unit}`;
  }
  return `${n}B`;
}
