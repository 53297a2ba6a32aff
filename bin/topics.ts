/** `npm run topics`: creates the declared topics (idempotent) and registers the schemas. */
import { Kafka, logLevel } from "kafkajs";
import { kafkaConfig } from "../processors/runner/endpoints.ts";
import { Serde } from "../schemas/serde.ts";
import { ensureTopics } from "../topology/create.ts";
import { describeReplication } from "../topology/replication.ts";
import { TOPICS } from "../topology/topics.ts";
import { servicesForCommand } from "../topology/services.ts";

const endpoints = await servicesForCommand();
const admin = new Kafka({ ...kafkaConfig("oz0-topics", endpoints), logLevel: logLevel.WARN }).admin();
await admin.connect();
try {
  const report = await ensureTopics(admin, TOPICS);
  console.log(`replicas ${describeReplication(report.replication)}`);
  for (const t of report.created) console.log(`created  ${t}`);
  for (const t of report.grown) console.log(`grown    ${t}`);
  for (const t of report.reconfigured) console.log(`configs  ${t}`);
  for (const t of report.existing) console.log(`exists   ${t}`);
  for (const w of report.warnings) console.log(`warning  ${w}`);
} finally {
  await admin.disconnect();
}
const ids = await new Serde({ registryUrl: endpoints.registryUrl }).registerAll();
for (const [name, id] of ids) console.log(`schema   oz0.${name} id ${id}`);
