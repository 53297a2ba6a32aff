/**
 * Reads a configuration directory and turns it into rows of the configuration table (a
 * compacted topic keyed `kind/id`):
 *
 *   agents/<name>.yaml
 *   plugins/<name>/oz0-plugin.yaml  or  plugins/<name>.yaml
 *   tenants/<id>.yaml
 *
 * Every file is read and every error of every file is collected; a file with errors is left
 * out of the result, so a caller publishes only when `errors` is empty.
 */
import type { Dirent } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import type { ConfigKind, ConfigRecord } from "../schemas/types.ts";
import { parseAgent, type AgentDefinition } from "./agent.ts";
import { ConfigError, type ConfigWarning, type Parsed } from "./errors.ts";
import { parsePlugin, type PluginManifest } from "./plugin.ts";
import { parseTenant, type TenantSettings } from "./tenant.ts";

export interface LoadedConfig {
  readonly agents: ReadonlyMap<string, AgentDefinition>;
  readonly plugins: ReadonlyMap<string, PluginManifest>;
  readonly tenants: ReadonlyMap<string, TenantSettings>;
  /** The file each definition came from, by record key (`agent/acme-reviewer`). */
  readonly sources: ReadonlyMap<string, string>;
  readonly errors: readonly ConfigError[];
  readonly warnings: readonly ConfigWarning[];
}

const YAML_FILE = /\.ya?ml$/;
const MANIFEST_NAMES = ["oz0-plugin.yaml", "oz0-plugin.yml"];

export async function loadConfigDir(dir: string): Promise<LoadedConfig> {
  const errors: ConfigError[] = [];
  const warnings: ConfigWarning[] = [];
  const sources = new Map<string, string>();
  const agents = new Map<string, AgentDefinition>();
  const plugins = new Map<string, PluginManifest>();
  const tenants = new Map<string, TenantSettings>();

  const isDir = await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (!isDir) {
    errors.push(new ConfigError({ path: dir, field: "", reason: "is not a directory; expected one holding agents/, plugins/ and tenants/" }));
    return { agents, plugins, tenants, sources, errors, warnings };
  }

  const keep = <T extends { readonly name: string } | { readonly id: string }>(
    kind: ConfigKind,
    into: Map<string, T>,
    path: string,
    parsed: Parsed<T>,
  ): void => {
    warnings.push(...parsed.warnings);
    if (!parsed.ok) {
      errors.push(...parsed.errors);
      return;
    }
    const id = "name" in parsed.value ? parsed.value.name : parsed.value.id;
    const key = recordKey(kind, id);
    const earlier = sources.get(key);
    if (earlier !== undefined) {
      const field = kind === "tenant" ? "id" : "name";
      errors.push(new ConfigError({ path, field, reason: `${kind} "${id}" is already defined in ${earlier}; each ${kind} is defined once` }));
      return;
    }
    into.set(id, parsed.value);
    sources.set(key, path);
  };

  for (const entry of await entries(join(dir, "agents"))) {
    if (!entry.isFile() || !YAML_FILE.test(entry.name)) continue;
    const path = join(dir, "agents", entry.name);
    keep("agent", agents, path, parseAgent(await readFile(path, "utf8"), path));
  }

  for (const entry of await entries(join(dir, "plugins"))) {
    let path: string | undefined;
    if (entry.isFile() && YAML_FILE.test(entry.name)) path = join(dir, "plugins", entry.name);
    if (entry.isDirectory()) {
      const inside = await entries(join(dir, "plugins", entry.name));
      const manifest = inside.find((e) => e.isFile() && MANIFEST_NAMES.includes(e.name));
      if (manifest === undefined) {
        const where = join(dir, "plugins", entry.name);
        errors.push(new ConfigError({ path: where, field: "", reason: "has no oz0-plugin.yaml; a plugin's directory holds its manifest" }));
        continue;
      }
      path = join(dir, "plugins", entry.name, manifest.name);
    }
    if (path === undefined) continue;
    keep("plugin", plugins, path, parsePlugin(await readFile(path, "utf8"), path));
  }

  for (const entry of await entries(join(dir, "tenants"))) {
    if (!entry.isFile() || !YAML_FILE.test(entry.name)) continue;
    const path = join(dir, "tenants", entry.name);
    keep("tenant", tenants, path, parseTenant(await readFile(path, "utf8"), path));
  }

  return { agents, plugins, tenants, sources, errors, warnings };
}

/** A directory's visible entries by name; none when it does not exist. */
async function entries(dir: string): Promise<Dirent[]> {
  try {
    const all = await readdir(dir, { withFileTypes: true });
    return all.filter((e) => !e.name.startsWith(".")).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
}

/** One row of the configuration table. */
export type TableRecord =
  | { readonly kind: "agent"; readonly id: string; readonly key: string; readonly source: string; readonly value: AgentDefinition }
  | { readonly kind: "plugin"; readonly id: string; readonly key: string; readonly source: string; readonly value: PluginManifest }
  | { readonly kind: "tenant"; readonly id: string; readonly key: string; readonly source: string; readonly value: TenantSettings };

/** The key of a row of the compacted configuration topic. */
export function recordKey(kind: ConfigKind, id: string): string {
  return `${kind}/${id}`;
}

/** Every definition as a table row: agents, then plugins, then tenants, each by id. */
export function toTableRecords(config: LoadedConfig): TableRecord[] {
  const rows: TableRecord[] = [];
  const source = (kind: ConfigKind, id: string): string => config.sources.get(recordKey(kind, id)) ?? "";
  for (const [id, value] of sorted(config.agents)) rows.push({ kind: "agent", id, key: recordKey("agent", id), source: source("agent", id), value });
  for (const [id, value] of sorted(config.plugins)) rows.push({ kind: "plugin", id, key: recordKey("plugin", id), source: source("plugin", id), value });
  for (const [id, value] of sorted(config.tenants)) rows.push({ kind: "tenant", id, key: recordKey("tenant", id), source: source("tenant", id), value });
  return rows;
}

function sorted<T>(map: ReadonlyMap<string, T>): [string, T][] {
  return [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Rows as the ConfigRecord events of the configuration topic (value as JSON). A tenant's row
 * is refused without a reason (OFF-13); for agents and plugins the reason is optional.
 */
export function toConfigRecords(rows: readonly TableRecord[], change: { readonly ts: number; readonly reason?: string | null }): Parsed<ConfigRecord[]> {
  const reason = change.reason?.trim() ?? "";
  const errors = rows
    .filter((row) => row.kind === "tenant" && reason === "")
    .map((row) => new ConfigError({ path: row.source === "" ? row.key : row.source, field: "reason", reason: "a change of tenant settings needs a reason (OFF-13)" }));
  if (errors.length > 0) return { ok: false, errors, warnings: [] };
  const records = rows.map((row) => ({
    kind: row.kind,
    id: row.id,
    value: JSON.stringify(row.value),
    source: row.source,
    reason: reason === "" ? null : reason,
    ts: change.ts,
  }));
  return { ok: true, value: records, warnings: [] };
}
