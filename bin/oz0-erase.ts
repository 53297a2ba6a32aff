/**
 * `oz0 tenant erase`: erasure of a tenant's job data (OFF-10, FILE-6): its stored files and
 * results (but those under a legal hold, which are kept and named) and its traces. The audit log
 * keeps its entries: they hold no payloads, and its objects are locked for their retention. The
 * erasure itself is audited (`tenant.erased`, with who asked and why). Run it again after a
 * failure: what is gone stays gone, and the rest is erased.
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
import { eraseTenantTraces, protectHeldTrees } from "../store/tree-data.ts";
import { TreeHolds } from "../store/tree-holds.ts";
import { parse, person, usage } from "./cli.ts";
import { servicesForCommand } from "../topology/services.ts";

export const ERASE_HELP = `oz0 tenant erase <tenant> --reason R --yes [--as NAME] [--json]

Erases a tenant's job data: every stored file and offloaded result of its trees (a file under a
legal hold is kept and named), and every part of its traces. A tree under a legal hold (oz0 hold)
is kept whole, its files and trace parts, and named. The audit log keeps its entries,
which hold no payloads and are locked for their retention. The erasure is audited with who asked
and why. --yes says you mean it; without it nothing is erased.

Example:
  oz0 tenant erase initech --reason "contract ended, data deletion requested" --yes
`;

export interface ErasureSaid {
  readonly tenant: string;
  readonly by: string;
  readonly reason: string;
  readonly files: { readonly erased: number; readonly held: readonly string[] };
  readonly traces: { readonly erased: number; readonly legacy: number; readonly kept?: number };
  /** Trees under a legal hold (oz0 hold): their files and trace parts were kept. */
  readonly heldTrees?: readonly string[];
}

/** The audit entry of an erasure: counts and the held refs, never contents. */
export function erasureEntry(said: ErasureSaid, at: number): AuditEvent {
  return {
    id: deriveId("oz0-tenant-erase", said.tenant, String(at)),
    kind: "tenant.erased",
    tenant: said.tenant,
    tree_id: null,
    job_id: null,
    actor: said.by,
    reason: said.reason,
    facts: { held: said.files.held.join(" "), held_trees: (said.heldTrees ?? []).join(" ") },
    numbers: { files_erased: said.files.erased, files_held: said.files.held.length, trace_parts_erased: said.traces.erased, trace_parts_held: said.traces.kept ?? 0, trees_held: said.heldTrees?.length ?? 0 },
    ts: at,
  };
}

export function formatErasure(s: ErasureSaid): string {
  const held = s.files.held.length > 0 ? `; ${s.files.held.length} kept under a legal hold: ${s.files.held.join(", ")}` : "";
  const legacy = s.traces.legacy > 0 ? `\n${s.traces.legacy} trace part(s) written before traces were kept by tenant name no tenant: they expire with the trace retention` : "";
  const trees = s.heldTrees && s.heldTrees.length > 0 ? `\n${s.heldTrees.length} tree(s) under a legal hold kept whole (${s.traces.kept ?? 0} trace part(s) held back): ${s.heldTrees.join(", ")}` : "";
  return `tenant ${s.tenant} erased by ${s.by}: ${s.reason}\nfiles: ${s.files.erased} erased${held}\ntraces: ${s.traces.erased} part(s) erased${legacy}${trees}\n`;
}

export async function tenantErase(args: string[]): Promise<string> {
  const { values, positionals } = parse(ERASE_HELP, args, {
    reason: { type: "string" },
    as: { type: "string" },
    yes: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  });
  if (values.help) return ERASE_HELP;
  const [tenant, ...rest] = positionals;
  if (!tenant || rest.length > 0) throw usage(`tenant erase takes one tenant\n\n${ERASE_HELP}`);
  if (!values.reason || values.reason.trim() === "") throw usage(`tenant erase: give --reason "why"; the erasure is audited with it\n`);
  if (!values.yes) throw usage(`tenant erase removes tenant ${tenant}'s files and traces for good: give --yes to erase\n`);
  const by = person(values.as);

  const endpoints = await servicesForCommand();
  const client = minioClient(endpoints);
  const files = new FileStore({ client, bucket: process.env.OZ0_BUCKET ?? "oz0-files", keys: PayloadKeys.fromEnv() });
  const redis = redisClient(endpoints, { maxRetriesPerRequest: 3 });
  const traces = sinkStores(endpoints).traces.indexed(redis);
  let said: ErasureSaid;
  try {
    const keys = new Keys();
    const d = { files, traces, redis, keys, holds: new TreeHolds(redis, keys) };
    // Held trees first get a MinIO hold on what they store now, so the erasure below keeps it.
    const held = (await client.bucketExists(files.bucket)) ? await protectHeldTrees(d, tenant) : { trees: [...(await d.holds.heldTrees(tenant))], keepTracePrefixes: [], keepJobs: [] };
    const fileReport = (await client.bucketExists(files.bucket)) ? await files.eraseTenant(tenant) : { erased: [], held: [] };
    const traceReport = !(await client.bucketExists(traces.bucket))
      ? { erased: 0, legacy: 0, kept: 0 }
      : held.trees.length === 0
        ? { ...(await traces.eraseTenant(tenant)), kept: 0 }
        : await eraseTenantTraces(traces, tenant, held);
    said = { tenant, by, reason: values.reason, files: { erased: fileReport.erased.length, held: fileReport.held }, traces: traceReport, heldTrees: held.trees };
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }

  const log = createLogger({ component: "oz0" }, () => {});
  const kafka = new kafkajs.Kafka(kafkaConfig("oz0-tenant-erase", endpoints, process.env, log));
  const serde = new Serde({ registryUrl: endpoints.registryUrl });
  await serde.registerAll();
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  try {
    await producer.send({ topic: "oz0.audit", acks: -1, messages: [{ key: tenant, value: serde.encode("AuditEvent", erasureEntry(said, Date.now())) }] });
  } finally {
    await producer.disconnect();
  }
  return values.json ? `${JSON.stringify(said)}\n` : formatErasure(said);
}
