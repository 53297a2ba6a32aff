/**
 * The loop detector's hot paths (canonical JSON, the arguments digest, the call window and the
 * cycle search) give exactly what the plain walks they replaced gave: the plain walks are
 * written out here and compared on generated inputs, so a faster path never moves a decision.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseArguments } from "../../../processors/call-arguments.ts";
import { EMPTY_CALL_STATE, callWindow, watchCall, type CallState, type CallThresholds, type LoopFound } from "../../../processors/loops/call-detector.ts";
import { argumentsDigest, callSignature, canonicalJson } from "../../../processors/loops/digest.ts";

/** Canonical JSON as the general walk writes it. */
function plainCanonical(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(plainCanonical).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${plainCanonical(v)}`).join(",")}}`;
}

/** The same value with every object's keys inserted in ascending order (the fast path's case). */
function sortedKeys(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(sortedKeys);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort()) out[k] = sortedKeys((value as Record<string, unknown>)[k]);
  return out;
}

/** The detector's step for an agent's call, written with copies and slices. */
function plainWatch(state: CallState, signature: string, t: CallThresholds): { state: CallState; loop: LoopFound | null } {
  const streak = state.streak?.signature === signature ? { signature, count: state.streak.count + 1 } : { signature, count: 1 };
  const recent = [...state.recent, signature].slice(-callWindow(t));
  const count = recent.filter((s) => s === signature).length;
  if (count >= t.repeats) return { state: { recent, streak }, loop: { detector: "repeats", calls: Array<string>(count).fill(signature), count } };
  for (let length = 2; length <= 4; length++) {
    const span = length * t.cycles;
    if (recent.length < span) break;
    const tail = recent.slice(-span);
    const sequence = tail.slice(0, length);
    if (new Set(sequence).size < 2) continue;
    if (tail.every((s, i) => s === sequence[i % length])) return { state: { recent, streak }, loop: { detector: "cycles", calls: tail, count: t.cycles } };
  }
  return { state: { recent, streak }, loop: null };
}

describe("loop detector hot paths: the same answers as the plain walks", () => {
  it("LOOP-1 canonical JSON is the same text as the general walk, with keys in order or not", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(canonicalJson(v)).toBe(plainCanonical(v));
        const sorted = sortedKeys(v);
        expect(canonicalJson(sorted)).toBe(plainCanonical(sorted));
        const parsed: unknown = JSON.parse(JSON.stringify(v));
        expect(canonicalJson(parsed)).toBe(plainCanonical(parsed));
      }),
      { numRuns: 500 },
    );
  });

  it("LOOP-1 canonical JSON sorts integer-like keys as text, which JSON.stringify does not", () => {
    const v = JSON.parse('{"10":1,"9":2,"a":{"2":[{"y":1,"x":null}],"1":true}}') as unknown;
    expect(JSON.stringify(v)).toBe('{"9":2,"10":1,"a":{"1":true,"2":[{"y":1,"x":null}]}}');
    expect(canonicalJson(v)).toBe('{"10":1,"9":2,"a":{"1":true,"2":[{"x":null,"y":1}]}}');
    expect(canonicalJson({ b: undefined, a: [undefined, 1] })).toBe(plainCanonical({ b: undefined, a: [undefined, 1] }));
  });

  it("LOOP-1 the arguments digest is the same from the text or from arguments parsed before", () => {
    const texts = ['{"path":"docs/a.md","page":2,"budget":2000}', '{"budget":2000,"page":2,"path":"docs/a.md"}', '{"q":{"b":1,"a":[1,{"y":2}]}}', "not json", "[1,2]", "{}"];
    for (const text of texts) {
      const parsed = parseArguments(text);
      const expected = createHash("sha256")
        .update(typeof parsed === "string" ? text : plainCanonical(parsed))
        .digest("hex")
        .slice(0, 16);
      expect(argumentsDigest(text)).toBe(expected);
      expect(argumentsDigest(text, parsed)).toBe(expected);
      const call = { plugin: "p", tool: "t", function: "f", arguments: text };
      expect(callSignature(call, parsed)).toBe(`p/t/f#${expected}`);
    }
  });

  it("LOOP-2 LOOP-3 the detector finds the same repeats and cycles, call by call, as the plain walk", () => {
    const thresholds = fc.record({ repeats: fc.integer({ min: 2, max: 40 }), cycles: fc.integer({ min: 1, max: 12 }) });
    fc.assert(
      fc.property(thresholds, fc.array(fc.constantFrom("a", "b", "c", "d", "e"), { maxLength: 120 }), (t, calls) => {
        let fast: CallState = EMPTY_CALL_STATE;
        let plain: CallState = EMPTY_CALL_STATE;
        for (const signature of calls) {
          const a = watchCall(fast, { signature, harness: false }, t);
          const b = plainWatch(plain, signature, t);
          expect(a).toEqual(b);
          fast = a.state;
          plain = b.state;
        }
      }),
      { numRuns: 300 },
    );
  });
});
