/**
 * Runs the fault drills against the services of the local stack (or the OZ0_* endpoints):
 *
 *   npm run drill -- kill9 [--subject loop-calls|limits-model-calls|fit-results|all] [--events N] [--rate R] [--kills K]
 *
 * Each drill works in labs of its own (topics `drill.<lab>.*`, Redis keys `drill_<lab>:*`,
 * removed at the end) and never touches the live pipeline. Prints a Markdown table (also
 * written to bench/out/drills.md) and exits 1 when a drill fails its checks.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import kafkajs from "kafkajs";
import { endpointsFromEnv, kafkaConfig } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import { Serde } from "../schemas/serde.ts";
import { kill9Drill } from "../drills/kill9.ts";
import { drillTable, passed, type DrillRow } from "../drills/report.ts";
import { isSubjectName, SUBJECT_NAMES, type SubjectName } from "../drills/subjects.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    subject: { type: "string", default: "all" },
    events: { type: "string", default: "3000" },
    rate: { type: "string", default: "500" },
    kills: { type: "string", default: "2" },
  },
});
const usage = "usage: npm run drill -- kill9 [--subject loop-calls|limits-model-calls|fit-results|all] [--events N] [--rate R] [--kills K]";
const drill = positionals[0];
const events = Number(values.events);
const rate = Number(values.rate);
const kills = Number(values.kills);
const subjects: SubjectName[] = values.subject === "all" ? [...SUBJECT_NAMES] : isSubjectName(values.subject) ? [values.subject] : [];
if (drill !== "kill9" || subjects.length === 0 || !(events > 0 && rate > 0 && Number.isInteger(kills) && kills >= 0)) {
  process.stderr.write(`${usage}\n`);
  process.exit(2);
}

process.env.OZ0_LOG_LEVEL ??= "warn";
const log = createLogger({ component: "drill" });
const endpoints = endpointsFromEnv();
const kafka = new kafkajs.Kafka(kafkaConfig("oz0-drill", endpoints, process.env, log));
const admin = kafka.admin();
const serde = new Serde({ registryUrl: endpoints.registryUrl });
const redis = new Redis(endpoints.redisUrl, { maxRetriesPerRequest: 3 });
const say = (line: string): void => void process.stderr.write(`${line}\n`);
const rows: DrillRow[] = [];
try {
  await admin.connect();
  await serde.registerAll();
  for (const subject of subjects) {
    const row = await kill9Drill({ kafka, admin, serde, redis }, { subject, events, rate, kills, say });
    rows.push(row);
    say(`${row.drill} ${row.subject}: ${passed(row) ? "passed" : "FAILED"} ${row.details.join("; ")}`);
  }
} finally {
  await admin.disconnect().catch(() => undefined);
  redis.disconnect();
}
const table = drillTable(rows);
process.stdout.write(`${table}\n`);
await mkdir(new URL("../bench/out/", import.meta.url), { recursive: true });
await writeFile(new URL("../bench/out/drills.md", import.meta.url), `${table}\n`);
process.exit(rows.every(passed) ? 0 : 1);
