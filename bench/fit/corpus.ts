// Builds the calibration corpus: pieces of 1-8 KB of real text nobody here wrote, per class,
// cut at line ends from files found on this machine (node_modules, /usr/share/doc, the
// licenses Debian ships, Python's and Go's sources, C headers, logs, `diff -u` of two
// versions of a file, TypeScript's translated messages, the translations of gettext catalogs
// in 19 more languages). Deterministic for a given machine.
//
//   npx tsx bench/fit/corpus.ts            -> bench/out/fit-corpus.json
//
// A piece belongs to the held-out set when its source's hash is 0 mod 4 (see `heldOut`):
// calibrate.ts never learns from those, and fixtures.ts draws the checked-in sample from them.
//
//   npx tsx bench/fit/corpus.ts --unseen   -> bench/out/fit-unseen.json
//
// A second held-out set, from files none of the corpus's pieces comes from, and from kinds the
// corpus has not got (see `buildUnseen`): Debian's documentation, the rest of Python's standard
// library, man pages (English and translated, as man renders them), and logs of programs run
// here. Nothing reads it but estimate.ts: calibration never sees it.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";

/** A piece of text: its class, its source file, where in the source it starts, and the text. */
export type Piece = { cls: string; src: string; at: number; text: string };

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const NM = join(ROOT, "node_modules");
export const CORPUS_PATH = join(ROOT, "bench", "out", "fit-corpus.json");
export const UNSEEN_PATH = join(ROOT, "bench", "out", "fit-unseen.json");

export function fnv(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** A quarter of the pieces (drawn by a hash of source and place) are never used for calibration. */
export function heldOut(p: { src: string; at: number }): boolean {
  const h = fnv(`${p.src}@${p.at}`);
  return (Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> 28) % 4 === 0;
}

export function loadCorpus(): Piece[] {
  return JSON.parse(readFileSync(CORPUS_PATH, "utf8")) as Piece[];
}

export function loadUnseen(): Piece[] {
  return JSON.parse(readFileSync(UNSEEN_PATH, "utf8")) as Piece[];
}

function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function walk(dir: string, keep: (p: string) => boolean, out: string[] = [], depth = 0): string[] {
  if (depth > 12) return out;
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return out;
  }
  for (const name of names) {
    const p = join(dir, name);
    let st;
    try {
      st = statSync(p);
    } catch {
      continue;
    }
    if (st.isDirectory()) walk(p, keep, out, depth + 1);
    else if (st.isFile() && st.size > 800 && st.size < 3_000_000 && keep(p)) out.push(p);
  }
  return out;
}

function read(p: string): string {
  const b = readFileSync(p);
  return (p.endsWith(".gz") ? gunzipSync(b) : b).toString("utf8");
}

/** Up to `max` pieces of 1-8 KB from text, cut after a newline, with gaps between them. */
export function cut(text: string, src: string, cls: string, max: number): Piece[] {
  const r = rng(fnv(src));
  const out: Piece[] = [];
  let pos = 0;
  while (out.length < max && pos < text.length - 1024) {
    let end = Math.min(text.length, pos + 1024 + Math.floor(r() * 7168));
    const nl = text.lastIndexOf("\n", end);
    if (nl > pos + 900) end = nl + 1;
    const piece = text.slice(pos, end);
    if (piece.length >= 900 && !piece.includes("\u0000")) out.push({ cls, src, at: pos, text: piece });
    pos = end + Math.floor(r() * 20000);
    const next = text.indexOf("\n", pos);
    if (next < 0) break;
    pos = next + 1;
  }
  return out;
}

const RUST_BOOK = "/root/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/share/doc/rust/html/book";
const notMinified = (p: string): boolean => {
  const lines = readFileSync(p, "utf8").split("\n");
  return !lines.some((l) => l.length > 1000);
};

const SOURCES: Record<string, () => string[]> = {
  markdown: () => [
    ...walk(NM, (p) => /\.md$/i.test(p) && !/changelog|history|license|zh|\.ja\.|_cn|ko\.md/i.test(basename(p))),
    ...walk("/usr/share/doc", (p) => /\.md(\.gz)?$/i.test(p) && !/changelog/i.test(p)),
  ],
  changelog: () => [
    ...walk(NM, (p) => /^(changelog|history|changes)(\.md)?$/i.test(basename(p))),
    ...walk("/usr/share/doc", (p) => /\/changelog(\.Debian)?\.gz$/.test(p)),
    ...walk("/usr/share/doc/nodejs/changelogs", () => true),
  ],
  license: () => [
    ...walk(NM, (p) => /^(license|licence|copying)(\.md|\.txt)?$/i.test(basename(p))),
    ...walk("/usr/share/common-licenses", () => true),
    ...walk("/usr/share/doc", (p) => /\/copyright$/.test(p)),
  ],
  ts: () => walk(NM, (p) => /\.(ts|mts|cts)$/.test(p) && !/\.d\.[mc]?ts$/.test(p)),
  dts: () => walk(NM, (p) => /\.d\.[mc]?ts$/.test(p)),
  js: () => walk(NM, (p) => /\.(js|mjs|cjs)$/.test(p) && !/\.min\./.test(p)).filter(notMinified),
  json: () => walk(NM, (p) => /\.json$/.test(p) && !/diagnosticMessages|locales/.test(p)),
  python: () => [
    ...walk("/usr/lib/python3.11", (p) => /\.py$/.test(p) && !/\/test\//.test(p)),
    ...walk("/usr/lib/python3/dist-packages", (p) => /\.py$/.test(p) && !/_emoji_codes|uts46data|_spinners/.test(p)),
  ],
  go: () => walk("/usr/local/go/src", (p) => /\.go$/.test(p) && !/testdata/.test(p)),
  c: () => walk("/usr/include", (p) => /\.h$/.test(p)),
  yaml: () => [...walk(NM, (p) => /\.ya?ml$/.test(p)), ...walk("/usr/share", (p) => /\.ya?ml$/.test(p))],
  html: () => walk(RUST_BOOK, (p) => /\.html$/.test(p)),
  log: () =>
    ["/var/log/dpkg.log", "/var/log/alternatives.log", "/var/log/apt/history.log", "/var/log/apt/term.log", "/var/log/postgresql/postgresql-15-main.log", "/var/log/fontconfig.log"].filter(existsSync),
};

function diffPieces(): Piece[] {
  const pairs: [string, string][] = [];
  const gt = join(NM, "gpt-tokenizer");
  for (const f of walk(join(gt, "esm"), (p) => p.endsWith(".js"))) {
    const c = f.replace("/esm/", "/cjs/");
    if (existsSync(c)) pairs.push([c, f]);
  }
  for (const f of walk(join(gt, "esm"), (p) => p.endsWith(".d.ts"))) {
    const c = f.replace("/esm/", "/cjs/").replace(/\.d\.ts$/, ".d.cts");
    if (existsSync(c)) pairs.push([c, f]);
  }
  const tl = join(NM, "typescript/lib");
  const locales = [["zh-cn", "zh-tw"], ["de", "fr"], ["es", "it"], ["pt-br", "es"], ["ja", "ko"], ["ru", "pl"], ["cs", "pl"], ["tr", "de"]] as const;
  for (const [a, b] of locales) pairs.push([join(tl, a, "diagnosticMessages.generated.json"), join(tl, b, "diagnosticMessages.generated.json")]);
  const libs = readdirSync(tl).filter((f) => /^lib\.es20\d\d\..*\.d\.ts$/.test(f)).sort();
  for (let i = 0; i + 1 < libs.length; i++) pairs.push([join(tl, libs[i]!), join(tl, libs[i + 1]!)]);
  const lic = "/usr/share/common-licenses";
  pairs.push([join(lic, "GPL-2"), join(lic, "GPL-3")], [join(lic, "LGPL-2.1"), join(lic, "LGPL-3")], [join(lic, "GFDL-1.2"), join(lic, "GFDL-1.3")]);
  for (const pkg of ["packaging", "urllib3", "requests"]) {
    const vendored = `/usr/lib/python3/dist-packages/pip/_vendor/${pkg}`;
    for (const f of walk(vendored, (p) => p.endsWith(".py"))) {
      const g = f.replace(vendored, `/usr/lib/python3/dist-packages/${pkg}`);
      if (existsSync(g)) pairs.push([f, g]);
    }
  }
  const out: Piece[] = [];
  for (const [a, b] of pairs) {
    if (!existsSync(a) || !existsSync(b)) continue;
    let d: string;
    try {
      d = execFileSync("diff", ["-u", a, b], { encoding: "utf8", maxBuffer: 1 << 26 });
    } catch (e) {
      // diff exits 1 when the files differ; its output is still the diff.
      const out = (e as { stdout?: unknown }).stdout;
      d = typeof out === "string" ? out : Buffer.isBuffer(out) ? out.toString("utf8") : "";
    }
    if (d.length >= 1000) out.push(...cut(d, `diff -u ${a} ${b}`, "diff", 4));
  }
  return out.slice(0, 200);
}

function translatedPieces(): Piece[] {
  const out: Piece[] = [];
  const tl = join(NM, "typescript/lib");
  for (const loc of readdirSync(tl).sort()) {
    const p = join(tl, loc, "diagnosticMessages.generated.json");
    if (!existsSync(p)) continue;
    const messages = JSON.parse(readFileSync(p, "utf8")) as Record<string, string>;
    const text = Object.values(messages).join("\n") + "\n";
    out.push(...cut(text, `${p} (message values, one per line)`, /^(zh|ja|ko)/.test(loc) ? "cjk" : "intl", 25));
  }
  for (const p of [join(NM, "minio/README_zh_CN.md"), join(NM, "@js-sdsl/ordered-map/README.zh-CN.md")]) {
    if (existsSync(p)) out.push(...cut(read(p), p, "cjk", 4));
  }
  // The translations of the programs installed here (gettext catalogs), in languages
  // TypeScript's messages have not got: Cyrillic- and Greek-script ones, and Latin-script
  // ones of northern and eastern Europe. The catalogs of names (iso_*) are left out.
  for (const loc of GETTEXT_LANGUAGES) {
    const dir = join("/usr/share/locale", loc, "LC_MESSAGES");
    let names: string[];
    try {
      names = readdirSync(dir).filter((n) => n.endsWith(".mo") && !n.startsWith("iso_")).sort();
    } catch {
      continue;
    }
    const text = names.flatMap((n) => catalogTranslations(readFileSync(join(dir, n)))).join("\n") + "\n";
    out.push(...cut(text, `${dir} (the catalogs' translations, one per line)`, "intl", 8));
  }
  return out;
}

const GETTEXT_LANGUAGES = ["uk", "be", "bg", "sr", "mk", "el", "nl", "ro", "sv", "da", "fi", "hu", "sk", "hr", "sl", "ca", "lt", "lv", "et"];

/**
 * The translated strings of a compiled gettext catalog (.mo): each message's translation,
 * plural forms apart; the header entry (the empty message's) is left out.
 */
export function catalogTranslations(mo: Buffer): string[] {
  if (mo.length < 28) return [];
  const magic = mo.readUInt32LE(0);
  const le = magic === 0x950412de;
  if (!le && magic !== 0xde120495) return [];
  const u32 = (at: number): number => (le ? mo.readUInt32LE(at) : mo.readUInt32BE(at));
  const n = u32(8);
  const originals = u32(12);
  const translations = u32(16);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const idLength = u32(originals + 8 * i);
    if (idLength === 0) continue;
    const length = u32(translations + 8 * i);
    const at = u32(translations + 8 * i + 4);
    if (at + length > mo.length) break;
    const text = mo.toString("utf8", at, at + length);
    if (text.includes("\uFFFD")) continue;
    for (const form of text.split("\u0000")) if (form.trim() !== "") out.push(form);
  }
  return out;
}

export function buildCorpus(): Piece[] {
  const all: Piece[] = [];
  for (const [cls, list] of Object.entries(SOURCES)) {
    const r = rng(fnv(cls));
    const files = list().map((f) => [r(), f] as const).sort((a, b) => a[0] - b[0]).map((x) => x[1]);
    const pieces: Piece[] = [];
    for (const f of files) {
      if (pieces.length >= 160) break;
      let t: string;
      try {
        t = read(f);
      } catch {
        continue;
      }
      if (t.includes("\uFFFD") || t.includes("\u0000")) continue;
      pieces.push(...cut(t, f, cls, cls === "log" ? 40 : 3));
    }
    all.push(...pieces);
  }
  all.push(...diffPieces(), ...translatedPieces());
  return all;
}

/** A man page as groff renders it for a terminal 80 columns wide, without overstrikes or colours. */
function manPage(p: string): string {
  return execFileSync("groff", ["-k", "-t", "-mandoc", "-Tutf8", "-rLL=80n", "-P-cbou"], {
    input: read(p),
    encoding: "utf8",
    maxBuffer: 1 << 26,
    timeout: 20_000,
    stdio: ["pipe", "pipe", "ignore"],
  });
}

/** What a program writes, stdout then stderr (or "" when it cannot run). */
function programOutput(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: "utf8", maxBuffer: 1 << 26, timeout: 60_000, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, LC_ALL: "C.UTF-8", PYTHONDONTWRITEBYTECODE: "1" } });
  return (r.stdout ?? "") + (r.stderr ?? "");
}

/** Logs of programs run here: what each is run as, and its log. */
const PROGRAM_LOGS: [string, () => string][] = [
  ["xz -dc /var/log/apt/eipp.log.xz (apt's solver log)", () => (existsSync("/var/log/apt/eipp.log.xz") ? programOutput("xz", ["-dc", "/var/log/apt/eipp.log.xz"]) : "")],
  ["python3 -v (the import log of a few standard modules)", () => programOutput("python3", ["-v", "-c", "import json, email.parser, http.client, logging.handlers, asyncio, sqlite3, xml.dom.minidom"])],
  ["python3 -v (the import log of other standard modules)", () => programOutput("python3", ["-v", "-c", "import argparse, unittest, tarfile, zipfile, decimal, csv, sched, difflib, pydoc"])],
  ["ldconfig -p (the dynamic linker's cache)", () => programOutput("ldconfig", ["-p"])],
  ["apt-get -s -o Debug::pkgProblemResolver=1 -o Debug::pkgDepCache::AutoInstall=1 upgrade (a simulated upgrade)", () => programOutput("apt-get", ["-s", "-o", "Debug::pkgProblemResolver=1", "-o", "Debug::pkgDepCache::AutoInstall=1", "upgrade"])],
];

const TRANSLATED_MAN = ["cs", "da", "de", "es", "fi", "fr", "hr", "hu", "id", "it", "nl", "pl", "pt", "pt_BR", "ro", "ru", "sl", "sr", "sv", "tr", "uk"];
const CJK_MAN = ["ja", "ko", "zh_CN", "zh_TW"];

/** Sources of the second held-out set, by class; a source is [its name, its text]. */
const UNSEEN: Record<string, () => [string, () => string][]> = {
  doc: () =>
    walk("/usr/share/doc", (p) => /\/(README|NEWS|TODO|FAQ|AUTHORS|THANKS|BUGS|HACKING|USAGE)[^/]*$|\.txt(\.gz)?$/i.test(p) && !/\.(md|html?|json|ya?ml)(\.gz)?$|changelog|copyright/i.test(p)).map((p) => [p, () => read(p)]),
  python: () => walk("/usr/lib/python3.11", (p) => /\.py$/.test(p) && !/\/test\/|\/tests\//.test(p)).map((p) => [p, () => read(p)]),
  man: () => ["man1", "man5", "man7", "man8"].flatMap((s) => walk(join("/usr/share/man", s), (p) => p.endsWith(".gz"))).map((p) => [p, () => manPage(p)]),
  "man-intl": () => TRANSLATED_MAN.flatMap((l) => walk(join("/usr/share/man", l), (p) => p.endsWith(".gz"))).map((p) => [p, () => manPage(p)]),
  "man-cjk": () => CJK_MAN.flatMap((l) => walk(join("/usr/share/man", l), (p) => p.endsWith(".gz"))).map((p) => [p, () => manPage(p)]),
  log: () => PROGRAM_LOGS,
};

/**
 * The second held-out set: pieces of the sources above, none from a file any piece of the
 * calibration corpus (`corpus`) comes from. Deterministic for a given machine.
 */
export function buildUnseen(corpus: readonly Piece[]): Piece[] {
  const used = new Set(corpus.map((p) => p.src));
  const all: Piece[] = [];
  for (const [cls, list] of Object.entries(UNSEEN)) {
    const r = rng(fnv(`unseen ${cls}`));
    const sources = list()
      .filter(([src]) => !used.has(src))
      .map((x) => [r(), x] as const)
      .sort((a, b) => a[0] - b[0])
      .map((x) => x[1]);
    const pieces: Piece[] = [];
    for (const [src, text] of sources) {
      if (pieces.length >= 100) break;
      let t: string;
      try {
        t = text();
      } catch {
        continue;
      }
      if (t.includes("\uFFFD") || t.includes("\u0000")) continue;
      pieces.push(...cut(t, src, cls, cls === "log" ? 40 : 2));
    }
    all.push(...pieces.slice(0, 100));
  }
  return all;
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes("--unseen")) {
  const all = buildUnseen(loadCorpus());
  writeFileSync(UNSEEN_PATH, JSON.stringify(all));
  const byClass = new Map<string, number>();
  for (const p of all) byClass.set(p.cls, (byClass.get(p.cls) ?? 0) + 1);
  console.log(`${all.length} pieces, ${all.reduce((s, p) => s + p.text.length, 0)} chars -> ${UNSEEN_PATH}`);
  console.log([...byClass].map(([c, n]) => `${c} ${n}`).join(", "));
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const all = buildCorpus();
  mkdirSync(dirname(CORPUS_PATH), { recursive: true });
  writeFileSync(CORPUS_PATH, JSON.stringify(all));
  const byClass = new Map<string, number>();
  for (const p of all) byClass.set(p.cls, (byClass.get(p.cls) ?? 0) + 1);
  console.log(`${all.length} pieces, ${all.reduce((s, p) => s + p.text.length, 0)} chars -> ${CORPUS_PATH}`);
  console.log([...byClass].map(([c, n]) => `${c} ${n}`).join(", "));
}
