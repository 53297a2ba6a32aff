/**
 * FILE-1, the call side: a call whose top-level argument is a file URI
 * (`oz0-file:sha256:<hex>`) gets the file as a path in `_meta["oz0/files"]`, argument name to
 * path, when the call's tree may read it (its own files, an earlier turn's, one handed to it).
 * The path is `/oz0/files/<hex>`: the runtime fetches the file through the edge under the
 * call binding's tree and puts it there, read-only, before it makes the call. A file the tree
 * may not read is not resolved, and the call carries `_meta["oz0/files_not_found"]`, argument
 * name to the same "not found" message a read gives, whether the file exists or not.
 *
 * OFF-9: a file the tree may read whose labels are above the clearance of the call's agent
 * (`labelsAboveClearance`, the check `oz.read_result` makes) is not handed either: it is not
 * resolved, and the call carries `_meta["oz0/files_withheld"]`, argument name to words saying
 * so. `loop-calls` refuses a call that carries it (`withheldFilesRefusal`), so the tool never
 * sees it and the model reads the words as the call's failed result. The refusal is made where
 * every call is decided, on the filled call, rather than by the fill-in itself: the fill-in
 * only rewrites arguments, and a decision of its own would be a second answer to the call.
 *
 * Calls carry their `_meta` inside the arguments JSON (a top-level `_meta` object), which the
 * runtime sends as the MCP request's `_meta`. The three keys are set from the resolution only:
 * any value a caller put there is dropped.
 */
import type { AgentDefinition } from "../../config/agent.ts";
import { FileNotFound } from "../../store/file-errors.ts";
import type { FileReader } from "../../store/files.ts";
import type { ToolCall } from "../../schemas/types.ts";
import { aboveClearanceWords, labelsAboveClearance } from "../read-result/offered.ts";

export const FILES_META_KEY = "oz0/files";
export const FILES_NOT_FOUND_META_KEY = "oz0/files_not_found";
/** OFF-9: argument name to why the file is not handed: its labels are above the agent's clearance. */
export const FILES_WITHHELD_META_KEY = "oz0/files_withheld";
const KEYS = [FILES_META_KEY, FILES_NOT_FOUND_META_KEY, FILES_WITHHELD_META_KEY] as const;
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
 * The arguments with `_meta` carrying the resolved paths, the files not found and the files
 * withheld; any value of those keys the caller put there is dropped. Null when there is nothing
 * to say and the caller put none of them: the arguments are left exactly as they were.
 */
export function withFileMeta(
  args: Readonly<Record<string, unknown>>,
  paths: Readonly<Record<string, string>>,
  notFound: Readonly<Record<string, string>>,
  withheld: Readonly<Record<string, string>> = {},
): Record<string, unknown> | null {
  const meta = args._meta !== null && typeof args._meta === "object" && !Array.isArray(args._meta) ? (args._meta as Record<string, unknown>) : undefined;
  const claimed = meta !== undefined && KEYS.some((k) => k in meta);
  const said: Array<readonly [string, Readonly<Record<string, string>>]> = [
    [FILES_META_KEY, paths],
    [FILES_NOT_FOUND_META_KEY, notFound],
    [FILES_WITHHELD_META_KEY, withheld],
  ];
  const any = said.some(([, v]) => Object.keys(v).length > 0);
  if (!any && !claimed) return null;
  const rest: Record<string, unknown> = { ...meta };
  for (const k of KEYS) delete rest[k];
  const next: Record<string, unknown> = { ...rest };
  for (const [k, v] of said) if (Object.keys(v).length > 0) next[k] = v;
  const out: Record<string, unknown> = { ...args };
  if (Object.keys(next).length > 0) out._meta = next;
  else delete out._meta;
  return out;
}

/** What resolving file arguments needs: who the call's tree may read as, and whether it may read a file. */
export interface FileArgumentsEnv {
  /** The call's tree as a reader, with the earlier turns of its conversation (FILE-3). */
  reader(tenant: string, tree: string): Promise<FileReader>;
  /** The file's labels when the reader may read it (OFF-9); rejects with FileNotFound otherwise. */
  readable(reader: FileReader, ref: string): Promise<{ readonly labels: readonly string[] }>;
}

/** OFF-9: why a file is not handed to a call of this agent, in the words `oz.read_result` withholds a result with. */
export function withheldWords(ref: string, above: readonly string[], agent: string): string {
  return `${ref} is withheld by clearance: ${aboveClearanceWords(above.length, agent)}, so it is not handed to a tool`;
}

/**
 * FILE-1: the call's arguments with its file arguments resolved, or null when they stay as they
 * are. OFF-9: a file whose labels are above the clearance of `agent` (the call's agent's
 * definition; none, no clearance to hold it to) is withheld instead of resolved.
 */
export async function resolveFileArguments(
  call: Pick<ToolCall, "tenant" | "tree_id">,
  args: Readonly<Record<string, unknown>>,
  env: FileArgumentsEnv,
  agent?: AgentDefinition,
): Promise<Record<string, unknown> | null> {
  const refs = fileArguments(args);
  const paths: Record<string, string> = {};
  const notFound: Record<string, string> = {};
  const withheld: Record<string, string> = {};
  if (refs.length > 0) {
    const reader = await env.reader(call.tenant, call.tree_id);
    for (const { name, ref, hex } of refs) {
      let labels: readonly string[];
      try {
        ({ labels } = await env.readable(reader, ref));
      } catch (err) {
        if (!(err instanceof FileNotFound)) throw err;
        notFound[name] = err.message;
        continue;
      }
      const above = labelsAboveClearance(labels, agent);
      if (above.length > 0 && agent !== undefined) withheld[name] = withheldWords(ref, above, agent.name);
      else paths[name] = filePath(hex);
    }
  }
  return withFileMeta(args, paths, notFound, withheld);
}

/**
 * OFF-9: the words a call is refused with when the fill-in withheld any of its file arguments
 * (`_meta["oz0/files_withheld"]`), or null when it withheld none.
 */
export function withheldFilesRefusal(args: Readonly<Record<string, unknown>>): string | null {
  const meta = args._meta;
  if (meta === null || typeof meta !== "object" || Array.isArray(meta)) return null;
  const withheld = (meta as Record<string, unknown>)[FILES_WITHHELD_META_KEY];
  if (withheld === null || typeof withheld !== "object" || Array.isArray(withheld)) return null;
  const said = Object.entries(withheld as Record<string, unknown>).map(([name, words]) => `argument ${name}: ${typeof words === "string" ? words : "withheld by clearance"}`);
  if (said.length === 0) return null;
  return `The call was not made: a file handed to it is above this agent's clearance (${said.join("; ")}). Call it without that file.`;
}
