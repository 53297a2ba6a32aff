/**
 * kafkajs's own texts, for the tests of the project's changes to it
 * (`patches/kafkajs+2.2.4.patch`, applied after npm ci): the installed file with the patch's
 * hunks taken back, and a text compiled where kafkajs keeps the file, so its own relative
 * requires resolve.
 */
import { applyPatch, parsePatch, reversePatch } from "diff";
import { readFileSync } from "node:fs";
import { Module } from "node:module";
import { dirname, join, resolve } from "node:path";
import { KAFKAJS_PATCH_FILE, kafkajsFolder } from "../../../processors/runner/kafkajs-patches.ts";

/** The path of an installed kafkajs file, from its name under kafkajs's folder (`src/...`). */
export const installed = (file: string): string => join(kafkajsFolder(), file);

/** kafkajs 2.2.4's text of an installed, patched file: the patch file's hunks of it, reversed. */
export function unpatched(file: string): string {
  const diffs = parsePatch(readFileSync(resolve(KAFKAJS_PATCH_FILE), "utf8"));
  const mine = diffs.find((d) => d.newFileName === `b/node_modules/kafkajs/${file}`);
  if (!mine) throw new Error(`${KAFKAJS_PATCH_FILE} does not change kafkajs/${file}`);
  const text = applyPatch(readFileSync(installed(file), "utf8"), reversePatch(mine));
  if (text === false) throw new Error(`${KAFKAJS_PATCH_FILE}'s change of kafkajs/${file} does not reverse on the installed file: is it applied?`);
  return text;
}

/** The exports of `text`, compiled as the module at `file` (a path under kafkajs's folder, `src/...`). */
export function compiledAt<T>(file: string, text: string): T {
  const path = installed(file);
  const m = new Module(path) as Module & { _compile(code: string, file: string): void; paths: string[] };
  m.filename = path;
  m.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(dirname(path));
  m._compile(text, path);
  return m.exports as T;
}
