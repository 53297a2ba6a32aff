/**
 * `npm run audit -- [--tenant T] [--kind K] [--since ISO] [--json] [--loops]`: the audit log
 * (MinIO, `OZ0_AUDIT_BUCKET`) in time order, each entry as first written. `--kind approval`
 * matches every `approval.*`; `--loops` shows loops acted on per day, tenant, plugin and tool
 * from the `loop.acted` entries instead of the entries themselves.
 */
import { parseArgs } from "node:util";
import { formatEntries, formatLoopCounts, loopCounts, selectEntries, type AuditFilter } from "../processors/audit-sink/query.ts";
import { sinkStores } from "../processors/sinks.ts";
import { servicesForCommand } from "./services.ts";

const USAGE = "usage: npm run audit -- [--tenant T] [--kind K] [--since ISO-time] [--json] [--loops]\n";

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
    },
  });
} catch (err) {
  fail((err as Error).message);
}
const { values } = parsed;
let since: number | undefined;
if (values.since !== undefined) {
  since = Date.parse(values.since);
  if (!/^\d{4}-\d{2}-\d{2}/.test(values.since) || Number.isNaN(since)) fail(`--since ${values.since} is not an ISO time such as 2026-11-30 or 2026-11-30T08:00:00Z`);
}
const filter: AuditFilter = { tenant: values.tenant, kind: values.loops ? "loop.acted" : values.kind, since };

const endpoints = await servicesForCommand();
const { audit } = sinkStores(endpoints);
if (!(await audit.client.bucketExists(audit.bucket))) {
  process.stderr.write(`bucket ${audit.bucket} does not exist: the audit sink has not run here (npm start runs it)\n`);
  process.exit(1);
}
const log = await audit.read();
for (const why of log.unreadable) process.stderr.write(`warning: ${why}\n`);
for (const name of log.altered) process.stderr.write(`warning: ${name} gained a later version or a delete marker; the entries shown are its first version, as written\n`);
const entries = selectEntries(log.entries, filter);
if (values.loops) {
  const counts = loopCounts(entries);
  process.stdout.write(values.json ? `${JSON.stringify(counts, null, 2)}\n` : formatLoopCounts(counts));
} else {
  process.stdout.write(values.json ? `${JSON.stringify(entries, null, 2)}\n` : formatEntries(entries));
}
process.exit(0);
