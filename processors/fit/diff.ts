// Unified diffs by file and hunk: a file's part holds its header and its hunks; `path#n`
// names its n-th hunk (from 1).
import { type Draft, lineAt } from "./doc.ts";
import { cut } from "./sentence.ts";

const HUNK = /^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@/;

/** Whether text reads as a unified diff: a file header with a hunk near its start, outside code fences. */
export function looksLikeDiff(text: string): boolean {
  const head = text.slice(0, 16384);
  const m = /^(?:diff --git |--- [^\n]*\n\+\+\+ [^\n]*\n@@ -\d)/m.exec(head);
  if (m === null) return false;
  return !head.slice(0, m.index).includes("```");
}

/** A path as a header names it: no a/ b/ prefix, no timestamp, no quotes. */
function cleanPath(raw: string, git: boolean): string {
  let p = raw.replace(/\t.*$/, "").trim();
  if (p.startsWith('"') && p.endsWith('"')) p = p.slice(1, -1);
  if (git && /^[abciow]\//.test(p)) p = p.slice(2);
  return p;
}

type FileDraft = { line: number; path: string; other: string; plus: number; minus: number; hunks: number; git: boolean };

export function diffDrafts(text: string, starts: Int32Array): Draft[] {
  const lines = starts.length - 1;
  const files: FileDraft[] = [];
  const hunks: { line: number; file: number; n: number; header: string; first: string }[] = [];
  let file: FileDraft | null = null;
  let inHunk = false;
  for (let l = 0; l < lines; l++) {
    const c = text.charCodeAt(starts[l]!);
    if (c === 100 /* d */ && text.startsWith("diff --git ", starts[l])) {
      const m = /^diff --git (\S+|"[^"]+") (\S+|"[^"]+")/.exec(lineAt(text, starts, l));
      file = { line: l, path: m ? cleanPath(m[2]!, true) : "", other: m ? cleanPath(m[1]!, true) : "", plus: 0, minus: 0, hunks: 0, git: true };
      files.push(file);
      inHunk = false;
      continue;
    }
    if (c === 45 /* - */ && text.startsWith("--- ", starts[l]) && l + 1 < lines && text.startsWith("+++ ", starts[l + 1])) {
      const minus = lineAt(text, starts, l).slice(4);
      const plus = lineAt(text, starts, l + 1).slice(4);
      const fromGit = file !== null && file.git && file.hunks === 0 && l - file.line <= 6;
      if (!fromGit) {
        file = { line: l, path: "", other: "", plus: 0, minus: 0, hunks: 0, git: /^[ab]\//.test(minus) && /^[ab]\//.test(plus) };
        files.push(file);
      }
      const f = file!;
      const to = cleanPath(plus, f.git);
      const from = cleanPath(minus, f.git);
      f.path = to === "/dev/null" || to === "dev/null" ? from : to;
      f.other = from;
      l++;
      inHunk = false;
      continue;
    }
    if (c === 64 /* @ */ && file !== null && HUNK.test(lineAt(text, starts, l))) {
      file.hunks++;
      hunks.push({ line: l, file: files.length - 1, n: file.hunks, header: lineAt(text, starts, l), first: "" });
      inHunk = true;
      continue;
    }
    if (inHunk && file !== null) {
      if (c === 43 /* + */) file.plus++;
      else if (c === 45) file.minus++;
      else continue;
      const h = hunks[hunks.length - 1]!;
      if (h.first === "") h.first = cut(lineAt(text, starts, l).trim(), 160);
    }
  }
  const drafts: Draft[] = [];
  let h = 0;
  files.forEach((f, i) => {
    const keys = f.other !== "" && f.other !== f.path && f.other !== "/dev/null" ? [f.path, f.other] : [f.path];
    const count = f.hunks === 1 ? "1 hunk" : `${f.hunks} hunks`;
    drafts.push({ line: f.line, level: 1, title: `${f.path} (+${f.plus} -${f.minus}, ${count})`, keys, label: "file", sentence: "" });
    for (; h < hunks.length && hunks[h]!.file === i; h++) {
      const k = hunks[h]!;
      drafts.push({ line: k.line, level: 2, title: `  ${cut(k.header, 160)}`, keys: keys.map((p) => `${p}#${k.n}`), label: "hunk", sentence: k.first });
    }
  });
  return drafts;
}
