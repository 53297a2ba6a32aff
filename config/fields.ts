/**
 * Typed readers of single values. Each answers the value, or undefined when it was left out or
 * wrong; a wrong value is reported on the file with what was expected. Left out is never an
 * error here: required fields are checked with `required`.
 */
import { closest } from "./suggest.ts";
import { formatDuration, tryParseCount, tryParseDuration } from "./units.ts";
import type { Value } from "./yaml-file.ts";

/** Names of agents, tenants, plugins, tools and functions: `acme-reviewer`, `acme_docs`, `oz.read_result`. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const ID_RULE = "letters, digits and . _ -, starting with a letter or digit, at most 128 characters";

export function required<T>(v: Value, read: (v: Value) => T | undefined, what: string): T | undefined {
  if (v.absent) return v.fail(`is required: ${what}`);
  return read(v);
}

export function readText(v: Value, what: string): string | undefined {
  if (v.absent) return undefined;
  const s = v.scalar;
  if (typeof s !== "string" || s.trim() === "") return v.fail(`expected ${what}; got ${v.describe()}`);
  return s;
}

export function readId(v: Value, what: string): string | undefined {
  const s = readText(v, what);
  if (s === undefined) return undefined;
  if (!ID_PATTERN.test(s)) return v.fail(`"${s}" is not a valid name: ${ID_RULE}`);
  return s;
}

/** A list of names, each at most once. */
export function readIdList(v: Value, what: string): string[] | undefined {
  const items = v.list(what);
  if (items === undefined) return undefined;
  const out: string[] = [];
  for (const item of items) {
    const id = readId(item, what);
    if (id === undefined) {
      if (item.absent) item.fail(`expected ${what}; got nothing`);
      continue;
    }
    if (out.includes(id)) item.fail(`"${id}" is listed twice`);
    else out.push(id);
  }
  return out;
}

export function readBoolean(v: Value): boolean | undefined {
  if (v.absent) return undefined;
  const s = v.scalar;
  if (typeof s !== "boolean") return v.fail(`expected true or false; got ${v.describe()}`);
  return s;
}

export interface WholeRule {
  readonly min: number;
  readonly what: string;
}

/** A whole number written as a number (`3`), at least `min`. */
export function readWhole(v: Value, rule: WholeRule): number | undefined {
  if (v.absent) return undefined;
  const n = v.scalar;
  if (typeof n !== "number" || !Number.isSafeInteger(n)) return v.fail(`expected a whole number (${rule.what}); got ${v.describe()}`);
  if (n < rule.min) return v.fail(`expected a whole number of at least ${rule.min} (${rule.what}); got ${n}`);
  return n;
}

/** A count written as a number (`200000`) or with a suffix (`4k`, `2M`), at least `min`. */
export function readCount(v: Value, rule: WholeRule): number | undefined {
  if (v.absent) return undefined;
  const raw = v.scalar;
  let n: number;
  if (typeof raw === "number") {
    if (!Number.isSafeInteger(raw)) return v.fail(`expected ${rule.what}, a whole number such as 4k or 200000; got ${raw}`);
    n = raw;
  } else if (typeof raw === "string") {
    const parsed = tryParseCount(raw);
    if (!parsed.ok) return v.fail(parsed.reason);
    n = parsed.value;
  } else {
    return v.fail(`expected ${rule.what}, a whole number such as 4k or 200000; got ${v.describe()}`);
  }
  if (n < rule.min) return v.fail(`expected a whole number of at least ${rule.min} (${rule.what}); got ${n}`);
  return n;
}

/** Milliseconds of a duration such as `90s`, `10m`, `1h30m`; at least `min` milliseconds. */
export function readDuration(v: Value, rule: WholeRule): number | undefined {
  if (v.absent) return undefined;
  const raw = v.scalar;
  if (typeof raw !== "string" && typeof raw !== "number") {
    return v.fail(`expected ${rule.what}, a duration such as 90s, 10m or 1h30m; got ${v.describe()}`);
  }
  const parsed = tryParseDuration(String(raw));
  if (!parsed.ok) return v.fail(parsed.reason);
  if (parsed.value < rule.min) {
    const bound = rule.min <= 1 ? "longer than 0" : `of at least ${formatDuration(rule.min)}`;
    return v.fail(`expected ${rule.what} ${bound}; got "${raw}"`);
  }
  return parsed.value;
}

/** An amount of US dollars above 0, written as a number (`2.0`) or with its sign (`"$2.0"`). */
export function readMoney(v: Value, what: string): number | undefined {
  if (v.absent) return undefined;
  const raw = v.scalar;
  const n = typeof raw === "string" && /^\s*\$\s*\d+(\.\d+)?\s*$/.test(raw) ? Number(raw.replace(/[\s$]/g, "")) : raw;
  if (typeof n !== "number" || !Number.isFinite(n)) return v.fail(`expected ${what} as a number, such as 2.0 or "$2.0"; got ${v.describe()}`);
  if (n <= 0) return v.fail(`expected ${what} above 0; got ${n}`);
  return n;
}

/** A share above 0 and at most 1, written as a fraction (`0.8`) or a percentage (`80%`); answered as the fraction. */
export function readShare(v: Value, what: string): number | undefined {
  if (v.absent) return undefined;
  const raw = v.scalar;
  const expected = `expected ${what} as a fraction such as 0.8 or a percentage such as 80%`;
  let share: number;
  if (typeof raw === "number") {
    if (raw > 1 && raw <= 100) return v.fail(`${expected}; got ${raw} (write ${raw}% or ${raw / 100})`);
    share = raw;
  } else if (typeof raw === "string") {
    const m = /^\s*(\d+(?:\.\d+)?)\s*%\s*$/.exec(raw);
    if (m === null) return v.fail(`${expected}; got ${v.describe()}`);
    share = Number(m[1]) / 100;
  } else {
    return v.fail(`${expected}; got ${v.describe()}`);
  }
  if (!(share > 0 && share <= 1)) return v.fail(`${expected}, above 0 and at most 100%; got ${v.describe()}`);
  return share;
}

export function readChoice<T extends string>(v: Value, choices: readonly T[]): T | undefined {
  if (v.absent) return undefined;
  const raw = v.scalar;
  if (typeof raw === "string" && (choices as readonly string[]).includes(raw)) return raw as T;
  const near = typeof raw === "string" ? closest(raw, choices) : undefined;
  const hint = near === undefined ? "" : ` (did you mean "${near}"?)`;
  return v.fail(`expected one of ${choices.join(", ")}; got ${v.describe()}${hint}`);
}

/** The object without its undefined properties, so records and JSON show only what was written. */
export function withoutUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, value]) => value !== undefined)) as T;
}
