/**
 * The event schemas of the pipeline: every `schemas/*.avsc` file, parsed once, by record name.
 * Subjects follow the record-name strategy (`oz0.ToolCall`), so a schema is registered once
 * whatever topics carry it.
 */
import { readdirSync, readFileSync } from "node:fs";
import avro from "avsc";

export const SCHEMA_NAMES = ["ToolCall", "ToolResult", "ModelCall", "JobEvent", "Decision", "DeadLetter", "ConfigRecord", "ResultDelivered", "TraceEntry", "AuditEvent"] as const;
export type SchemaName = (typeof SCHEMA_NAMES)[number];

export interface SchemaEntry {
  readonly name: SchemaName;
  /** The registry subject: the record's full name. */
  readonly subject: string;
  /** The schema as written in its `.avsc` file. */
  readonly json: avro.Schema;
  readonly type: avro.Type;
}

const dir = new URL("./", import.meta.url);

function load(name: SchemaName): SchemaEntry {
  const file = new URL(`${name}.avsc`, dir);
  const json = JSON.parse(readFileSync(file, "utf8")) as avro.Schema & { namespace?: string; name?: string };
  const type = avro.Type.forSchema(json);
  const subject = `${json.namespace ?? ""}${json.namespace ? "." : ""}${json.name ?? name}`;
  return { name, subject, json, type };
}

const entries = new Map<SchemaName, SchemaEntry>(SCHEMA_NAMES.map((n) => [n, load(n)]));

export function schema(name: SchemaName): SchemaEntry {
  const entry = entries.get(name);
  if (!entry) throw new Error(`no schema named ${name}; known: ${SCHEMA_NAMES.join(", ")}`);
  return entry;
}

export function allSchemas(): SchemaEntry[] {
  return [...entries.values()];
}

/** Names of the `.avsc` files on disk, to check the catalog lists every one. */
export function schemaFilesOnDisk(): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".avsc"))
    .map((f) => f.slice(0, -".avsc".length))
    .sort();
}

/**
 * Why a value does not fit its schema, as dotted paths with the offending value, or an empty
 * list when it fits.
 */
export function schemaViolations(name: SchemaName, value: unknown): string[] {
  const type = schema(name).type;
  // The common case, a value that fits, without the cost of collecting paths.
  if (type.isValid(value)) return [];
  const problems: string[] = [];
  type.isValid(value, {
    errorHook: (path: string[], v: unknown) => {
      const shown = typeof v === "string" && v.length > 80 ? `${v.slice(0, 80)}...` : v;
      problems.push(`${path.join(".") || "(root)"}: ${JSON.stringify(shown) ?? String(shown)} does not fit`);
    },
  });
  return problems;
}
