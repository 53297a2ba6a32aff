// Draws the checked-in sample of the estimate's accuracy test (test/fixtures/tokens/) from
// the held-out pieces of the calibration corpus: a few pieces per class, with a manifest
// naming each piece's source file, class and licence.
//
//   npx tsx bench/fit/corpus.ts && npx tsx bench/fit/fixtures.ts
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { fnv, heldOut, loadCorpus, type Piece } from "./corpus.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const OUT = join(ROOT, "test", "fixtures", "tokens");
const PER_CLASS = 5;
const MAX_CHARS = 5000;

/** The licence a source is under, as SPDX or where its terms are. */
function licenceOf(src: string): string {
  const path = src.replace(/ \(.*\)$/, "");
  const nm = path.indexOf("/node_modules/");
  if (nm >= 0) {
    const rest = path.slice(nm + "/node_modules/".length).split("/");
    const pkg = rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!;
    const manifest = join(path.slice(0, nm), "node_modules", pkg, "package.json");
    const licence = (JSON.parse(readFileSync(manifest, "utf8")) as { license?: unknown }).license;
    return typeof licence === "string" ? `${licence} (npm package ${pkg})` : "unknown";
  }
  if (path.startsWith("/usr/local/go/")) return "BSD-3-Clause (Go, /usr/local/go/LICENSE)";
  if (path.startsWith("/usr/lib/python3.11/")) return "PSF-2.0 (Python 3.11, /usr/lib/python3.11/LICENSE.txt)";
  if (path.startsWith("/root/.rustup/")) return "MIT OR Apache-2.0 (The Rust Programming Language book)";
  if (path.startsWith("/var/log/")) return "machine log of this build host (no copyright)";
  if (path.startsWith("/usr/share/common-licenses/")) return "verbatim copying permitted (the licence text itself)";
  try {
    const owner = execFileSync("dpkg", ["-S", path], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).split(":")[0]!.trim();
    return `see /usr/share/doc/${owner}/copyright (Debian package ${owner})`;
  } catch {
    return "unknown";
  }
}


function licenceOfPiece(p: Piece): string {
  const m = /^diff -u (\S+) (\S+)$/.exec(p.src);
  if (m !== null) {
    const [a, b] = [licenceOf(m[1]!), licenceOf(m[2]!)];
    return a === b ? a : `${a}; ${b}`;
  }
  return licenceOf(p.src);
}

/** Unusable in a fixture: unknown licence, or a lone surrogate from a cut. */
function usable(p: Piece): boolean {
  if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(p.text)) return false;
  if (p.src.includes("/dist-packages/")) return false; // licences vary by package; the stdlib is enough
  return licenceOfPiece(p) !== "unknown";
}

function main(): void {
  const pieces = loadCorpus().filter(heldOut).filter((p) => p.text.length <= MAX_CHARS);
  const byClass = new Map<string, Piece[]>();
  for (const p of pieces) byClass.set(p.cls, [...(byClass.get(p.cls) ?? []), p]);
  if (existsSync(OUT)) for (const f of readdirSync(OUT)) if (f.endsWith(".txt") || f === "manifest.json") rmSync(join(OUT, f));
  mkdirSync(OUT, { recursive: true });
  const manifest: { file: string; class: string; source: string; at: number; chars: number; licence: string }[] = [];
  for (const [cls, list] of [...byClass].sort()) {
    // Spread over sources: order by a hash, take one piece per source first.
    const ordered = [...list].sort((a, b) => fnv(`${a.src}@${a.at}`) - fnv(`${b.src}@${b.at}`));
    const chosen: Piece[] = [];
    const sources = new Set<string>();
    for (const p of ordered) {
      if (chosen.length < PER_CLASS && !sources.has(p.src) && usable(p)) {
        chosen.push(p);
        sources.add(p.src);
      }
    }
    for (const p of ordered) if (chosen.length < PER_CLASS && !chosen.includes(p) && usable(p)) chosen.push(p);
    chosen.forEach((p, i) => {
      const file = `${cls}-${i + 1}.txt`;
      writeFileSync(join(OUT, file), p.text);
      manifest.push({ file, class: cls, source: p.src, at: p.at, chars: p.text.length, licence: licenceOfPiece(p) });
    });
  }
  writeFileSync(join(OUT, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
  const total = manifest.reduce((s, m) => s + m.chars, 0);
  console.log(`${manifest.length} pieces, ${total} characters -> ${OUT}`);
}

main();
