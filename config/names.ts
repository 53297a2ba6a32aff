import { basename, dirname } from "node:path";
import { ID_PATTERN, readId } from "./fields.ts";
import type { Value } from "./yaml-file.ts";

/**
 * The name a file gives what it defines when the file does not say: `agents/acme-reviewer.yaml`
 * → `acme-reviewer`, `plugins/acme_docs/oz0-plugin.yaml` → `acme_docs`.
 */
export function nameFromPath(path: string): string {
  const file = basename(path);
  if (file === "oz0-plugin.yaml" || file === "oz0-plugin.yml") return basename(dirname(path));
  return file.replace(/\.ya?ml$/, "");
}

/** The name written, else the file's name; reported when neither is a valid name. */
export function readName(v: Value, path: string): string {
  if (!v.absent) return readId(v, "a name") ?? "";
  const fromPath = nameFromPath(path);
  if (!ID_PATTERN.test(fromPath)) v.fail(`is required: the file name "${fromPath}" is not a valid name`);
  return fromPath;
}
