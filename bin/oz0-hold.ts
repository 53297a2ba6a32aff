/**
 * `oz0 hold set|clear|list`: legal holds on one job tree's data (OFF-10, FILE-6): its files
 * and offloaded results, its trace parts, and the record every remover checks
 * (store/tree-data.ts, store/tree-holds.ts, docs/files.md). Setting and clearing are audited
 * (`tree.held`, `tree.released`) with who and why, naming what was held by counts and refs,
 * never content.
 */
import kafkajs from "kafkajs";
import { kafkaConfig } from "../processors/runner/endpoints.ts";
import { deriveId } from "../processors/runner/ids.ts";
import { createLogger } from "../processors/runner/log.ts";
import { sinkStores } from "../processors/sinks.ts";
import { Serde } from "../schemas/serde.ts";
import type { AuditEvent } from "../schemas/types.ts";
import { FileStore } from "../store/files.ts";
import { minioClient } from "../store/objects.ts";
import { PayloadKeys } from "../store/payload-keys.ts";
import { redisClient } from "../store/redis/client.ts";
import { Keys } from "../store/redis/keys.ts";
import { holdTree, releaseTree, treeOfJob, UnknownTree, type HoldReport, type ReleaseReport, type TreeDataDeps } from "../store/tree-data.ts";
import { TreeBeingErased, TreeHolds, type TreeHold } from "../store/tree-holds.ts";
import { Exit, parse, person, usage } from "./cli.ts";
import { servicesForCommand } from "../topology/services.ts";

export const HOLD_HELP = `oz0 hold set   --tenant T (--tree ID | --job ID) --reason R [--as NAME] [--json]
oz0 hold clear --tenant T (--tree ID | --job ID) --reason R [--as NAME] [--json]
oz0 hold list  [--tenant T] [--json]

A legal hold on everything one job tree stored (OFF-10, FILE-6): its files and offloaded
results (a MinIO legal hold on their data), its trace parts (each copied under a legal hold,
since the trace bucket has no object locking), and a record in Redis that every erasure and the
retention sweep check, so what the tree stores after the hold is kept as well. Nothing of a held
tree is removed until the hold is cleared. --job names a job of the tree instead of the tree.

set puts the hold (again: the first hold's reason stands, and the MinIO holds are put on what
the tree stored since); clear lifts it (a file another held tree holds as well stays held);
list shows the held trees. set and clear are audited with who and why.

Examples:
  oz0 hold set --tenant acme --tree job-7f3a --reason "litigation hold, matter 2026-114"
  oz0 hold clear --tenant acme --tree job-7f3a --reason "matter 2026-114 settled"
  oz0 hold list --tenant acme
`;

export type Target = { readonly tree: string } | { readonly job: string };

export interface TreeArgs {
  readonly tenant: string;
  readonly target: Target;
  readonly reason: string;
  readonly as: string | undefined;
  readonly json: boolean;
}

/** The `--tenant T (--tree ID | --job ID) --reason R` every tree command takes; usage errors name what to give. */
export function treeArgs(command: string, help: string, values: { tenant?: string; tree?: string; job?: string; reason?: string; as?: string; json?: boolean }, positionals: readonly string[]): TreeArgs {
  if (positionals.length > 0) throw usage(`${command} takes flags only, got ${positionals.join(" ")}\n\n${help}`);
  if (!values.tenant || values.tenant.trim() === "") throw usage(`${command}: give --tenant T, the tenant whose tree it is\n`);
  if (values.tree !== undefined && values.job !== undefined) throw usage(`${command}: give --tree or --job, not both\n`);
  if ((values.tree ?? values.job ?? "").trim() === "") throw usage(`${command}: give --tree ID (the tree, named by its first job) or --job ID (a job of the tree)\n`);
  if (!values.reason || values.reason.trim() === "") throw usage(`${command}: give --reason "why"; it is audited with it\n`);
  const target = values.tree !== undefined ? { tree: values.tree } : { job: values.job ?? "" };
  return { tenant: values.tenant, target, reason: values.reason.trim(), as: values.as, json: values.json ?? false };
}

export const TREE_OPTIONS = {
  tenant: { type: "string" },
  tree: { type: "string" },
  job: { type: "string" },
  reason: { type: "string" },
  as: { type: "string" },
  json: { type: "boolean", default: false },
  help: { type: "boolean", default: false },
} as const;

/** The stores a tree command needs, for the length of `use`. */
export async function withTreeData<T>(use: (d: TreeDataDeps) => Promise<T>): Promise<T> {
  const endpoints = await servicesForCommand();
  const client = minioClient(endpoints);
  const files = new FileStore({ client, bucket: process.env.OZ0_BUCKET ?? "oz0-files", keys: PayloadKeys.fromEnv() });
  const { traces } = sinkStores(endpoints);
  const redis = redisClient(endpoints, { maxRetriesPerRequest: 3 });
  const keys = new Keys();
  try {
    return await use({ files, traces, redis, keys, holds: new TreeHolds(redis, keys) });
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}

/** The tree the target names: --tree as given, --job through the job's tree; exit 1 when the job is not known. */
export async function resolveTree(d: TreeDataDeps, tenant: string, target: Target): Promise<{ tree: string; job: string | null }> {
  if ("tree" in target) return { tree: target.tree, job: null };
  const tree = await treeOfJob(d, tenant, target.job);
  if (tree === null) throw new Exit(1, `tenant ${tenant} has no job ${target.job} whose tree is known: neither the limits state nor the job's trace names it (never run, erased, or past retention); give --tree ID if you know the tree\n`);
  return { tree, job: target.job };
}

/** Publishes audit entries to oz0.audit, as every command's change is audited. */
export async function publishAudit(clientId: string, entries: readonly AuditEvent[]): Promise<void> {
  const endpoints = await servicesForCommand();
  const log = createLogger({ component: "oz0" }, () => {});
  const kafka = new kafkajs.Kafka(kafkaConfig(clientId, endpoints, process.env, log));
  const serde = new Serde({ registryUrl: endpoints.registryUrl });
  await serde.registerAll();
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  try {
    await producer.send({ topic: "oz0.audit", acks: -1, messages: entries.map((e) => ({ key: e.tenant ?? "", value: serde.encode("AuditEvent", e) })) });
  } finally {
    await producer.disconnect();
  }
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** `tree.held`: who held the tree and why, what was held by counts, refs and job IDs. */
export function heldEntry(r: HoldReport, by: string, reason: string, job: string | null, at: number): AuditEvent {
  return {
    id: deriveId("oz0-hold", "set", r.hold.tenant, r.hold.tree, String(at)),
    kind: "tree.held",
    tenant: r.hold.tenant,
    tree_id: r.hold.tree,
    job_id: job,
    actor: by,
    reason,
    facts: { first: String(r.made), held_since: iso(r.hold.at), held_by: r.hold.by, refs: r.filesHeld.join(" "), jobs: r.inventory.jobs.join(" ") },
    numbers: { files_held: r.filesHeld.length, files_missing: r.filesMissing.length, trace_parts_held: r.traceParts, trace_parts_copied: r.traceCopies, jobs: r.inventory.jobs.length },
    ts: at,
  };
}

/** `tree.released`: who cleared the hold and why, the hold it was, what was released. */
export function releasedEntry(r: ReleaseReport, by: string, reason: string, job: string | null, at: number): AuditEvent {
  return {
    id: deriveId("oz0-hold", "clear", r.hold.tenant, r.hold.tree, String(at)),
    kind: "tree.released",
    tenant: r.hold.tenant,
    tree_id: r.hold.tree,
    job_id: job,
    actor: by,
    reason,
    facts: { held_since: iso(r.hold.at), held_by: r.hold.by, held_reason: r.hold.reason, refs: r.filesReleased.join(" "), still_held: r.filesStillHeld.map((s) => `${s.ref}@${s.tree}`).join(" ") },
    numbers: { files_released: r.filesReleased.length, files_still_held: r.filesStillHeld.length, trace_copies_removed: r.traceCopiesRemoved },
    ts: at,
  };
}

export function formatHeld(r: HoldReport): string {
  const h = r.hold;
  const head = r.made
    ? `tree ${h.tree} of tenant ${h.tenant} held by ${h.by} at ${iso(h.at)}: ${h.reason}\n`
    : `tree ${h.tree} of tenant ${h.tenant} was held already by ${h.by} since ${iso(h.at)}: ${h.reason}\nits MinIO holds were put again on what it stores now\n`;
  const missing = r.filesMissing.length > 0 ? `; ${r.filesMissing.length} whose data was gone already: ${r.filesMissing.join(", ")}` : "";
  return (
    head +
    `files and offloaded results: ${r.filesHeld.length} held (a MinIO legal hold on their data)${missing}\n` +
    `trace parts: ${r.traceParts} held (${r.traceCopies} copied under the hold now) of ${r.inventory.jobs.length} job(s): ${r.inventory.jobs.join(", ")}\n` +
    `what the tree stores from now on is kept by the hold's record, which every erasure and the retention sweep check; oz0 hold set again puts MinIO holds on it too\n`
  );
}

export function formatReleased(r: ReleaseReport, by: string, reason: string): string {
  const still = r.filesStillHeld.length > 0 ? `; ${r.filesStillHeld.length} still held by another held tree: ${r.filesStillHeld.map((s) => `${s.ref} (tree ${s.tree})`).join(", ")}` : "";
  return (
    `hold on tree ${r.hold.tree} of tenant ${r.hold.tenant} cleared by ${by}: ${reason}\n` +
    `it was held by ${r.hold.by} since ${iso(r.hold.at)}: ${r.hold.reason}\n` +
    `files and offloaded results: ${r.filesReleased.length} released${still}\n` +
    `trace parts: ${r.traceCopiesRemoved} copies under the hold removed (the trace store's own parts are as retention left them)\n`
  );
}

export function formatHolds(holds: readonly TreeHold[], tenant: string | undefined): string {
  if (holds.length === 0) return tenant === undefined ? "no tree is held\n" : `no tree of tenant ${tenant} is held\n`;
  const lines = holds.map((h) => {
    const what = h.covered === null ? "MinIO holds not yet put" : `${h.covered.files} file(s), ${h.covered.traceParts} trace part(s), ${h.covered.jobs} job(s) as of ${iso(h.covered.at)}`;
    return `${tenant === undefined ? `${h.tenant} ` : ""}${h.tree}  held by ${h.by} since ${iso(h.at)}: ${h.reason}  [${what}]`;
  });
  return `${lines.join("\n")}\n`;
}

export async function holdCommand(verb: string, args: string[]): Promise<string> {
  if (verb === "" || verb === "--help" || verb === "-h" || verb === "help") return HOLD_HELP;
  if (verb === "list") {
    const { values, positionals } = parse(HOLD_HELP, args, { tenant: { type: "string" }, json: { type: "boolean", default: false }, help: { type: "boolean", default: false } });
    if (values.help) return HOLD_HELP;
    if (positionals.length > 0) throw usage(`hold list takes flags only, got ${positionals.join(" ")}\n\n${HOLD_HELP}`);
    const holds = await withTreeData((d) => d.holds.list(values.tenant));
    return values.json ? `${JSON.stringify(holds, null, 2)}\n` : formatHolds(holds, values.tenant);
  }
  if (verb !== "set" && verb !== "clear") throw usage(`oz0 hold ${verb}: no such command; hold takes set, clear or list\n\n${HOLD_HELP}`);
  const { values, positionals } = parse(HOLD_HELP, args, TREE_OPTIONS);
  if (values.help) return HOLD_HELP;
  const a = treeArgs(`hold ${verb}`, HOLD_HELP, values, positionals);
  const by = person(a.as);
  return withTreeData(async (d) => {
    const { tree, job } = await resolveTree(d, a.tenant, a.target);
    const at = Date.now();
    if (verb === "set") {
      let r: HoldReport;
      try {
        await d.files.ensureBucket();
        r = await holdTree(d, a.tenant, tree, { reason: a.reason, by, at });
      } catch (err) {
        if (err instanceof UnknownTree) throw new Exit(1, `${err.message}; nothing held\n`);
        if (err instanceof TreeBeingErased) throw new Exit(1, `${err.message}; nothing held\n`);
        throw err;
      }
      await publishAudit("oz0-hold", [heldEntry(r, by, a.reason, job, at)]);
      const said = { tenant: a.tenant, tree, made: r.made, hold: r.hold, files_held: r.filesHeld, files_missing: r.filesMissing, trace_parts: r.traceParts, trace_copies: r.traceCopies, jobs: r.inventory.jobs };
      return a.json ? `${JSON.stringify(said)}\n` : formatHeld(r);
    }
    const r = await releaseTree(d, a.tenant, tree);
    if (r === null) throw new Exit(1, `tree ${tree} of tenant ${a.tenant} is not held: nothing to clear (see oz0 hold list --tenant ${a.tenant})\n`);
    await publishAudit("oz0-hold", [releasedEntry(r, by, a.reason, job, at)]);
    const said = { tenant: a.tenant, tree, by, reason: a.reason, was: r.hold, files_released: r.filesReleased, files_still_held: r.filesStillHeld, trace_copies_removed: r.traceCopiesRemoved };
    return a.json ? `${JSON.stringify(said)}\n` : formatReleased(r, by, a.reason);
  });
}
