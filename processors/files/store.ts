/**
 * The state the file rules keep (FILE-3, FILE-5, OFF-13), as a port: each tree's start (its
 * root job, whether it runs, its conversation), each conversation's turns, and each job's
 * offload threshold. A memory implementation (`memory-store.ts`, for the unit tests and the
 * application test driver) and a Redis one (`redis-store.ts`: every change a Lua script,
 * idempotent by input offset or by setting only what is absent; reads are plain reads) behave
 * the same.
 *
 * Every record is kept per tenant and tree (FILE-5): tree IDs may be chosen, so two tenants
 * may use the same one, and neither ever sees or changes the other's record.
 */
import type { OffloadThreshold } from "../../config/resolve.ts";
import type { FileReader } from "../../store/files.ts";

/** Trees and conversations are kept past the 90 days their files may live. */
export const LINEAGE_TTL_S = 100 * 24 * 60 * 60;
/** A job's threshold outlives any job. */
export const THRESHOLD_TTL_S = 30 * 24 * 60 * 60;

export interface TreeRecord {
  readonly rootJob: string;
  readonly startEvent: string;
  readonly status: "running" | "ended";
  /** The conversation the tree is a turn of, or null. */
  readonly conversation: string | null;
}

/** Where the input was read, for idempotence by offset. */
export interface InputPosition {
  readonly source: string;
  readonly offset: string;
}

export interface FilesStore {
  tree(tenant: string, treeId: string): Promise<TreeRecord | null>;
  start(tenant: string, treeId: string, start: { readonly event: string; readonly job: string; readonly conversation: string | null }, at: InputPosition): Promise<void>;
  end(tenant: string, treeId: string, job: string, at: InputPosition): Promise<void>;
  /** Records a turn of a conversation; the first record of a turn stands. */
  turn(tenant: string, conversation: string, tree: string, previous: string | null): Promise<void>;
  /** The tree as a reader of files: with its earlier turns when it is a conversation's turn. */
  reader(tenant: string, tree: string): Promise<FileReader>;
  /** The job's threshold: the one kept, else `resolved`, which is kept from now on. */
  threshold(tenant: string, treeId: string, jobId: string, resolved: OffloadThreshold): Promise<OffloadThreshold>;
}

export function parseThreshold(text: string): OffloadThreshold {
  if (text === "off") return "off";
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`a kept offload threshold is a positive whole number of tokens or "off"; Redis holds ${JSON.stringify(text)}`);
  return n;
}
