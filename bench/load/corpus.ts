/**
 * The load's corpus: real documents already in the repository, read in a fixed order so a seed
 * always picks the same text: the token fixtures (docs, code, JSON, diffs, logs, non-English
 * text; `test/fixtures/tokens`) and the project's own Markdown (`docs/`, the README).
 */
import { readdir, readFile } from "node:fs/promises";

const ROOT = new URL("../../", import.meta.url);
const SOURCES: ReadonlyArray<{ dir: string; ext: string }> = [
  { dir: "test/fixtures/tokens/", ext: ".txt" },
  { dir: "docs/", ext: ".md" },
];

export async function loadCorpus(): Promise<string[]> {
  const texts: string[] = [];
  for (const { dir, ext } of SOURCES) {
    const at = new URL(dir, ROOT);
    const files = (await readdir(at)).filter((f) => f.endsWith(ext)).sort();
    for (const f of files) texts.push(await readFile(new URL(f, at), "utf8"));
  }
  texts.push(await readFile(new URL("README.md", ROOT), "utf8"));
  const documents = texts.filter((t) => t.trim().length > 0);
  if (documents.length === 0) throw new Error("no corpus: test/fixtures/tokens, docs/ and README.md hold no text");
  return documents;
}
