// How a result is read: its kind, its text (for JSON, the read form) and its parts.
import { codeDrafts } from "./code.ts";
import { kindByName, kindOfText } from "./detect.ts";
import { diffDrafts, looksLikeDiff } from "./diff.ts";
import { buildDoc, type Doc, type Draft, lineStarts } from "./doc.ts";
import { jsonForm, parseJson } from "./json.ts";
import { markdownDrafts } from "./markdown.ts";
import { plainDrafts } from "./plain.ts";
import type { Kind } from "./types.ts";

/** A text read as the given kind (markdown, code, diff or text). */
export function docOfText(kind: Exclude<Kind, "json">, text: string, name: string | null): Doc {
  const starts = lineStarts(text);
  let drafts: Draft[];
  switch (kind) {
    case "markdown":
      drafts = markdownDrafts(text, starts);
      break;
    case "code":
      drafts = codeDrafts(text, starts);
      break;
    case "diff":
      drafts = diffDrafts(text, starts);
      break;
    case "text":
      drafts = [];
      break;
  }
  // Without headings, definitions or files, a text is read by runs of lines.
  if (drafts.length === 0) drafts = plainDrafts(text, starts);
  return buildDoc(kind, text, starts, drafts, name);
}

/** A JSON value read in its read form, by top-level keys or items. */
export function docOfJson(value: unknown, name: string | null): Doc {
  const form = jsonForm(value);
  return buildDoc("json", form.text, form.starts, form.drafts, name);
}

/** The name given, or null. */
export function nameOf(name: string | null | undefined): string | null {
  return typeof name === "string" && name.trim() !== "" ? name.trim() : null;
}

/**
 * Any result: a string that holds a JSON object or array is read as JSON, one that looks
 * like a unified diff as a diff, any other string as a document (markdown, code or text);
 * any other value as JSON.
 */
export function docOf(value: unknown, name: string | null): Doc {
  if (typeof value !== "string") return docOfJson(value, name);
  const parsed = parseJson(value);
  if (parsed !== undefined) return docOfJson(parsed, name);
  if (kindByName(name) === "diff" || looksLikeDiff(value)) return docOfText("diff", value, name);
  const kind = kindOfText(value, name);
  return docOfText(kind === "json" ? "text" : kind, value, name);
}
