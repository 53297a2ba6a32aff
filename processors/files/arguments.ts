/**
 * FILE-1, the call side: a call whose top-level argument is a file URI
 * (`oz0-file:sha256:<hex>`) gets the file as a path in `_meta["oz0/files"]`, argument name to
 * path, when the call's tree may read it (its own files, an earlier turn's, one handed to it).
 * The path is `/oz0/files/<hex>`: the runtime fetches the file through the edge under the
 * call binding's tree and puts it there, read-only, before it makes the call. A file the tree
 * may not read is not resolved, and the call carries `_meta["oz0/files_not_found"]`, argument
 * name to the same "not found" message a read gives, whether the file exists or not.
 *
 * Calls carry their `_meta` inside the arguments JSON (a top-level `_meta` object), which the
 * runtime sends as the MCP request's `_meta`. Both keys are set from the resolution only: any
 * value a caller put there is dropped.
 */
import { FileNotFound } from "../../store/file-errors.ts";
import type { FileReader } from "../../store/files.ts";
import type { ToolCall } from "../../schemas/types.ts";

export const FILES_META_KEY = "oz0/files";
export const FILES_NOT_FOUND_META_KEY = "oz0/files_not_found";
/** Where the runtime puts a resolved file: this folder, then the file's hex digest. */
export const FILES_MOUNT = "/oz0/files/";

const REF = /^oz0-file:sha256:([0-9a-f]{64})$/;

/** The top-level arguments that are file URIs, in argument order. */
export function fileArguments(args: Readonly<Record<string, unknown>>): Array<{ readonly name: string; readonly ref: string; readonly hex: string }> {
  const out: Array<{ name: string; ref: string; hex: string }> = [];
  for (const [name, value] of Object.entries(args)) {
    if (name === "_meta" || typeof value !== "string") continue;
    const m = REF.exec(value);
    if (m?.[1]) out.push({ name, ref: value, hex: m[1] });
  }
  return out;
}

export function filePath(hex: string): string {
  return `${FILES_MOUNT}${hex}`;
}

/**
 * The arguments with `_meta` carrying the resolved paths and the files not found; any value of
 * those two keys the caller put there is dropped. Null when there is nothing to say and the
 * caller put neither key: the arguments are left exactly as they were.
 */
export function withFileMeta(args: Readonly<Record<string, unknown>>, paths: Readonly<Record<string, string>>, notFound: Readonly<Record<string, string>>): Record<string, unknown> | null {
  const meta = args._meta !== null && typeof args._meta === "object" && !Array.isArray(args._meta) ? (args._meta as Record<string, unknown>) : undefined;
  const claimed = meta !== undefined && (FILES_META_KEY in meta || FILES_NOT_FOUND_META_KEY in meta);
  const any = Object.keys(paths).length > 0 || Object.keys(notFound).length > 0;
  if (!any && !claimed) return null;
  const rest: Record<string, unknown> = { ...meta };
  delete rest[FILES_META_KEY];
  delete rest[FILES_NOT_FOUND_META_KEY];
  const next: Record<string, unknown> = {
    ...rest,
    ...(Object.keys(paths).length > 0 ? { [FILES_META_KEY]: paths } : {}),
    ...(Object.keys(notFound).length > 0 ? { [FILES_NOT_FOUND_META_KEY]: notFound } : {}),
  };
  const out: Record<string, unknown> = { ...args };
  if (Object.keys(next).length > 0) out._meta = next;
  else delete out._meta;
  return out;
}

/** What resolving file arguments needs: who the call's tree may read as, and whether it may read a file. */
export interface FileArgumentsEnv {
  /** The call's tree as a reader, with the earlier turns of its conversation (FILE-3). */
  reader(tenant: string, tree: string): Promise<FileReader>;
  /** Resolves when the reader may read the file; rejects with FileNotFound otherwise. */
  readable(reader: FileReader, ref: string): Promise<unknown>;
}

/** FILE-1: the call's arguments with its file arguments resolved, or null when they stay as they are. */
export async function resolveFileArguments(call: Pick<ToolCall, "tenant" | "tree_id">, args: Readonly<Record<string, unknown>>, env: FileArgumentsEnv): Promise<Record<string, unknown> | null> {
  const refs = fileArguments(args);
  const paths: Record<string, string> = {};
  const notFound: Record<string, string> = {};
  if (refs.length > 0) {
    const reader = await env.reader(call.tenant, call.tree_id);
    for (const { name, ref, hex } of refs) {
      try {
        await env.readable(reader, ref);
        paths[name] = filePath(hex);
      } catch (err) {
        if (!(err instanceof FileNotFound)) throw err;
        notFound[name] = err.message;
      }
    }
  }
  return withFileMeta(args, paths, notFound);
}
