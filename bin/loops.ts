/**
 * `npm run loops -- report [--json] [--days 7] [--min-tenants 3]`: the tools that looped in
 * three or more tenants in the last week (LOOP-9), from the daily loop counts in Redis, each
 * with its risk class (the plugin's manifest) and its kill switch (the configuration table).
 *
 * Exit status: 0 fine, 2 usage.
 */
import { parseArgs } from "node:util";
import { redisClient } from "../store/redis/client.ts";
import kafkajs from "kafkajs";
import { formatLoopReport, loopReport } from "../processors/loops/report.ts";
import { ConfigTable } from "../processors/runner/config-table.ts";
import { kafkaConfig } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import { Serde } from "../schemas/serde.ts";
import { Keys } from "../store/redis/keys.ts";
import { servicesForCommand } from "../topology/services.ts";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { json: { type: "boolean", default: false }, days: { type: "string", default: "7" }, "min-tenants": { type: "string", default: "3" } },
});

function usage(): never {
  process.stderr.write("usage: npm run loops -- report [--json] [--days 7] [--min-tenants 3]\n");
  process.exit(2);
}

const days = Number(values.days);
const minTenants = Number(values["min-tenants"]);
if (positionals[0] !== "report" || positionals.length !== 1 || !Number.isInteger(days) || days < 1 || !Number.isInteger(minTenants) || minTenants < 1) usage();

const endpoints = await servicesForCommand();
// Logs go to stderr, so --json stays parseable.
const log = createLogger({ component: "loops" });
const kafka = new kafkajs.Kafka(kafkaConfig("oz0-loops", endpoints, process.env, log));
const serde = new Serde({ registryUrl: endpoints.registryUrl });
const redis = redisClient(endpoints, { maxRetriesPerRequest: 3 });
const config = await ConfigTable.start(kafka, serde, log);
try {
  const tools = await loopReport(redis, new Keys(), { days, minTenants, config });
  console.log(values.json ? JSON.stringify({ days, min_tenants: minTenants, tools }, null, 2) : formatLoopReport(tools, { days, minTenants }));
} finally {
  await config.stop();
  redis.disconnect();
}
process.exit(0);
