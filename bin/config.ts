/**
 * `npm run config -- <command>`: agent definitions, plugin manifests and tenant settings.
 *
 *   validate [dir]                      check every file; errors as path:line: field: reason
 *   lint <oz0-plugin.yaml>...           the manifest lint (FIT-17), warnings as a linter prints them
 *   publish [dir] [--reason R] [--prune]
 *                                       validate, then write changed rows to the compacted
 *                                       config topic; a changed tenant row needs --reason (OFF-13);
 *                                       --prune removes rows whose file is gone
 *   kill-switch <plugin>/<tool> --reason R [--off] [--by name]
 *                                       throw (or release) a kill switch on a tool, cluster-wide
 *                                       (LOOP-9), with an audit entry
 *
 * `dir` defaults to $OZ0_CONFIG_DIR, else config/examples. Exit status: 0 fine (warnings
 * allowed), 1 errors, 2 usage.
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { Kafka } from "kafkajs";
import { formatConfigIssue } from "../config/errors.ts";
import { loadConfigDir, toConfigRecords, toTableRecords } from "../config/load.ts";
import { parsePlugin } from "../config/plugin.ts";
import { planPublish } from "../config/publish-plan.ts";
import { CONFIG_TOPIC, ConfigTable, publishConfig } from "../processors/runner/config-table.ts";
import { kafkaConfig } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import { Serde } from "../schemas/serde.ts";
import { ensureTopics } from "../topology/create.ts";
import { topic } from "../topology/topics.ts";
import { describeKillSwitch } from "../processors/loops/kill-switch.ts";
import { setKillSwitch } from "./kill-switch.ts";
import { servicesForCommand } from "../topology/services.ts";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { reason: { type: "string" }, prune: { type: "boolean", default: false }, off: { type: "boolean", default: false }, by: { type: "string" }, json: { type: "boolean", default: false } },
});
const [command, ...rest] = positionals;
const defaultDir = process.env.OZ0_CONFIG_DIR ?? "config/examples";

function usage(): never {
  process.stderr.write("usage: npm run config -- validate [dir] | lint <oz0-plugin.yaml>... | publish [dir] [--reason R] [--prune] | kill-switch <plugin>/<tool> --reason R [--off] [--by name]\n");
  process.exit(2);
}

async function validate(dir: string) {
  const config = await loadConfigDir(dir);
  for (const e of config.errors) console.log(`error: ${e.message}`);
  for (const w of config.warnings) console.log(`warning: ${w.message}`);
  return config;
}

const issue = (i: { path: string; field: string; line?: number | undefined; reason: string }, severity: "error" | "warning") => ({ severity, path: i.path, line: i.line ?? null, field: i.field, reason: i.reason });

async function lint(files: string[]): Promise<number> {
  if (files.length === 0) usage();
  const found: Array<ReturnType<typeof issue>> = [];
  for (const file of files) {
    const parsed = parsePlugin(await readFile(file, "utf8"), file);
    // The parse already carries the lint's warnings (FIT-17), with their lines.
    for (const w of parsed.warnings) found.push(issue(w, "warning"));
    if (!parsed.ok) for (const e of parsed.errors) found.push(issue(e, "error"));
  }
  const errors = found.filter((f) => f.severity === "error").length;
  if (values.json) console.log(JSON.stringify({ manifests: files.length, errors, warnings: found.length - errors, issues: found }, null, 2));
  else {
    for (const f of found) console.log(`${formatConfigIssue({ ...f, line: f.line ?? undefined })}  (${f.severity})`);
    console.log(`${files.length} manifest(s): ${errors} error(s), ${found.length - errors} warning(s)`);
  }
  return errors > 0 ? 1 : 0;
}

async function publish(dir: string): Promise<number> {
  const config = await validate(dir);
  if (config.errors.length > 0) {
    console.log(`not published: ${config.errors.length} error(s) in ${dir}`);
    return 1;
  }
  const endpoints = await servicesForCommand();
  const log = createLogger({ component: "config" });
  const kafka = new Kafka(kafkaConfig("oz0-config", endpoints, process.env, log));
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, [topic(CONFIG_TOPIC)]).finally(() => admin.disconnect());
  const serde = new Serde({ registryUrl: endpoints.registryUrl });
  await serde.registerAll();
  const table = await ConfigTable.start(kafka, serde, log);
  const plan = planPublish(table.entries(), toTableRecords(config), { prune: values.prune });
  await table.stop();
  const records = toConfigRecords(plan.upserts, { ts: Date.now(), reason: values.reason ?? null });
  if (!records.ok) {
    for (const e of records.errors) console.log(`error: ${e.message}`);
    console.log("not published: give --reason \"...\" for the tenant settings that change");
    return 1;
  }
  if (plan.upserts.length + plan.deletes.length === 0) {
    console.log(`nothing to publish: ${plan.unchanged.length} unchanged`);
    return 0;
  }
  await publishConfig(kafka, serde, records.value, plan.deletes);
  for (const r of plan.upserts) console.log(`published  ${r.key}  (${r.source})`);
  for (const k of plan.deletes) console.log(`removed    ${k}`);
  console.log(`${plan.upserts.length} published, ${plan.deletes.length} removed, ${plan.unchanged.length} unchanged`);
  return 0;
}

let code: number;
switch (command) {
  case "validate": {
    const dir = rest[0] ?? defaultDir;
    const config = values.json ? await loadConfigDir(dir) : await validate(dir);
    if (values.json) {
      const issues = [...config.errors.map((e) => issue(e, "error")), ...config.warnings.map((w) => issue(w, "warning"))];
      console.log(JSON.stringify({ agents: config.agents.size, plugins: config.plugins.size, tenants: config.tenants.size, errors: config.errors.length, warnings: config.warnings.length, issues }, null, 2));
    } else console.log(`${config.agents.size} agent(s), ${config.plugins.size} plugin(s), ${config.tenants.size} tenant(s): ${config.errors.length} error(s), ${config.warnings.length} warning(s)`);
    code = config.errors.length > 0 ? 1 : 0;
    break;
  }
  case "lint":
    code = await lint(rest);
    break;
  case "publish":
    code = await publish(rest[0] ?? defaultDir);
    break;
  case "kill-switch": {
    if (rest.length !== 1) usage();
    const endpoints = await servicesForCommand();
    const log = createLogger({ component: "config" });
    const kafka = new Kafka(kafkaConfig("oz0-config", endpoints, process.env, log));
    const outcome = await setKillSwitch(
      { kafka, serde: new Serde({ registryUrl: endpoints.registryUrl }), log },
      { tool: rest[0] ?? "", reason: values.reason, by: values.by ?? process.env.USER ?? "an admin", off: values.off, at: Date.now() },
    );
    console.log(describeKillSwitch(outcome));
    code = "error" in outcome ? 1 : 0;
    break;
  }
  default:
    usage();
}
process.exit(code);
