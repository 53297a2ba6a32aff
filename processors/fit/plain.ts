// Anything else by runs of lines: paragraphs (split at blank lines) gathered into runs of
// about RUN lines, so that an outline has at most a few dozen entries; a run starts on a
// line with content.
import { type Draft, hasContent } from "./doc.ts";

/** Lines per run: at least 20, and enough that there are about 40 runs. */
export function runLength(lines: number): number {
  return Math.max(20, Math.ceil(lines / 40));
}

export function plainDrafts(text: string, starts: Int32Array): Draft[] {
  const lines = starts.length - 1;
  const run = runLength(lines);
  const drafts: Draft[] = [];
  let l = 0;
  while (l < lines && !hasContent(text, starts, l)) l++;
  while (l < lines) {
    const from = l;
    // Prefer ending a run at a blank line between run/2 and 2*run lines; else cut at `run`.
    let end = Math.min(lines, from + run);
    for (let k = from + Math.floor(run / 2); k < Math.min(lines, from + 2 * run); k++) {
      if (!hasContent(text, starts, k)) {
        end = k;
        break;
      }
    }
    l = end;
    while (l < lines && !hasContent(text, starts, l)) l++;
    const last = l - 1;
    drafts.push({ line: from, level: 1, title: `lines ${from + 1}-${last + 1}`, keys: [], label: "lines" });
  }
  return drafts;
}
