/**
 * The arguments of oz.read_result (OFF-6), or what is wrong with them in words the model can
 * act on. A mistake here is the model's, not the runtime's: it is answered as a failed call,
 * never dead-lettered.
 */
import { REF_PREFIX } from "../../store/objects.ts";
import { fitArguments } from "../fit-results/processor.ts";

export interface ReadArguments {
  readonly ref: string;
  readonly view?: "stub" | "summary" | "section" | "full";
  readonly budget?: number;
  /** What names the part to read, as the fit library takes it: a section, `lines a-b`, or the query. */
  readonly query?: string;
  /** Which argument named the part. */
  readonly by?: "section" | "range" | "query";
}

const REF = /^oz0-file:sha256:[0-9a-f]{64}$/;
const RANGE = /^(?:lines?\s*)?(\d+)\s*(?:-|–|—|\.\.|:)\s*(\d+)$/i;
const ONE_LINE = /^(?:lines?\s*)?(\d+)$/i;

function shown(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 100 ? `${s.slice(0, 100)}…` : s;
}

/** `120-180` (also `lines 120-180`, `120..180`, one line `120`) as 1-based first and last line, or why not. */
export function parseRange(range: unknown): { from: number; to: number } | { error: string } {
  const text = typeof range === "number" && Number.isInteger(range) ? String(range) : typeof range === "string" ? range.trim() : null;
  const bad = `range must be lines of the result as read, first and last counted from 1, such as 120-180; the call gave ${shown(range)}`;
  if (text === null) return { error: bad };
  const m = RANGE.exec(text);
  const one = m === null ? ONE_LINE.exec(text) : null;
  const from = Number(m?.[1] ?? one?.[1] ?? NaN);
  const to = Number(m?.[2] ?? one?.[1] ?? NaN);
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 1 || to < from) return { error: bad };
  return { from, to };
}

/** The call's arguments, or what is wrong with them. */
export function readArguments(args: Record<string, unknown>): ReadArguments | { error: string } {
  const { ref, section, range, query } = args;
  if (ref === undefined || ref === null || ref === "") return { error: `read_result needs ref: the ${REF_PREFIX}<hex> an offloaded result's stub names` };
  if (typeof ref !== "string" || !REF.test(ref.trim())) return { error: `ref must be ${REF_PREFIX} followed by 64 hex digits, as the stub names it; the call gave ${shown(ref)}` };
  const fitted = fitArguments({ view: args.view, budget: args.budget });
  if ("error" in fitted) return fitted;
  const named = (["section", "range", "query"] as const).filter((k) => args[k] !== undefined && args[k] !== null && args[k] !== "");
  if (named.length > 1) return { error: `give one of section, range and query, each names the part to read; the call gave ${named.join(" and ")}` };
  const out = { ref: ref.trim(), ...fitted };
  const by = named[0];
  if (by === undefined) return out;
  if (by === "section") {
    if (typeof section !== "string" || section.trim() === "") return { error: `section must be text: a heading, a top-level key or an item such as [3]; the call gave ${shown(section)}` };
    return { ...out, query: section.trim(), by };
  }
  if (by === "range") {
    const r = parseRange(range);
    if ("error" in r) return r;
    return { ...out, query: `lines ${r.from}-${r.to}`, by };
  }
  const q = fitArguments({ query });
  if ("error" in q) return q;
  return q.query === undefined ? out : { ...out, query: q.query, by };
}
