// Markdown by its headings: ATX (# Title) and setext (Title over === or ---), never inside
// fenced code or front matter. A heading's section holds its sub-headings.
import { type Draft, hasContent, lineAt } from "./doc.ts";
import { firstSentence, SENTENCE_CHARS } from "./sentence.ts";

const ATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
/** Lines that cannot be the text of a setext heading (lists, quotes, tables, indented code). */
const NOT_SETEXT_TEXT = /^(?: {4}|\t| {0,3}(?:[-*+>|]|\d+[.)])(?:[ \t]|$))/;

/** The plain words of a heading, for matching: no marks, no links' targets, lower case. */
export function headingKey(title: string): string {
  if (/^[\w .,:;/()-]*$/.test(title)) return title.replace(/\s+/g, " ").trim().toLowerCase();
  return title
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/[`*_~]/g, "")
    .replace(/\s+/g, " ")
    .trim()
    .toLowerCase();
}

export function markdownDrafts(text: string, starts: Int32Array): Draft[] {
  const lines = starts.length - 1;
  const drafts: Draft[] = [];
  let l = 0;
  // Front matter: a first line of --- up to the next --- or ... line.
  if (lines > 0 && /^---[ \t]*$/.test(lineAt(text, starts, 0))) {
    for (let k = 1; k < lines; k++) {
      if (/^(?:---|\.\.\.)[ \t]*$/.test(lineAt(text, starts, k))) {
        l = k + 1;
        break;
      }
    }
  }
  let fence = "";
  let prevText = -1; // the previous line, when it could be a setext heading's text
  for (; l < lines; l++) {
    const c = text.charCodeAt(starts[l]!);
    // Most lines start with a letter: only lines that may open a heading or a fence are read.
    if (fence === "" && c !== 35 && c !== 96 && c !== 126 && c !== 61 && c !== 45 && c !== 32) {
      prevText = hasContent(text, starts, l) && !NOT_SETEXT_TEXT.test(text.slice(starts[l], starts[l]! + 4)) ? l : -1;
      continue;
    }
    const line = lineAt(text, starts, l);
    const f = FENCE.exec(line);
    if (fence !== "") {
      if (f !== null && f[1]!.charAt(0) === fence.charAt(0) && f[1]!.length >= fence.length && line.trim() === f[1]) fence = "";
      prevText = -1;
      continue;
    }
    if (f !== null) {
      fence = f[1]!;
      prevText = -1;
      continue;
    }
    const atx = ATX.exec(line);
    if (atx !== null) {
      const title = (atx[2] ?? "").trim();
      const level = atx[1]!.length;
      drafts.push({ line: l, level, title: `${atx[1]} ${title}`, keys: [headingKey(title)], label: "section" });
      prevText = -1;
      continue;
    }
    const setext = SETEXT.exec(line);
    if (setext !== null && prevText === l - 1 && prevText >= 0) {
      const title = lineAt(text, starts, prevText).trim();
      const level = setext[1]!.charAt(0) === "=" ? 1 : 2;
      drafts.push({ line: prevText, level, title: `${"#".repeat(level)} ${title}`, keys: [headingKey(title)], label: "section" });
      prevText = -1;
      continue;
    }
    prevText = hasContent(text, starts, l) && !NOT_SETEXT_TEXT.test(line) ? l : -1;
  }
  return drafts;
}

/**
 * The first sentence of a part's prose: the first paragraph after its title line, skipping
 * code blocks, tables, HTML and images. `skipFirst` leaves out the part's own first line (a heading).
 * With `records` (plain text: logs, listings), a line that does not start in lower case
 * starts a new record, so a log's first sentence is its first line, while wrapped prose
 * still reads on.
 */
export function proseSentence(text: string, starts: Int32Array, firstLine: number, endLine: number, skipFirst: boolean, records = false): string {
  let fence = "";
  const para: string[] = [];
  let length = 0;
  const stop = Math.min(endLine, firstLine + 200);
  for (let l = skipFirst ? firstLine + 1 : firstLine; l < stop; l++) {
    const line = lineAt(text, starts, l);
    const c = line.charCodeAt(line.search(/\S/));
    if (c === 96 || c === 126) {
      const f = FENCE.exec(line);
      if (fence !== "") {
        if (f !== null && f[1]!.charAt(0) === fence.charAt(0)) fence = "";
        continue;
      }
      if (f !== null) {
        if (para.length > 0) break;
        fence = f[1]!;
        continue;
      }
    } else if (fence !== "") {
      continue;
    }
    const t = line.trim();
    if (t === "") {
      if (para.length > 0) break;
      continue;
    }
    if (/^(?:<|!\[|\||[-=]{3,}$|#{1,6}\s)/.test(t)) {
      if (para.length > 0) break;
      continue;
    }
    if (records && para.length > 0 && !/^[a-z]/.test(t)) break;
    const item = para.length === 0 ? t.replace(/^(?:[-*+>]|\d+[.)])\s+/, "") : t;
    para.push(item);
    length += item.length + 1;
    // Enough once a sentence ends in it, or it is longer than any first sentence we keep.
    if (length > SENTENCE_CHARS * 2 || /[.!?。！？](?:\s|$)/.test(item)) break;
  }
  return firstSentence(para.join(" "));
}
