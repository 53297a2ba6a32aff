/**
 * The file rules of a job's start, pure (FILE-4, FILE-5): whether a start under a chosen tree
 * ID may go ahead, follows the running job, or is refused; and whether a start may be handed
 * files another job stored.
 */
import type { JobEvent } from "../../schemas/types.ts";
import type { TreeRecord } from "../files/store.ts";

/** The permission a person or app needs to hand a job files another job stored (FILE-4). */
export const CONTENT_PERMISSION = "content";

export type StartRule =
  /** The start goes ahead; files it names are handed to it. */
  | { readonly action: "start" }
  /** FILE-5: the tree's job runs: the start follows it and is handed no files. */
  | { readonly action: "follow" }
  | { readonly action: "refuse"; readonly code: RefusalCode; readonly message: string };

export type RefusalCode = "tree_holds_files" | "tree_is_turn" | "content_permission";

/** Who may hand files: a person or an app, with the content permission. */
export function mayHandFiles(e: Pick<JobEvent, "started_by" | "permissions">): boolean {
  return (e.started_by === "person" || e.started_by === "app") && e.permissions.includes(CONTENT_PERMISSION);
}

/**
 * FILE-5 for a root job's start under a chosen tree ID. `record` is what the tree's earlier
 * start left (null: never started, or forgotten); `holdsFiles` is asked only when needed. A
 * start of a tree whose record names this very event is a replay and goes ahead as before.
 */
export async function chosenTreeRule(e: Pick<JobEvent, "id" | "tree_id">, record: TreeRecord | null, holdsFiles: () => Promise<boolean>): Promise<StartRule> {
  if (record?.startEvent === e.id) return { action: "start" };
  if (record?.conversation) {
    return {
      action: "refuse",
      code: "tree_is_turn",
      message: `The job is not started: tree ID ${e.tree_id} is a turn of a conversation, and a start under a chosen ID may not take it, so that a new job never inherits that turn's files. Start it without --id (its tree is then named by its first job's ID), or choose an ID no tree has.`,
    };
  }
  if (record?.status === "running") return { action: "follow" };
  if (await holdsFiles()) {
    return {
      action: "refuse",
      code: "tree_holds_files",
      message: `The job is not started: the tree ${e.tree_id} it names has ended and still holds files, so that a new job never inherits an old job's files. Start it without --id (its tree is then named by its first job's ID), or choose an ID no tree has.`,
    };
  }
  return { action: "start" };
}

/** FILE-4: a start naming files needs a person or app with the content permission. */
export function handingRule(e: Pick<JobEvent, "files" | "started_by" | "permissions" | "principal">): StartRule {
  if (e.files.length === 0 || mayHandFiles(e)) return { action: "start" };
  const who = e.started_by === "person" || e.started_by === "app" ? `${e.started_by} ${e.principal ?? "(unnamed)"}` : `a start by ${e.started_by}`;
  return {
    action: "refuse",
    code: "content_permission",
    message: `The job is not started: it names ${e.files.length} file(s) another job stored, and ${who} does not have the ${CONTENT_PERMISSION} permission that handing files to a job needs. Start it without the files, or ask a tenant admin for the ${CONTENT_PERMISSION} permission.`,
  };
}
