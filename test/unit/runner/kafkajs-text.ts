/**
 * kafkajs's own texts, for the tests of bin/patch-kafkajs.mjs: the installed file with the
 * patch's edits taken back, and a text compiled where kafkajs keeps the file, so its own
 * relative requires resolve.
 */
import { readFileSync } from "node:fs";
import { Module } from "node:module";
import { dirname, resolve } from "node:path";

/** kafkajs 2.2.4's text of an installed, patched file: each edit's replacement put back. */
export function unpatched(file: string, edits: ReadonlyArray<readonly [string, string]>): string {
  let text = readFileSync(resolve(file), "utf8");
  for (const [before, after] of edits) text = text.replace(after, () => before);
  return text;
}

/** The exports of `text`, compiled as the module at `file` (a path inside node_modules/kafkajs). */
export function compiledAt<T>(file: string, text: string): T {
  const path = resolve(file);
  const m = new Module(path) as Module & { _compile(code: string, file: string): void; paths: string[] };
  m.filename = path;
  m.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(dirname(path));
  m._compile(text, path);
  return m.exports as T;
}
