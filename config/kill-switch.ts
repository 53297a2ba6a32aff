/**
 * LOOP-9: a kill switch, thrown by a cluster's admin on one plugin's tool, refuses every call
 * of that tool in every tenant until it is released. It is a row of the configuration table
 * (kind `kill_switch`, id `<plugin>/<tool>`), so every processor sees it as it sees a manifest;
 * releasing it removes the row (a tombstone). Throwing and releasing each write an entry to
 * the audit log (`kill_switch.thrown`, `kill_switch.released`) with the reason.
 */
import { createHash } from "node:crypto";
import type { AuditEvent, ConfigRecord } from "../schemas/types.ts";
import { ID_PATTERN } from "./fields.ts";

/** The value of a `kill_switch` row. */
export interface KillSwitch {
  readonly plugin: string;
  readonly tool: string;
  /** Why it was thrown: what the model and the admins read. */
  readonly reason: string;
  /** Who threw it. */
  readonly by: string;
  /** When it was thrown, epoch milliseconds. */
  readonly at: number;
}

/** The platform's own plugin (the answer, a routine's output): never switched off, or no job could finish. */
const PLATFORM_PLUGIN = "oz0";

/** The row's id: `<plugin>/<tool>`. */
export function killSwitchId(plugin: string, tool: string): string {
  return `${plugin}/${tool}`;
}

/** Reads `<plugin>/<tool>` as the command line names a tool; an error says what is wrong. */
export function parseToolName(text: string): { plugin: string; tool: string } | { error: string } {
  const parts = text.split("/");
  const [plugin, tool] = parts;
  if (parts.length !== 2 || plugin === undefined || tool === undefined) return { error: `"${text}" is not <plugin>/<tool>, such as acme_docs/acme_docs` };
  for (const [what, name] of [["plugin", plugin], ["tool", tool]] as const) {
    if (!ID_PATTERN.test(name)) return { error: `"${name}" is not a valid ${what} name: letters, digits and . _ -, starting with a letter or digit` };
  }
  if (plugin === PLATFORM_PLUGIN) return { error: `the platform's own plugin ${PLATFORM_PLUGIN} (the answer, oz0.output) cannot be switched off: without it no job could finish` };
  return { plugin, tool };
}

/** The configuration row that throws the switch. */
export function killSwitchRecord(sw: KillSwitch): ConfigRecord {
  return { kind: "kill_switch", id: killSwitchId(sw.plugin, sw.tool), value: JSON.stringify(sw), source: "", reason: sw.reason, ts: sw.at };
}

/** Key of the row on the compacted configuration topic; a null value there releases the switch. */
export function killSwitchKey(plugin: string, tool: string): string {
  return `kill_switch/${killSwitchId(plugin, tool)}`;
}

/** Key of cluster-wide entries (no tenant) on the audit topic. */
export const CLUSTER_AUDIT_KEY = "cluster";

/** The audit entry of throwing (`thrown`) or releasing (`released`) a switch; its ID is derived from what it records. */
export function killSwitchAudit(change: "thrown" | "released", e: { plugin: string; tool: string; reason: string; by: string; at: number; thrownAt?: number }): AuditEvent {
  const kind = `kill_switch.${change}`;
  return {
    id: createHash("sha256").update([kind, e.plugin, e.tool, e.at].join("\u0000")).digest("base64url").slice(0, 22),
    kind,
    tenant: null,
    tree_id: null,
    job_id: null,
    actor: e.by,
    reason: e.reason,
    facts: { plugin: e.plugin, tool: e.tool },
    numbers: e.thrownAt === undefined ? {} : { thrown_at: e.thrownAt },
    ts: e.at,
  };
}

/** What a refused call says (the model and the job's trace read it): the switch, who threw it and why. */
export function killSwitchWords(sw: KillSwitch): string {
  return `The tool ${killSwitchId(sw.plugin, sw.tool)} is switched off in every tenant by a kill switch (thrown ${new Date(sw.at).toISOString()} by ${sw.by}): ${sw.reason}. The call was not made; use another tool or answer with what you have.`;
}

/** The switch on a tool, from a configuration row's value, or null when none is thrown (or the row is unreadable). */
export function asKillSwitch(value: unknown): KillSwitch | null {
  if (value === null || typeof value !== "object") return null;
  const v = value as Partial<KillSwitch>;
  if (typeof v.plugin !== "string" || typeof v.tool !== "string" || typeof v.reason !== "string") return null;
  return { plugin: v.plugin, tool: v.tool, reason: v.reason, by: typeof v.by === "string" ? v.by : "an admin", at: typeof v.at === "number" ? v.at : 0 };
}
