// The four views of a document and how an answer falls from one to the next (FIT-1..FIT-13).
//
// Sizes come from the parts' units (each part counted once when the document was split):
// a section's size is the sum of its parts', an outline's the sum of its lines'. Only the
// text finally returned is measured again, and it is never longer than the character bound.
import { scan, tokensOf, weighUnits } from "./count.ts";
import type { Doc } from "./doc.ts";
import { type Bounds, boundsOf, queryOf, viewOf } from "./limits.ts";
import { proseSentence } from "./markdown.ts";
import { type Match, matchQuery } from "./query.ts";
import { cut } from "./sentence.ts";
import type { FitNote, FitOptions, Fitted, Reason, View } from "./types.ts";

/** What a query may name, by kind, for the notes that say how to ask for more. */
const ASK_FOR: Record<Doc["kind"], string> = {
  markdown: "a heading",
  code: "a definition's name",
  diff: "a path, <path>#<n> for its n-th hunk",
  json: "a top-level key or an item such as [0]",
  text: "a line range",
};

/** Derived facts about a document's parts, computed once per answer. */
type Layout = {
  /** ends[i]: the index after part i's section. */
  readonly ends: Int32Array;
  /** prefix[i]: units of parts [0, i). */
  readonly prefix: Float64Array;
};

function layoutOf(doc: Doc): Layout {
  const n = doc.parts.length;
  const ends = new Int32Array(n);
  const stack: number[] = [];
  for (let i = 0; i < n; i++) {
    const level = doc.parts[i]!.level;
    while (stack.length > 0 && doc.parts[stack[stack.length - 1]!]!.level >= level) ends[stack.pop()!] = i;
    stack.push(i);
  }
  for (const i of stack) ends[i] = n;
  const prefix = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) prefix[i + 1] = prefix[i]! + doc.parts[i]!.units;
  return { ends, prefix };
}

/** 1-based first and last line of parts [from, to). */
function partLines(doc: Doc, from: number, to: number): [number, number] {
  const first = doc.parts[from]!.line + 1;
  const last = to < doc.parts.length ? doc.parts[to]!.line : doc.lines;
  return [first, Math.max(first, last)];
}

function sentenceOf(doc: Doc, i: number): string {
  const part = doc.parts[i]!;
  if (part.sentence !== undefined) return part.sentence;
  if (part.sentenceOf !== undefined) return part.sentenceOf();
  const endLine = i + 1 < doc.parts.length ? doc.parts[i + 1]!.line : doc.lines;
  // A heading is not prose; a run of plain lines, or the text before the first heading, starts with it.
  return proseSentence(doc.text, doc.starts, part.line, Math.max(endLine, part.line + 1), part.label !== "lines" && part.label !== "top", part.label === "lines");
}

/** One outline line for part i: its title, where it is, and (in a summary) its first sentence. */
function entry(doc: Doc, i: number, layout: Layout, withSentence: boolean): string {
  const part = doc.parts[i]!;
  const [a, b] = partLines(doc, i, layout.ends[i]!);
  const tokens = tokensOf(layout.prefix[layout.ends[i]!]! - layout.prefix[i]!);
  const where = part.label === "lines" ? `${tokens} tokens` : `lines ${a}-${b}, ${tokens} tokens`;
  const title = part.label === "lines" ? `lines ${a}-${b}` : part.title;
  if (!withSentence) return `${title} (${where})`;
  const sentence = sentenceOf(doc, i);
  const at = part.label === "lines" ? "" : ` (lines ${a}-${b})`;
  return sentence === "" ? `${title}${at}` : `${title}${at}: ${sentence}`;
}

function unitsOfLine(line: string): number {
  return scan(line + "\n", 0, line.length + 1, true);
}

/** Describes the whole (and the part in scope) in one line. */
function header(doc: Doc, scope: Scope): string {
  const name = doc.name ?? `The ${doc.noun}`;
  const whole = `${name}: ${doc.kind}, ${tokensOf(doc.units)} tokens, ${doc.lines} lines`;
  if (scope.of === null) return `${whole}, ${doc.parts.length} parts.`;
  return `${whole}; ${scope.of}, lines ${scope.lines[0]}-${scope.lines[1]}, ${scope.tokens} tokens.`;
}

/** The parts an outline covers: all, or the section a query matched. */
type Scope = { readonly from: number; readonly to: number; readonly of: string | null; readonly lines: [number, number]; readonly tokens: number };

function exampleRange(doc: Doc, scope: Scope): string {
  const [a, b] = scope.lines;
  return `${a}-${Math.min(b, a + 99)}`;
}

function footer(doc: Doc, scope: Scope, view: "summary" | "stub"): string {
  const what = doc.kind === "text" ? "a line range" : `${ASK_FOR[doc.kind]}, or a line range`;
  const section = `view "section" and query set to ${what} such as ${exampleRange(doc, scope)}`;
  return view === "stub" ? `To read more, call again with view "summary", or with ${section}.` : `To read a part, call again with ${section}.`;
}

type Outline = { text: string; units: number; listed: string | undefined };

/** Joins lines, summing their units (an upper estimate: each line is sized with a newline). */
function joinLines(lines: readonly string[], units: readonly number[]): Outline {
  let u = 0;
  for (const x of units) u += x;
  return { text: lines.join("\n"), units: u, listed: undefined };
}

/** The summary's text, or null as soon as it grows past maxChars (it could not be returned). */
function summaryOutline(doc: Doc, layout: Layout, scope: Scope, head: string | null, maxChars: number): string | null {
  const lines: string[] = [];
  if (head !== null) lines.push(head);
  lines.push(header(doc, scope));
  let length = lines.reduce((a, l) => a + l.length + 1, 0);
  for (let i = scope.from; i < scope.to; i++) {
    const e = entry(doc, i, layout, true);
    length += e.length + 1;
    if (length > maxChars) return null;
    lines.push(e);
  }
  lines.push(footer(doc, scope, "summary"));
  const text = lines.join("\n");
  return text.length > maxChars ? null : text;
}

/**
 * The stub: head, header, outline, how to ask for more; made to fit the bounds when it can,
 * by listing fewer levels, then the first entries only, then no outline at all.
 */
function stubOutline(doc: Doc, layout: Layout, scope: Scope, head: string | null, bounds: Bounds): Outline {
  const top = head !== null ? [head, header(doc, scope)] : [header(doc, scope)];
  const bottom = [footer(doc, scope, "stub")];
  const n = scope.to - scope.from;
  const entries: string[] = [];
  for (let i = scope.from; i < scope.to; i++) entries.push(entry(doc, i, layout, false));
  // Most stubs fit whole: measure the whole once when it is short enough to.
  const whole = [...top, ...entries, ...bottom].join("\n");
  if (whole.length <= bounds.chars) {
    const u = weighUnits(whole);
    if (tokensOf(u) <= bounds.tokens) return { text: whole, units: u, listed: undefined };
  }
  const fixed = [...top, ...bottom].map(unitsOfLine).reduce((a, b) => a + b, 0);
  const fixedChars = [...top, ...bottom].reduce((a, l) => a + l.length + 1, 0);
  const fits = (units: number, chars: number): boolean => tokensOf(units) <= bounds.tokens && chars <= bounds.chars;
  const eunits = entries.map(unitsOfLine);
  let minLevel = Number.POSITIVE_INFINITY;
  let maxLevel = 0;
  for (let i = scope.from; i < scope.to; i++) {
    minLevel = Math.min(minLevel, doc.parts[i]!.level);
    maxLevel = Math.max(maxLevel, doc.parts[i]!.level);
  }
  const build = (chosen: number[], note: string | null): Outline => {
    const lines = [...top];
    const units = [fixed];
    for (const k of chosen) {
      lines.push(entries[k]!);
      units.push(eunits[k]!);
    }
    if (note !== null) {
      lines.push(note);
      units.push(unitsOfLine(note));
    }
    lines.push(...bottom);
    const o = joinLines(lines, units);
    return { ...o, listed: chosen.length < n ? `the outline lists ${chosen.length} of ${n} parts` : undefined };
  };
  const sizeOf = (chosen: number[], note: string | null): [number, number] => {
    let u = fixed + (note === null ? 0 : unitsOfLine(note));
    let c = fixedChars + (note === null ? 0 : note.length + 1);
    for (const k of chosen) {
      u += eunits[k]!;
      c += entries[k]!.length + 1;
    }
    return [u, c];
  };
  // All entries when they fit; else, of the entries down to each depth, the most that fit
  // (all of them, or the first ones in document order), whichever lists more.
  let best: { chosen: number[]; note: string | null } | null = null;
  for (let level = maxLevel; level >= minLevel; level--) {
    const pool: number[] = [];
    for (let k = 0; k < n; k++) if (doc.parts[scope.from + k]!.level <= level) pool.push(k);
    const deeper = n - pool.length;
    const wholeNote = deeper > 0 ? `(${deeper} deeper parts are not listed.)` : null;
    const [u, c] = sizeOf(pool, wholeNote);
    if (fits(u, c)) {
      if (best === null || pool.length > best.chosen.length) best = { chosen: pool, note: wholeNote };
      break; // shallower levels list fewer
    }
    let lo = 0;
    let hi = pool.length;
    const noteFor = (k: number): string => `(${n - k} more parts are not listed.)`;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      const [mu, mc] = sizeOf(pool.slice(0, mid), noteFor(mid));
      if (fits(mu, mc)) lo = mid;
      else hi = mid - 1;
    }
    if (lo > 0 && (best === null || lo > best.chosen.length)) best = { chosen: pool.slice(0, lo), note: noteFor(lo) };
  }
  if (best !== null) return build(best.chosen, best.note);
  const none = n > 0 ? `(The outline of ${n} parts does not fit; it was left out.)` : null;
  const [u, c] = sizeOf([], none);
  if (fits(u, c)) return build([], none);
  // The floor: how big the whole is and how to ask for more, in as few words as we can.
  const floor = `${doc.name ?? `The ${doc.noun}`}: ${tokensOf(doc.units)} tokens, ${doc.lines} lines; ask for a section, a line range or a bigger budget.`;
  return { text: floor, units: unitsOfLine(floor), listed: n > 0 ? `the outline of ${n} parts was left out` : undefined };
}

/** The bound a candidate breaks, or null when it fits. */
function breaks(bounds: Bounds, tokens: number, chars: number): Reason | null {
  if (tokens > bounds.tokens) return bounds.tokensReason;
  if (chars > bounds.chars) return bounds.charsReason;
  return null;
}

function boundPhrase(bounds: Bounds, reason: Reason): string {
  switch (reason) {
    case "budget":
      return bounds.chars < bounds.tokens * 8 || bounds.charsReason !== "budget"
        ? `the budget of ${bounds.budget} tokens`
        : `the budget of ${bounds.budget} tokens (${bounds.chars} characters)`;
    case "chars":
      return `the tool's bound of ${bounds.chars} characters`;
    case "cap":
      return `the cap of ${bounds.tokens} tokens`;
    case "cap_chars":
      return `the cap of ${bounds.chars} characters`;
  }
}

/** Lines [from, to] (1-based) as offsets. */
function rangeOffsets(doc: Doc, from: number, to: number): [number, number] {
  return [doc.starts[from - 1]!, doc.starts[to]!];
}

/** The longest run of lines from `from` within `to` that fits the bounds, or null. */
function fittingLines(doc: Doc, from: number, to: number, bounds: Bounds): [number, number] | null {
  let units = 0;
  let chars = 0;
  let last = -1;
  for (let l = from; l <= to; l++) {
    const s = doc.starts[l - 1]!;
    const e = doc.starts[l]!;
    units += scan(doc.text, s, e, true);
    chars += e - s;
    // A little room: lines cut at blank lines add up only about.
    if (tokensOf(units) > bounds.tokens * 0.95 || chars > bounds.chars) break;
    last = l;
  }
  return last >= from ? [from, last] : null;
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** Fits a split document to the options (see FitOptions). */
export function fitDoc(doc: Doc, opts: FitOptions): Fitted {
  const bounds = boundsOf(opts);
  const asked = viewOf(opts.view ?? null);
  const query = queryOf(opts.query ?? null);
  const head = typeof opts.head === "string" && opts.head.trim() !== "" ? cut(opts.head.trim().replace(/\s+/g, " "), 200) : null;
  const size = tokensOf(doc.units);
  const layout = layoutOf(doc);
  const match: Match | null = query === null ? null : matchQuery(doc, query);
  const section = match === null ? null : sectionOf(doc, layout, match, bounds, query!);
  const scope: Scope = section?.scope ?? { from: 0, to: doc.parts.length, of: null, lines: [1, Math.max(1, doc.lines)], tokens: size };
  const unknown = match !== null && match.kind === "none" ? match.why : asked === "section" && query === null ? "view section needs a query naming the part" : null;

  // The views to try, biggest first (FIT-5), from the one asked for down (FIT-6).
  const all: readonly View[] = ["full", "section", "summary", "stub"];
  const first = asked ?? (query !== null ? "section" : "full");
  const order = all.slice(all.indexOf(first)).filter((v) => v !== "section" || section !== null);

  const falls: Fall[] = [];
  let reason: Reason | null = null;
  const finish = (view: View, text: string, units: number, listed: string | null): Fitted => {
    const hints: string[] = [];
    if (listed !== null) hints.push(listed);
    if (section !== null && falls.some((f) => f.what === section.what)) {
      const fit = fittingLines(doc, section.lines[0], section.lines[1], bounds);
      if (fit !== null) hints.push(`lines ${fit[0]}-${fit[1]} would fit`);
    }
    const omitted = noteFor(doc, view, section?.what ?? "", falls, reason, bounds, scope, unknown, size, tokensOf(units), hints);
    return answer(doc, view, text, units, bounds, reason, omitted);
  };
  for (const v of order) {
    if (v === "stub") break;
    let text: string;
    let units: number | null;
    let chars: number;
    let what: string;
    if (v === "full") {
      [text, units, chars, what] = [doc.text, doc.units, doc.text.length, "the full text"];
    } else if (v === "section") {
      [text, units, chars, what] = [section!.text ?? "", section!.units, section!.chars, section!.what];
    } else {
      what = scope.of === null ? "the summary" : `the summary of ${scope.of}`;
      // Each entry is at least its title and where it is: skip making a summary that cannot fit.
      let least = 0;
      for (let i = scope.from; i < scope.to && least <= bounds.chars; i++) least += doc.parts[i]!.title.length + 14;
      if (least > bounds.chars) {
        falls.push({ what, tokens: null, chars: least, atLeast: true });
        reason ??= bounds.charsReason;
        continue;
      }
      const summary = summaryOutline(doc, layout, scope, head, bounds.chars);
      if (summary === null) {
        falls.push({ what, tokens: null, chars: bounds.chars, atLeast: true });
        reason ??= bounds.charsReason;
        continue;
      }
      [text, units, chars] = [summary, null, summary.length];
    }
    // An outline is measured only when it is short enough to be returned.
    if (units === null && chars <= bounds.chars) units = weighUnits(text);
    const broke = units === null ? bounds.charsReason : breaks(bounds, tokensOf(units), chars);
    if (broke === null) return finish(v, text, units!, null);
    falls.push({ what, tokens: units === null ? null : tokensOf(units), chars });
    reason ??= broke;
  }
  // The stub: the floor (FIT-7).
  const o = stubOutline(doc, layout, scope, head, bounds);
  let text = o.text;
  let units = weighUnits(text);
  const broke = breaks(bounds, tokensOf(units), text.length);
  if (broke !== null) {
    reason ??= broke;
    if (text.length > bounds.chars) {
      text = text.slice(0, bounds.chars);
      units = weighUnits(text);
    }
  }
  return finish("stub", text, units, o.listed ?? null);
}

/** A view tried that did not fit: what it was and how big. */
type Fall = { readonly what: string; readonly tokens: number | null; readonly chars: number; readonly atLeast?: boolean };

/** The section a query names: its text (null when longer than the character bound), size and scope. */
type Section = { readonly text: string | null; readonly units: number; readonly chars: number; readonly what: string; readonly lines: [number, number]; readonly scope: Scope };

function sectionOf(doc: Doc, layout: Layout, match: Match, bounds: Bounds, query: string): Section | null {
  if (match.kind === "part") {
    const i = match.index;
    const end = layout.ends[i]!;
    const part = doc.parts[i]!;
    const lines = partLines(doc, i, end);
    const stop = end < doc.parts.length ? doc.parts[end]!.start : doc.text.length;
    let units = layout.prefix[end]! - layout.prefix[i]!;
    let text = doc.text.slice(part.start, stop);
    if (part.label === "hunk") {
      // A hunk comes with its file's header lines, so that it still reads as a patch.
      let f = i;
      while (f > 0 && doc.parts[f]!.label !== "file") f--;
      const file = doc.parts[f]!;
      if (file.label === "file") {
        text = doc.text.slice(file.start, file.end) + text;
        units += file.units;
      }
    }
    const what = describePart(doc, i, query);
    const scope: Scope = { from: i, to: end, of: what, lines, tokens: tokensOf(units) };
    return { text, units, chars: text.length, what, lines, scope };
  }
  if (match.kind === "lines") {
    const [s, e] = rangeOffsets(doc, match.from, match.to);
    const what = `lines ${match.from}-${match.to}`;
    const lines: [number, number] = [match.from, match.to];
    // Outlines of a range cover the parts it touches.
    let from = 0;
    while (from + 1 < doc.parts.length && doc.parts[from + 1]!.start <= s) from++;
    let to = from;
    while (to < doc.parts.length && doc.parts[to]!.start < e) to++;
    if (e - s <= bounds.chars) {
      const text = doc.text.slice(s, e);
      const units = weighUnits(text);
      return { text, units, chars: text.length, what, lines, scope: { from, to, of: what, lines, tokens: tokensOf(units) } };
    }
    // Too long to return whatever its tokens: sized from the parts it touches, never counted.
    let units = 0;
    for (let p = from; p < to; p++) {
      const part = doc.parts[p]!;
      units += (part.units * (Math.min(part.end, e) - Math.max(part.start, s))) / Math.max(1, part.end - part.start);
    }
    return { text: null, units, chars: e - s, what, lines, scope: { from, to, of: what, lines, tokens: tokensOf(units) } };
  }
  return null;
}

function describePart(doc: Doc, i: number, query: string): string {
  const part = doc.parts[i]!;
  const key = part.keys[0] ?? query;
  switch (part.label) {
    case "section":
      return `the section matching '${query}'`;
    case "definition":
      return `the definition of '${key}'`;
    case "file":
      return `the diff of '${key}'`;
    case "hunk":
      return `hunk ${key.slice(key.lastIndexOf("#") + 1)} of '${key.slice(0, key.lastIndexOf("#"))}'`;
    case "key":
      return `the key ${part.title}`;
    case "item":
      return `the item ${part.title}`;
    case "top":
      return "the text before the first part";
    default:
      return `the part matching '${query}'`;
  }
}

/** The omitted sentence: why this view, what it is, what was left out, and how to read on. */
function noteFor(
  doc: Doc,
  view: View,
  sectionWhat: string,
  falls: readonly Fall[],
  reason: Reason | null,
  bounds: Bounds,
  scope: Scope,
  unknown: string | null,
  size: number,
  tokens: number,
  hints: readonly string[],
): string {
  const rest = Math.max(0, size - tokens);
  const restOfScope = Math.max(0, size - scope.tokens);
  let what: string;
  switch (view) {
    case "full":
      what = "this is the full text; nothing was left out";
      break;
    case "section":
      what = rest === 0 ? `this is ${sectionWhat}, which is the whole ${doc.noun}; nothing was left out` : `this is ${sectionWhat}; the rest of the ${doc.noun} (${rest} tokens) was left out`;
      break;
    case "summary":
      what =
        scope.of === null
          ? `this is the summary: the outline with each part's first sentence; the full text (${size} tokens) was left out`
          : `this is the summary of ${scope.of}: its outline with each part's first sentence; its text (${scope.tokens} tokens) and the rest of the ${doc.noun} (${restOfScope} tokens) were left out`;
      break;
    case "stub":
      what =
        scope.of === null
          ? `this is the stub: the outline; the content (${size} tokens) was left out`
          : `this is the stub of ${scope.of}: its outline; its text (${scope.tokens} tokens) and the rest of the ${doc.noun} (${restOfScope} tokens) were left out`;
      break;
  }
  let sentence = what;
  if (falls.length > 0 && reason !== null) {
    const list = falls.map((f) => `${f.what} (${f.tokens === null ? "" : `${f.tokens} tokens, `}${f.atLeast === true ? "more than " : ""}${f.chars} characters)`);
    const subject = list.length === 1 ? `${list[0]} does not fit` : `neither ${list.slice(0, -1).join(", nor ")} nor ${list[list.length - 1]} fits`;
    sentence = `${subject} ${boundPhrase(bounds, reason)}, so ${what}`;
  }
  if (unknown !== null) {
    const ask = doc.kind === "text" ? ASK_FOR.text : `${ASK_FOR[doc.kind]}, or a line range such as 1-${Math.min(100, Math.max(1, doc.lines))}`;
    sentence = `${unknown} (ask for ${ask}); ${sentence}`;
  }
  for (const h of hints) sentence += `; ${h}`;
  return capitalize(sentence) + ".";
}

function answer(doc: Doc, view: View, text: string, units: number, bounds: Bounds, reason: Reason | null, omitted: string): Fitted {
  const note: FitNote = {
    view,
    budget: bounds.budget,
    size: tokensOf(doc.units),
    tokens: tokensOf(units),
    omitted,
    ...(reason !== null ? { reason } : {}),
  };
  return {
    text,
    truncated: reason !== null,
    meta: () => ({ ...note }),
  };
}

/** Used by outline.ts: the lines of the doc's outline, with or without first sentences. */
export function outlineEntries(doc: Doc, withSentence: boolean): { lines: string[]; levels: number[] } {
  const layout = layoutOf(doc);
  const lines: string[] = [];
  const levels: number[] = [];
  for (let i = 0; i < doc.parts.length; i++) {
    const part = doc.parts[i]!;
    const title = part.label === "lines" ? (() => {
      const [a, b] = partLines(doc, i, layout.ends[i]!);
      return `lines ${a}-${b}`;
    })() : part.title.trimStart();
    const indent = doc.kind === "code" || doc.kind === "diff" ? "  ".repeat(part.level - 1) : "";
    const sentence = withSentence ? sentenceOf(doc, i) : "";
    lines.push(sentence === "" ? `${indent}${title}` : `${indent}${title}: ${sentence}`);
    levels.push(part.level);
  }
  return { lines, levels };
}

