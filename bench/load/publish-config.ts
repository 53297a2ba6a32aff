/**
 * The load's agents and its docs plugin (`bench/load/config/`), published to the configuration
 * table as `npm run config -- publish` does: only rows that differ, so a second run writes
 * nothing. They are named `load-*` and `load_docs`, apart from any real agent or plugin. The
 * end-to-end tests publish their own directory the same way (`test/fixtures/e2e-config/`).
 */
import { fileURLToPath } from "node:url";
import type { Kafka } from "kafkajs";
import { loadConfigDir, toConfigRecords, toTableRecords } from "../../config/load.ts";
import { planPublish } from "../../config/publish-plan.ts";
import { ConfigTable, publishConfig } from "../../processors/runner/config-table.ts";
import type { Logger } from "../../processors/runner/log.ts";
import type { Serde } from "../../schemas/serde.ts";

export const LOAD_CONFIG_DIR = fileURLToPath(new URL("./config/", import.meta.url));

export interface PublishConfigOptions {
  /** The configuration directory. @default LOAD_CONFIG_DIR */
  readonly dir?: string;
  /** The reason the rows carry. @default "load generator agents" */
  readonly reason?: string;
}

/** Publishes what changed; returns the keys written. */
export async function publishLoadConfig(kafka: Kafka, serde: Serde, log: Logger, opts: PublishConfigOptions = {}): Promise<string[]> {
  const dir = opts.dir ?? LOAD_CONFIG_DIR;
  const config = await loadConfigDir(dir);
  if (config.errors.length > 0) throw new Error(`the configuration in ${dir} has errors: ${config.errors.map((e) => e.message).join("; ")}`);
  const table = await ConfigTable.start(kafka, serde, log);
  const plan = planPublish(table.entries(), toTableRecords(config));
  await table.stop();
  if (plan.upserts.length === 0) return [];
  const records = toConfigRecords(plan.upserts, { ts: Date.now(), reason: opts.reason ?? "load generator agents" });
  if (!records.ok) throw new Error(records.errors.map((e) => e.message).join("; "));
  await publishConfig(kafka, serde, records.value);
  return plan.upserts.map((r) => r.key);
}
