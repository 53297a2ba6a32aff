// Which kind a text is read as: by its name's extension when there is one, else by a look
// at its lines.
import { definitionName } from "./code.ts";
import { looksLikeDiff } from "./diff.ts";
import type { Kind } from "./types.ts";

const MARKDOWN_EXT = /\.(?:md|markdown|mdx|mkd|mdown)$/i;
const CODE_EXT = /\.(?:[cm]?[jt]sx?|py|pyi|go|rs|java|kt|kts|scala|swift|cs|fs|php|rb|ex|exs|lua|sh|bash|zsh|c|h|cc|cpp|cxx|hpp|hh|m|mm|dart|r|pl|pm|sql|vue|svelte|zig|nim|jl|hs|ml|clj|groovy|gradle|ps1|tf)$/i;
const DIFF_EXT = /\.(?:diff|patch)$/i;
const JSON_EXT = /\.(?:json|jsonc|geojson)$/i;

/** The kind a name's extension gives, or null. */
export function kindByName(name: string | null | undefined): Kind | null {
  if (typeof name !== "string" || name === "") return null;
  const base = name.replace(/[?#].*$/, "");
  if (MARKDOWN_EXT.test(base)) return "markdown";
  if (DIFF_EXT.test(base)) return "diff";
  if (JSON_EXT.test(base)) return "json";
  if (CODE_EXT.test(base)) return "code";
  return null;
}

/** The kind of a text by its lines (a sample of its first 400): diff, markdown, code or text. */
export function sniffKind(text: string): Kind {
  if (looksLikeDiff(text)) return "diff";
  const sample = text.slice(0, 65536).split("\n", 400);
  let headings = 0;
  let fences = 0;
  let definitions = 0;
  let codeish = 0;
  let content = 0;
  let inFence = false;
  for (let i = 0; i < sample.length; i++) {
    const line = sample[i]!;
    const t = line.trim();
    if (t === "") continue;
    content++;
    if (/^(?:```|~~~)/.test(t)) {
      fences++;
      inFence = !inFence;
      continue;
    }
    if (inFence) continue;
    if (/^#{1,6}\s+\S/.test(line)) headings++;
    if (/[;{}:]$|^(?:import|from|package|return|using|#include|if|elif|else|for|while|try|except|with|self\.|end)\b|=>|^\}/.test(t)) codeish++;
    const indent = line.length - line.trimStart().length;
    if (definitionName(t, indent, (sample[i + 1] ?? "").trimStart().startsWith("{")) !== null) definitions++;
  }
  if (content === 0) return "text";
  const codeShare = codeish / content;
  if (definitions >= 2 && codeShare >= 0.15) return "code";
  if (definitions >= 1 && codeShare > 0.3 && headings === 0) return "code";
  if (headings >= 1 || fences >= 2) return "markdown";
  return "text";
}

/** The kind of a text: by name, else by its lines. A name saying JSON is kept only for text that parses. */
export function kindOfText(text: string, name: string | null | undefined): Kind {
  const byName = kindByName(name);
  if (byName !== null && byName !== "json") return byName;
  return sniffKind(text);
}
