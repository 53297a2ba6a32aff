/**
 * `npm run audit -- [--tenant T] [--kind K] [--since ISO] [--json] [--loops | --loops-weekly]`:
 * the audit log (MinIO, `OZ0_AUDIT_BUCKET`) in time order, each entry as first written.
 * `--kind approval` matches every `approval.*`; `--loops` shows loops acted on per day, tenant,
 * plugin and tool from the `loop.acted` entries instead of the entries themselves;
 * `--loops-weekly` the tools that looped in three or more tenants in the last 7 UTC days
 * (LOOP-9), with their risk class and kill switch from the configuration table.
 */
import { parseArgs } from "node:util";
import kafkajs from "kafkajs";
import { formatEntries, formatLoopCounts, loopCounts, selectEntries, weeklyLoopingTools, type AuditFilter } from "../processors/audit-sink/query.ts";
import { formatLoopReport, toolFacts } from "../processors/loops/report.ts";
import { ConfigTable } from "../processors/runner/config-table.ts";
import { kafkaConfig } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import { sinkStores } from "../processors/sinks.ts";
import { Serde } from "../schemas/serde.ts";
import { servicesForCommand } from "../topology/services.ts";

const USAGE = "usage: npm run audit -- [--tenant T] [--kind K] [--since ISO-time] [--json] [--loops | --loops-weekly]\n";
/** LOOP-9's window and threshold. */
const WEEK = { days: 7, minTenants: 3 };

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    options: {
      tenant: { type: "string" },
      kind: { type: "string" },
      since: { type: "string" },
      json: { type: "boolean", default: false },
      loops: { type: "boolean", default: false },
      "loops-weekly": { type: "boolean", default: false },
    },
  });
} catch (err) {
  fail((err as Error).message);
}
const { values } = parsed;
const weekly = values["loops-weekly"];
if (weekly && (values.loops || values.tenant !== undefined || values.kind !== undefined || values.since !== undefined)) {
  fail("--loops-weekly counts every tenant's loop.acted entries of the last 7 days: give it without --loops, --tenant, --kind or --since");
}
let since: number | undefined;
if (values.since !== undefined) {
  since = Date.parse(values.since);
  if (!/^\d{4}-\d{2}-\d{2}/.test(values.since) || Number.isNaN(since)) fail(`--since ${values.since} is not an ISO time such as 2026-11-30 or 2026-11-30T08:00:00Z`);
}
const filter: AuditFilter = { tenant: values.tenant, kind: values.loops || weekly ? "loop.acted" : values.kind, since };

const endpoints = await servicesForCommand();
const { audit } = sinkStores(endpoints);
if (!(await audit.client.bucketExists(audit.bucket))) {
  process.stderr.write(`bucket ${audit.bucket} does not exist: the audit sink has not run here (npm start runs it)\n`);
  process.exit(1);
}
// The day index spares the objects of earlier days; --loops-weekly reads the last 7 UTC days and the day before.
const log = await audit.read({ since: weekly ? Date.now() - (WEEK.days + 1) * 86_400_000 : filter.since });
for (const why of log.unreadable) process.stderr.write(`warning: ${why}\n`);
for (const name of log.altered) process.stderr.write(`warning: ${name} gained a later version or a delete marker; the entries shown are its first version, as written\n`);
const entries = selectEntries(log.entries, filter);
if (weekly) {
  // Logs go to stderr, so --json stays parseable.
  const log = createLogger({ component: "audit" });
  const config = await ConfigTable.start(new kafkajs.Kafka(kafkaConfig("oz0-audit-reader", endpoints, process.env, log)), new Serde({ registryUrl: endpoints.registryUrl }), log);
  try {
    const tools = weeklyLoopingTools(entries, WEEK, toolFacts(config));
    process.stdout.write(values.json ? `${JSON.stringify({ days: WEEK.days, min_tenants: WEEK.minTenants, tools }, null, 2)}\n` : `${formatLoopReport(tools, WEEK)}\n`);
  } finally {
    await config.stop();
  }
} else if (values.loops) {
  const counts = loopCounts(entries);
  process.stdout.write(values.json ? `${JSON.stringify(counts, null, 2)}\n` : formatLoopCounts(counts));
} else {
  process.stdout.write(values.json ? `${JSON.stringify(entries, null, 2)}\n` : formatEntries(entries));
}
process.exit(0);
