// Code by its definitions: functions, classes, methods, types and the like across common
// languages (TypeScript/JavaScript, Python, Go, Rust, Java, C#, Kotlin, Swift, PHP, Ruby,
// Elixir, Lua, shell, C and C++). A definition runs until the next definition at its depth
// or shallower; it takes the comments, decorators and attributes just above it.
import { type Draft, lineAt } from "./doc.ts";
import { cut, firstSentence } from "./sentence.ts";

const MODS = "(?:(?:export|default|declare|public|private|protected|internal|fileprivate|static|final|abstract|sealed|open|data|inline|override|suspend|partial|readonly|virtual|async|unsafe|extern|mutating|operator|infix|tailrec|synchronized|native|new|const|pub(?:\\([^)]*\\))?)\\s+)*";

/** Patterns of a definition line (without its indentation); group 1 is the name. */
const DEFINITIONS: readonly RegExp[] = [
  new RegExp(`^${MODS}function\\s*\\*?\\s*&?([A-Za-z_$][\\w$.:]*)`),
  new RegExp(`^${MODS}(?:class|interface|enum|record|struct|object|trait|protocol|extension|union|namespace|module|mod|type|typealias)\\s+([A-Za-z_$][\\w$.:]*)`),
  new RegExp(`^${MODS}(?:fn|fun|func|def|defp|defmacro|defmodule|sub|proc)\\s+(?:\\([^)]*\\)\\s*)?(?:<[^>]*>\\s*)?(?:self\\.)?([A-Za-z_$][\\w$.?!=]*)`),
  /^macro_rules!\s*([A-Za-z_]\w*)/,
  /^impl(?:<[^>]*>)?\s+([^{]+?)\s*(?:where\b.*)?\{?\s*$/,
  /^local\s+function\s+([\w.:]+)/,
  /^#\s*define\s+([A-Za-z_]\w*)/,
  /^(?:typedef\s+)?(?:struct|union|enum)\s+([A-Za-z_]\w*)\s*\{?\s*$/,
];
/** Top-level bindings (JS/TS, Go, Rust): only at the left margin. */
const BINDING = new RegExp(`^${MODS}(?:const|let|var|static)\\s+(?:mut\\s+)?([A-Za-z_$][\\w$]*)`);
/** A method in a class body: name(args) { ...; only when indented and the line opens a block. */
const METHOD = /^(?:(?:public|private|protected|static|async|readonly|override|abstract|get|set|final|virtual|synchronized)\s+)*\*?(#?[A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\s*\([^;]*\)\s*(?::\s*[^={;]+)?\s*\{\s*$/;
/** A word of a C, C++, Java or C# declaration before its arguments (a modifier, a type, the name). */
const DECLARATION_WORD = /^[A-Za-z_~][\w:<>,~[\]]*$/;

/**
 * The name of a C, C++, Java or C# function: words (modifiers, a type) and a name before
 * its arguments, and no semicolon after them (its block opens here or on the next line).
 * Read word by word rather than by one regular expression, which could backtrack for long.
 */
function cFunctionName(trimmed: string): string | null {
  const paren = trimmed.indexOf("(");
  if (paren <= 0 || trimmed.indexOf(";", paren) >= 0) return null;
  const head = trimmed.slice(0, paren);
  if (/[=;{}"'(]/.test(head)) return null;
  const words = head.split(/[\s*&]+/).filter((w) => w !== "");
  if (words.length < 2 || !words.every((w) => DECLARATION_WORD.test(w))) return null;
  const name = words[words.length - 1]!;
  if (NOT_NAMES.has(name) || NOT_NAMES.has(words[0]!) || /^(?:return|else|new|throw|await|case|goto)$/.test(words[0]!)) return null;
  return name;
}
/** A shell function: name() { */
const SHELL_FUNCTION = /^(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{?\s*$/;
const NOT_NAMES = new Set(["if", "for", "while", "switch", "catch", "return", "else", "do", "case", "sizeof", "new", "delete", "throw", "typeof", "await", "yield", "function", "super", "this", "with", "elif", "except", "match", "when", "select", "defer", "go", "using", "lock", "foreach"]);
/** Comments, decorators and attributes that belong to the definition below them. */
const LEADING = /^(?:\/\/|\/\*|\*|#(?!\s*(?:include|define|if|endif|else|pragma)\b)|@|--|;;|'''|""")/;

/** Width of a line's indentation (a tab counts 4). */
function indentOf(line: string): number {
  let w = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === 32) w++;
    else if (c === 9) w += 4;
    else return w;
  }
  return -1;
}

/** First words a definition line may start with (keywords and modifiers); others need a cheaper test first. */
const OPENERS = new Set(
  "export default declare public private protected internal fileprivate static final abstract sealed open data inline override suspend partial readonly virtual async unsafe extern mutating operator infix tailrec synchronized native new const pub function class interface enum record struct object trait protocol extension union namespace module mod type typealias fn fun func def defp defmacro defmodule sub proc macro_rules impl local let var typedef get set".split(" "),
);

/** The first word of a line: letters, digits, _, $ and #. */
function firstWord(trimmed: string): string {
  let i = 0;
  while (i < trimmed.length) {
    const c = trimmed.charCodeAt(i);
    if ((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 36 || c === 35) i++;
    else break;
  }
  return trimmed.slice(0, i);
}

/** The hash (h * 31 + c) a line's first word is tested by, without cutting it out. */
const wordHash = (w: string): number => [...w].reduce((h, ch) => (Math.imul(h, 31) + ch.charCodeAt(0)) | 0, 0);
const OPENER_HASHES = new Set([...OPENERS].map(wordHash));
/** First words of statements that open blocks but define nothing (a rare name with the same hash is missed, no more). */
const STATEMENT_HASHES = new Set(
  "if for while switch catch return else elif except try with do case throw await yield assert print console this self super delete typeof import from package require raise pass break continue go defer select using lock foreach echo exit puts expect it describe test log when match unless until begin rescue ensure loop".split(" ").map(wordHash),
);

/** The name a line defines, or null. `nextOpens`: the next line starts with "{" (a block opened there). */
export function definitionName(trimmed: string, indent: number, nextOpens: boolean): string | null {
  const first = firstWord(trimmed);
  if (OPENERS.has(first) || first.charCodeAt(0) === 35 || trimmed.startsWith("pub(")) {
    // A keyword used as a name (data = ..., type(x), get.call) defines nothing.
    const after = trimmed.charCodeAt(first.length);
    const word = after === 32 || after === 9 || (after === 40 && first === "pub") || first.charCodeAt(0) === 35 || first === "macro_rules" || first === "impl";
    // A local binding (an indented const, let or var) is no definition either.
    const local = indent > 0 && (first === "const" || first === "let" || first === "var") && !/^(?:const|let|var)\s+(?:fn|enum|function)\b/.test(trimmed);
    if (!word || local) return null;
    for (const re of DEFINITIONS) {
      const m = re.exec(trimmed);
      // A name ends before a trailing colon (Python's "class Store:"), not inside "A::B".
      if (m !== null && !NOT_NAMES.has(m[1]!)) return m[1]!.trim().replace(/(?<!:):$/, "");
    }
    if (indent === 0) {
      const b = BINDING.exec(trimmed);
      // static binds a name only when a type or value follows it (Rust); "static int f(" is C.
      if (b !== null && (first !== "static" || /^\s*[:=]/.test(trimmed.slice(b.index + b[0].length)))) return b[1]!;
    }
  }
  // Otherwise only a method, a C-like function or a shell function: each opens a block.
  const brace = trimmed.endsWith("{");
  if (!brace && !trimmed.endsWith(")")) return null;
  if (indent === 0) {
    const s = SHELL_FUNCTION.exec(trimmed);
    if (s !== null && !NOT_NAMES.has(s[1]!)) return s[1]!;
  }
  if (indent > 0 && brace) {
    const m = METHOD.exec(trimmed);
    if (m !== null && !NOT_NAMES.has(m[1]!)) return m[1]!;
  }
  if (brace || nextOpens) return cFunctionName(trimmed);
  return null;
}

/** The text of comment lines, without their marks. */
function commentText(lines: readonly string[]): string {
  return lines
    .map((l) => l.trim().replace(/^(?:\/\/\/?|\/\*\*?|\*\/?|#!?|--|;;|'''|""")\s?/, "").replace(/\*\/$/, "").trim())
    .filter((l) => l !== "" && !l.startsWith("@") && !l.startsWith("["))
    .join(" ");
}

/** The first sentence of a definition's documentation: the comment above it, or a Python docstring under it. */
function docSentence(text: string, starts: Int32Array, above: readonly string[], trimmed: string, l: number): string {
  const lines = starts.length - 1;
  let doc = commentText(above);
  const next = l + 1 < lines ? lineAt(text, starts, l + 1).trim() : "";
  if (doc === "" && /:\s*$/.test(trimmed) && /^[rbuRBU]?("""|''')/.test(next)) {
    const body: string[] = [];
    for (let k = l + 1; k < Math.min(lines, l + 30); k++) {
      const t = lineAt(text, starts, k).trim();
      body.push(t);
      if (k > l + 1 && /("""|''')$/.test(t)) break;
      if (k === l + 1 && /^[rbuRBU]?("""|''').+\1$/.test(t)) break;
    }
    doc = body.join(" ").replace(/^[rbuRBU]?("""|''')|("""|''')$/g, "").trim();
  }
  return firstSentence(doc);
}

export function codeDrafts(text: string, starts: Int32Array): Draft[] {
  const lines = starts.length - 1;
  const found: { line: number; indent: number; name: string; title: string; from: number; doc: () => string }[] = [];
  for (let l = 0; l < lines; l++) {
    // Read the indentation and first character in place; most lines end there.
    let i = starts[l]!;
    const end = starts[l + 1]!;
    let indent = 0;
    for (; i < end; i++) {
      const w = text.charCodeAt(i);
      if (w === 32) indent++;
      else if (w === 9) indent += 4;
      else break;
    }
    if (i >= end) continue;
    const c = text.charCodeAt(i);
    // Definitions start with a letter, # (C macros), _ or $.
    if (!((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 35 || c === 95 || c === 36)) continue;
    // A line whose first word is no keyword can only define something when it opens a block.
    let w = i;
    let h = 0;
    for (; w < end; w++) {
      const x = text.charCodeAt(w);
      if (!((x >= 97 && x <= 122) || (x >= 65 && x <= 90) || (x >= 48 && x <= 57) || x === 95 || x === 36 || x === 35)) break;
      h = (Math.imul(h, 31) + x) | 0;
    }
    if (c !== 35 && (w - i > 12 || !OPENER_HASHES.has(h) || !OPENERS.has(text.slice(i, w)))) {
      if (STATEMENT_HASHES.has(h)) continue; // if (...) {, for, return, a call of console...
      let e = end - 1;
      while (e > i && text.charCodeAt(e) <= 32) e--;
      const last = text.charCodeAt(e);
      if (last !== 123 && last !== 41) continue; // { )
    }
    const trimmed = lineAt(text, starts, l).trim();
    if (c === 35 && !/^#\s*define\b/.test(trimmed)) continue;
    let n = l + 1 < lines ? starts[l + 1]! : end;
    while (n < text.length && (text.charCodeAt(n) === 32 || text.charCodeAt(n) === 9)) n++;
    const name = definitionName(trimmed, indent, n < text.length && text.charCodeAt(n) === 123);
    if (name === null) continue;
    // Take the comments, decorators and attributes right above it, at its indentation.
    let from = l;
    const above: string[] = [];
    while (from > 0) {
      const prev = lineAt(text, starts, from - 1);
      const pi = indentOf(prev);
      if (pi < 0 || (pi !== indent && !prev.trimStart().startsWith("*")) || !LEADING.test(prev.trimStart())) break;
      from--;
      above.unshift(prev);
    }
    found.push({ line: l, indent, name, title: cut(trimmed.replace(/\s*\{\s*$/, ""), 160), from, doc: () => docSentence(text, starts, above, trimmed, l) });
  }
  // Depth by indentation: a definition inside another (further indented) one is a level deeper.
  const drafts: Draft[] = [];
  const stack: { indent: number; name: string }[] = [];
  const base = found.reduce((m, f) => Math.min(m, f.indent), Number.POSITIVE_INFINITY);
  let lastLine = -1;
  for (const f of found) {
    while (stack.length > 0 && stack[stack.length - 1]!.indent >= f.indent) stack.pop();
    if (f.indent === base) stack.length = 0;
    const level = stack.length + 1;
    const qualified = stack.map((s) => s.name).concat(f.name).join(".");
    stack.push({ indent: f.indent, name: f.name });
    const line = Math.max(f.from, lastLine + 1);
    lastLine = f.line;
    const keys = qualified === f.name ? [f.name] : [qualified, f.name];
    drafts.push({ line, level, title: `${"  ".repeat(level - 1)}${f.title}`, keys, label: "definition", sentenceOf: f.doc });
  }
  return drafts;
}
