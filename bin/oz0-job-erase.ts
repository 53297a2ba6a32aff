/**
 * `oz0 job erase`: erasure of one job tree's data (OFF-10, FILE-6), not the tenant's: its files
 * and offloaded results, its trace parts and its Redis state (store/tree-data.ts, docs/files.md).
 * A held tree is refused whole; the erasure is audited (`tree.erased`) naming what was erased by
 * counts, refs and key names, never content. Run it again after a failure: what is gone stays
 * gone, and the rest is erased.
 */
import type { AuditEvent } from "../schemas/types.ts";
import { deriveId } from "../processors/runner/ids.ts";
import { eraseTree, inventory, isUnknown, UnknownTree, type EraseReport, type TreeInventory } from "../store/tree-data.ts";
import type { TreeHold } from "../store/tree-holds.ts";
import { Exit, parse, person, usage } from "./cli.ts";
import { publishAudit, resolveTree, TREE_OPTIONS, treeArgs, withTreeData } from "./oz0-hold.ts";

export const JOB_ERASE_HELP = `oz0 job erase --tenant T (--tree ID | --job ID) --reason R --yes [--as NAME] [--json]

Erases one job tree's data, not the tenant's: its files and offloaded results (the bytes of a
file no other tree holds), the trace parts of its jobs, and its Redis state (every key of the
tree's hash tag: limits and spend, the file rules' record, labels, thresholds; and the loop state
of its runs). Another tree's files, traces and counters are left as they are. A tree under a legal
hold (oz0 hold) is refused: nothing is erased. A tree whose root job runs is refused too. The
audit log keeps its entries, which hold no content; the erasure is audited with who and why.
--job names a job of the tree instead of the tree. Without --yes nothing is erased and the
command says what would be.

Example:
  oz0 job erase --tenant acme --tree job-7f3a --reason "erasure request of the data subject" --yes
`;

/** What the tree holds, in words: counts, then the names. */
export function describeInventory(inv: TreeInventory): string {
  return (
    `${inv.files.length} file(s) and offloaded result(s), ${inv.traceParts.length} trace part(s) of ${inv.jobs.length} job(s) (${inv.jobs.join(", ")}), ` +
    `${inv.redisKeys.length + inv.loopKeys.length} Redis key(s)${inv.redisKeys.length + inv.loopKeys.length > 0 ? ` (${[...inv.redisKeys, ...inv.loopKeys].join(", ")})` : ""}`
  );
}

export function formatHeldBack(tree: string, tenant: string, hold: TreeHold, inv: TreeInventory): string {
  return `tree ${tree} of tenant ${tenant} is under a legal hold (set by ${hold.by} at ${new Date(hold.at).toISOString()}: ${hold.reason}): nothing erased; held back: ${describeInventory(inv)}. Clear the hold first: oz0 hold clear --tenant ${tenant} --tree ${tree} --reason "..."\n`;
}

export interface TreeErasureSaid {
  readonly tenant: string;
  readonly tree: string;
  readonly job: string | null;
  readonly by: string;
  readonly reason: string;
  readonly files: { readonly erased: readonly string[]; readonly held: readonly string[] };
  readonly traces: { readonly erased: number; readonly jobs: readonly string[] };
  readonly redis: { readonly erased: readonly string[] };
}

export function said(tenant: string, tree: string, job: string | null, by: string, reason: string, r: Extract<EraseReport, { outcome: "erased" }>): TreeErasureSaid {
  return { tenant, tree, job, by, reason, files: { erased: r.filesErased, held: r.filesHeld }, traces: { erased: r.traceParts, jobs: r.inventory.jobs }, redis: { erased: r.redisKeys } };
}

/** `tree.erased`: counts, refs, job IDs and key names; never content. */
export function treeErasedEntry(s: TreeErasureSaid, at: number): AuditEvent {
  return {
    id: deriveId("oz0-job-erase", s.tenant, s.tree, String(at)),
    kind: "tree.erased",
    tenant: s.tenant,
    tree_id: s.tree,
    job_id: s.job,
    actor: s.by,
    reason: s.reason,
    facts: { refs: s.files.erased.join(" "), held: s.files.held.join(" "), jobs: s.traces.jobs.join(" "), redis_keys: s.redis.erased.join(" ") },
    numbers: { files_erased: s.files.erased.length, files_held: s.files.held.length, trace_parts_erased: s.traces.erased, redis_keys_erased: s.redis.erased.length },
    ts: at,
  };
}

export function formatTreeErasure(s: TreeErasureSaid): string {
  const held = s.files.held.length > 0 ? `; ${s.files.held.length} held back, under a legal hold (another held tree holds the same file): ${s.files.held.join(", ")}` : "";
  return (
    `tree ${s.tree} of tenant ${s.tenant} erased by ${s.by}: ${s.reason}\n` +
    `files and offloaded results: ${s.files.erased.length} erased${held}\n` +
    `traces: ${s.traces.erased} part(s) of ${s.traces.jobs.length} job(s) erased (${s.traces.jobs.join(", ")})\n` +
    `redis: ${s.redis.erased.length} key(s) erased${s.redis.erased.length > 0 ? `: ${s.redis.erased.join(", ")}` : ""}\n`
  );
}

export async function jobErase(args: string[]): Promise<string> {
  const { values, positionals } = parse(JOB_ERASE_HELP, args, { ...TREE_OPTIONS, yes: { type: "boolean", default: false } });
  if (values.help) return JOB_ERASE_HELP;
  const a = treeArgs("job erase", JOB_ERASE_HELP, values, positionals);
  const by = person(a.as);
  return withTreeData(async (d) => {
    const { tree, job } = await resolveTree(d, a.tenant, a.target);
    if (!values.yes) {
      const inv = await inventory(d, a.tenant, tree);
      if (isUnknown(inv)) throw new Exit(1, `${new UnknownTree(a.tenant, tree).message}; nothing to erase\n`);
      const hold = await d.holds.get(a.tenant, tree);
      const heldNote = hold === null ? "" : ` (it is under a legal hold set by ${hold.by}: the erasure would be refused until the hold is cleared)`;
      throw usage(`job erase removes tree ${tree} of tenant ${a.tenant} for good: ${describeInventory(inv)}${heldNote}. Give --yes to erase\n`);
    }
    let r: EraseReport;
    try {
      r = await eraseTree(d, a.tenant, tree, `person:${by}`);
    } catch (err) {
      if (err instanceof UnknownTree) throw new Exit(1, `${err.message}; nothing to erase\n`);
      throw err;
    }
    if (r.outcome === "held") throw new Exit(1, formatHeldBack(tree, a.tenant, r.hold, r.inventory));
    if (r.outcome === "running") throw new Exit(1, `tree ${tree} of tenant ${a.tenant} runs (its root job has not ended): end or cancel it first; nothing erased\n`);
    const s = said(a.tenant, tree, job, by, a.reason, r);
    await publishAudit("oz0-job-erase", [treeErasedEntry(s, Date.now())]);
    const text = a.json ? `${JSON.stringify(s)}\n` : formatTreeErasure(s);
    // Something held back: what was asked is not wholly so.
    if (s.files.held.length > 0) throw new Exit(1, text, "stdout");
    return text;
  });
}
