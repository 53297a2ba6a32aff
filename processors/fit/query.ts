// What a query names (FIT-4): a part by its key (a heading, a definition's name, a path,
// `<path>#<n>`, a top-level key, `[n]`), or a line range `a-b` of the text as read.
import type { Doc } from "./doc.ts";
import { headingKey } from "./markdown.ts";

export type Match =
  | { readonly kind: "part"; readonly index: number }
  | { readonly kind: "lines"; readonly from: number; readonly to: number }
  | { readonly kind: "none"; readonly why: string };

const RANGE = /^(?:lines?\s*)?(\d+)\s*(?:-|–|—|\.\.|:)\s*(\d+)$/i;
const ONE_LINE = /^lines?\s*(\d+)$/i;

/** A key or query in the form they are compared: marks and leading #s gone, lower case. */
export function normalize(s: string): string {
  if (/^[\w ./:@$-]*$/.test(s)) return s.trim().replace(/\s+/g, " ").toLowerCase();
  return headingKey(s.replace(/^\s*#+\s*/, ""));
}

function lineRange(doc: Doc, from: number, to: number, query: string): Match {
  if (from < 1 || to < from) return { kind: "none", why: `'${query}' is not a line range (lines count from 1, as in 120-180)` };
  if (from > doc.lines) return { kind: "none", why: `the ${doc.noun} has ${doc.lines} lines, so lines ${query} hold nothing` };
  return { kind: "lines", from, to: Math.min(to, doc.lines) };
}

/**
 * Matches a query: an exact key first, then a line range, then a path's tail, a key's
 * start, and a key that contains the query (not for a diff's paths); the first part in
 * document order wins a tier.
 */
export function matchQuery(doc: Doc, query: string): Match {
  const q = normalize(query);
  const parts = doc.parts;
  const norms = parts.map((p) => p.keys.map(normalize));
  for (let i = 0; i < parts.length; i++) {
    if (parts[i]!.keys.includes(query) || norms[i]!.includes(q)) return { kind: "part", index: i };
  }
  const range = RANGE.exec(query.trim());
  if (range !== null) return lineRange(doc, Number(range[1]), Number(range[2]), query.trim());
  const one = ONE_LINE.exec(query.trim());
  if (one !== null) return lineRange(doc, Number(one[1]), Number(one[1]), query.trim());
  if (q !== "") {
    // A path matches by its tail only (a.ts is not data.ts); headings, names and keys also by start, then anywhere.
    const tiers: ((key: string) => boolean)[] = [(k) => k.endsWith(`/${q}`)];
    if (doc.kind !== "diff") tiers.push((k) => q.length >= 2 && k.startsWith(q), (k) => q.length >= 3 && k.includes(q));
    for (const tier of tiers) {
      for (let i = 0; i < parts.length; i++) {
        if (norms[i]!.some(tier)) return { kind: "part", index: i };
      }
    }
  }
  if (/^\d+$/.test(query.trim())) {
    const n = Number(query.trim());
    return lineRange(doc, n, n, query.trim());
  }
  return { kind: "none", why: `nothing in the ${doc.noun} matches '${query}'` };
}
