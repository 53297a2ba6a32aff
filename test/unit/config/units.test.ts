import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  formatBytes,
  formatCount,
  formatDuration,
  parseBytes,
  parseCount,
  parseDuration,
  tryParseBytes,
  tryParseCount,
  tryParseDuration,
  UnitError,
} from "../../../config/units.ts";

function reasonOf(result: { ok: true } | { ok: false; reason: string }): string {
  if (result.ok) throw new Error("expected a failure");
  return result.reason;
}

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

describe("durations", () => {
  it("LIM-1 timeouts read as the seed writes them: 90s, 10m, 1h30m", () => {
    expect(parseDuration("90s")).toBe(90 * SECOND);
    expect(parseDuration("10m")).toBe(10 * MINUTE);
    expect(parseDuration("1h30m")).toBe(HOUR + 30 * MINUTE);
  });

  it("reads hours, days, milliseconds and fractions", () => {
    expect(parseDuration("8h")).toBe(8 * HOUR);
    expect(parseDuration("2h")).toBe(2 * HOUR);
    expect(parseDuration("500ms")).toBe(500);
    expect(parseDuration("1d")).toBe(24 * HOUR);
    expect(parseDuration("1d2h3m4s5ms")).toBe(24 * HOUR + 2 * HOUR + 3 * MINUTE + 4 * SECOND + 5);
    expect(parseDuration("1.5h")).toBe(90 * MINUTE);
    expect(parseDuration(" 90m ")).toBe(90 * MINUTE);
    expect(parseDuration("0")).toBe(0);
  });

  it("says which part of a garbled duration is wrong and what was expected", () => {
    const reason = reasonOf(tryParseDuration("1h90x"));
    expect(reason).toContain('"1h90x" is not a duration');
    expect(reason).toContain('"x" is not a unit');
    expect(reason).toContain("such as 90s, 10m or 1h30m");
  });

  it("refuses a number without a unit, suggesting one", () => {
    expect(reasonOf(tryParseDuration("90"))).toBe('"90" has no unit; write 90s for seconds or 90m for minutes');
  });

  it("refuses empty, negative, out-of-order and unit-less parts", () => {
    expect(reasonOf(tryParseDuration(""))).toContain("nothing is written");
    expect(reasonOf(tryParseDuration("-5s"))).toContain("is negative");
    expect(reasonOf(tryParseDuration("30m1h"))).toContain("from largest to smallest");
    expect(reasonOf(tryParseDuration("1h1h"))).toContain("each once");
    expect(reasonOf(tryParseDuration("h"))).toContain('expected a number at "h"');
    expect(reasonOf(tryParseDuration("1h30"))).toContain("30 at the end has no unit");
    expect(reasonOf(tryParseDuration("0.5ms"))).toContain("not a whole number of milliseconds");
    expect(reasonOf(tryParseDuration("99999999999d"))).toContain("too large");
  });

  it("throws the reason as a UnitError from parseDuration", () => {
    expect(() => parseDuration("soon")).toThrow(UnitError);
    expect(() => parseDuration("soon")).toThrow(/"soon" is not a duration/);
  });

  it("formats the canonical form: largest units first", () => {
    expect(formatDuration(90 * SECOND)).toBe("1m30s");
    expect(formatDuration(HOUR + 30 * MINUTE)).toBe("1h30m");
    expect(formatDuration(36 * HOUR)).toBe("1d12h");
    expect(formatDuration(0)).toBe("0s");
    expect(formatDuration(1)).toBe("1ms");
    expect(() => formatDuration(-1)).toThrow(RangeError);
  });

  it("parses what it formats, for every number of milliseconds", () => {
    fc.assert(fc.property(fc.maxSafeNat(), (ms) => parseDuration(formatDuration(ms)) === ms));
  });

  it("formats what it parses, for every canonical duration", () => {
    const part = (max: number) => fc.option(fc.integer({ min: 1, max }), { nil: undefined });
    const canonical = fc
      .tuple(part(10_000), part(23), part(59), part(59), part(999))
      .filter((parts) => parts.some((p) => p !== undefined))
      .map(([d, h, m, s, ms]) =>
        [d === undefined ? "" : `${d}d`, h === undefined ? "" : `${h}h`, m === undefined ? "" : `${m}m`, s === undefined ? "" : `${s}s`, ms === undefined ? "" : `${ms}ms`].join(""),
      );
    fc.assert(fc.property(canonical, (text) => formatDuration(parseDuration(text)) === text));
  });
});

describe("counts", () => {
  it("LIM-1 max_output_tokens 4k is 4,000 tokens", () => {
    expect(parseCount("4k")).toBe(4_000);
  });

  it("reads digits, separators, thousands and millions", () => {
    expect(parseCount("200000")).toBe(200_000);
    expect(parseCount("2_000_000")).toBe(2_000_000);
    expect(parseCount("2M")).toBe(2_000_000);
    expect(parseCount("2m")).toBe(2_000_000);
    expect(parseCount("1.5k")).toBe(1_500);
    expect(parseCount("4K")).toBe(4_000);
  });

  it("refuses garbage with what was expected", () => {
    expect(reasonOf(tryParseCount("4kb"))).toContain('"kb" is not a suffix; expected a whole number, optionally with k (thousands) or M (millions)');
    expect(reasonOf(tryParseCount("k"))).toContain('"k" is not a count');
    expect(reasonOf(tryParseCount("1.2345k"))).toContain("is not a whole number");
    expect(reasonOf(tryParseCount("-4k"))).toContain("is negative");
    expect(() => parseCount("lots")).toThrow(UnitError);
  });

  it("formats whole thousands and millions with a suffix", () => {
    expect(formatCount(4_000)).toBe("4k");
    expect(formatCount(2_000_000)).toBe("2M");
    expect(formatCount(1_500)).toBe("1500");
    expect(formatCount(0)).toBe("0");
  });

  it("round trips every count, and every canonical count text", () => {
    fc.assert(fc.property(fc.maxSafeNat(), (n) => parseCount(formatCount(n)) === n));
    fc.assert(fc.property(fc.maxSafeNat(), (n) => formatCount(parseCount(formatCount(n))) === formatCount(n)));
  });
});

describe("byte sizes", () => {
  it("reads binary and decimal units", () => {
    expect(parseBytes("32MiB")).toBe(32 * 2 ** 20);
    expect(parseBytes("32 MiB")).toBe(32 * 2 ** 20);
    expect(parseBytes("4KiB")).toBe(4_096);
    expect(parseBytes("1.5KiB")).toBe(1_536);
    expect(parseBytes("1MB")).toBe(1_000_000);
    expect(parseBytes("1500")).toBe(1_500);
    expect(parseBytes("1500B")).toBe(1_500);
  });

  it("refuses an unknown unit, with a did-you-mean", () => {
    expect(reasonOf(tryParseBytes("32mib"))).toContain('"mib" is not a unit (did you mean MiB?)');
    expect(reasonOf(tryParseBytes("0.3B"))).toContain("not a whole number of bytes");
  });

  it("formats the largest binary unit that divides the size", () => {
    expect(formatBytes(32 * 2 ** 20)).toBe("32MiB");
    expect(formatBytes(31 * 2 ** 20)).toBe("31MiB");
    expect(formatBytes(1_500)).toBe("1500B");
  });

  it("round trips every size, and every canonical size text", () => {
    fc.assert(fc.property(fc.maxSafeNat(), (n) => parseBytes(formatBytes(n)) === n));
    fc.assert(fc.property(fc.maxSafeNat(), (n) => formatBytes(parseBytes(formatBytes(n))) === formatBytes(n)));
  });
});
