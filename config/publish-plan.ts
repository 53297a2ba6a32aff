/**
 * What publishing a configuration directory changes in the table: rows whose value differs
 * from what the table holds, and (with `prune`) tombstones for rows the directory no longer
 * has. Publishing the same directory twice changes nothing the second time.
 */
import type { ConfigKind } from "../schemas/types.ts";
import type { TableRecord } from "./load.ts";

export interface PublishPlan {
  readonly upserts: readonly TableRecord[];
  /** Keys (`kind/id`) to remove with a tombstone. */
  readonly deletes: readonly string[];
  readonly unchanged: readonly string[];
}

/** Compares JSON values by content, whatever the order of their keys. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

export function planPublish(current: ReadonlyMap<string, unknown>, rows: readonly TableRecord[], opts: { prune?: boolean; kinds?: readonly ConfigKind[] } = {}): PublishPlan {
  const upserts: TableRecord[] = [];
  const unchanged: string[] = [];
  const wanted = new Set<string>();
  for (const row of rows) {
    wanted.add(row.key);
    if (current.has(row.key) && canonical(current.get(row.key)) === canonical(row.value)) unchanged.push(row.key);
    else upserts.push(row);
  }
  const kinds = new Set(opts.kinds ?? ["agent", "plugin", "tenant"]);
  const deletes = opts.prune ? [...current.keys()].filter((k) => !wanted.has(k) && kinds.has(k.split("/")[0] as ConfigKind)).sort() : [];
  return { upserts, deletes, unchanged };
}
