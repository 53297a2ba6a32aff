// First sentences, cut from the text (never written): what a summary shows of each part.

/** Longest first sentence kept; a longer one is cut at a word and ends with an ellipsis. */
export const SENTENCE_CHARS = 240;

/**
 * The first sentence of a run of prose: up to the first . ! ? (or their CJK forms) that
 * ends a sentence, within SENTENCE_CHARS characters; white space is collapsed.
 */
export function firstSentence(prose: string): string {
  const s = prose.replace(/\s+/g, " ").trim();
  if (s === "") return "";
  const limit = Math.min(s.length, SENTENCE_CHARS + 1);
  for (let i = 0; i < limit; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x3002 || c === 0xff01 || c === 0xff1f) return s.slice(0, i + 1); // 。！？
    if (c !== 46 && c !== 33 && c !== 63) continue; // . ! ?
    const next = s.charCodeAt(i + 1);
    if (i + 1 === s.length) return s;
    if (next !== 32) continue;
    const after = s.charCodeAt(i + 2);
    // "e.g. this" and "v1.2. next" do not end a sentence; a capital, a digit or a quote after does.
    const capital = (after >= 65 && after <= 90) || (after >= 48 && after <= 57) || after === 34 || after === 39 || after === 40 || after > 127;
    if (capital && !/\b(?:e\.g|i\.e|etc|vs|cf|Mr|Mrs|Dr|St|No)\.$/.test(s.slice(Math.max(0, i - 4), i + 1))) return s.slice(0, i + 1);
  }
  return cut(s, SENTENCE_CHARS);
}

/** s cut to at most max characters at a word, with an ellipsis when cut. */
export function cut(s: string, max: number): string {
  if (s.length <= max) return s;
  const space = s.lastIndexOf(" ", max - 1);
  return (space > max / 2 ? s.slice(0, space) : s.slice(0, max - 1)) + "…";
}
