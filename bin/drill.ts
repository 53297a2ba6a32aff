/**
 * Runs the fault drills against the services of the local stack (or the OZ0_* endpoints):
 *
 *   npm run drill -- kill9  [--subject S|all] [--events N] [--rate R] [--times K]
 *   npm run drill -- rebalance [--subject S|all] [--events N] [--rate R] [--times K]
 *   npm run drill -- outage --service kafka|redis|minio|registry [--kill] [--down-seconds D] [--drain-seconds W] [--subject S|all] [--events N] [--rate R] [--times K]
 *   npm run drill -- reshard [--slots N] [--subject S|all] [--events N] [--rate R] [--times K]   (Redis Cluster: OZ0_STACK_REDIS=cluster)
 *   npm run drill -- plant | script-flush | oom [--down-seconds D] [--subject loop-calls|limits-model-calls|all] [--events N] [--rate R] [--times K]
 *   npm run drill -- fuzz [--subject loop-calls|limits-model-calls|fit-results|all] [--messages N] [--rate R]
 *   npm run drill -- broker-loss [--target leader|coordinator] [--down-seconds D] [--subject S|all] [--events N] [--rate R] [--times K]   (Kafka cluster: OZ0_STACK_KAFKA=cluster)
 *   npm run drill -- rolling [--subject S|all] [--events N] [--rate R] [--times K]   (Kafka cluster: OZ0_STACK_KAFKA=cluster)
 *
 * S is loop-calls, limits-model-calls, fit-results or fit-offload. Each drill works in labs of
 * its own (topics `drill.<lab>.*`, Redis keys `drill_<lab>:*`, a bucket `drill-<lab>`, removed
 * at the end) and never touches the live pipeline's data; an outage drill does stop and start
 * the stack's service (stack/down.sh --only, stack/up.sh), and the Redis drills plant a key over
 * one run's state (plant), flush Redis' scripts (script-flush) or make Redis refuse writes for a
 * while (oom, maxmemory set to a byte, then set back); the broker drills SIGKILL a broker of the
 * stack's Kafka cluster (stack/down.sh --only kafka-cluster-<port> --kill, then stack/up.sh --only
 * kafka-cluster) or restart its three one at a time, and refuse (exit 2) when the drill's Kafka is
 * not that cluster of three brokers. Prints a Markdown table (also
 * written to bench/out/drills.md) and exits 1 when a drill fails its checks.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { redisClient } from "../store/redis/client.ts";
import kafkajs from "kafkajs";
import { endpointsFromEnv, kafkaConfig } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import { Serde } from "../schemas/serde.ts";
import { minioClient } from "../store/objects.ts";
import { BrokerDrillRefused, requireStackCluster } from "../drills/brokers.ts";
import { BROKER_DISRUPTIONS, disruptDrill, REDIS_DISRUPTIONS, REDIS_SUBJECTS, type Disruption, type StackService } from "../drills/disrupt.ts";
import { drillTable, passed, type DrillRow } from "../drills/report.ts";
import { FUZZ_SUBJECTS, fuzzDrill, fuzzTables, type FuzzResult, type FuzzSubject } from "../drills/fuzz.ts";
import { isSubjectName, SUBJECT_NAMES, type SubjectName } from "../drills/subjects.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    subject: { type: "string", default: "all" },
    events: { type: "string", default: "3000" },
    rate: { type: "string", default: "500" },
    times: { type: "string", default: "2" },
    service: { type: "string" },
    kill: { type: "boolean", default: false },
    "down-seconds": { type: "string", default: "10" },
    "drain-seconds": { type: "string", default: "90" },
    // reshard: slots moved from one master to the next at each disruption.
    slots: { type: "string", default: "4096" },
    // broker-loss: which broker is killed.
    target: { type: "string", default: "leader" },
    // fuzz: hostile messages in all, split evenly across the subjects.
    messages: { type: "string", default: "100000" },
  },
});
const usage = [
  "usage: npm run drill -- kill9  [--subject S|all] [--events N] [--rate R] [--times K]",
  "       npm run drill -- rebalance [--subject S|all] [--events N] [--rate R] [--times K]",
  "       npm run drill -- outage --service kafka|redis|minio|registry [--kill] [--down-seconds D] [--drain-seconds W] [--subject S|all] [--events N] [--rate R] [--times K]",
  "       npm run drill -- reshard [--slots N] [--subject S|all] [--events N] [--rate R] [--times K]   (on a Redis Cluster)",
  "       npm run drill -- plant [--subject loop-calls|limits-model-calls] [--events N] [--rate R] [--times K]",
  "       npm run drill -- script-flush [--subject loop-calls|limits-model-calls|all] [--events N] [--rate R] [--times K]",
  "       npm run drill -- oom [--down-seconds D] [--subject loop-calls|limits-model-calls|all] [--events N] [--rate R] [--times K]",
  "       npm run drill -- fuzz [--subject loop-calls|limits-model-calls|fit-results|all] [--messages N] [--rate R]",
  "       npm run drill -- broker-loss [--target leader|coordinator] [--down-seconds D] [--subject S|all] [--events N] [--rate R] [--times K]   (on the Kafka cluster: OZ0_STACK_KAFKA=cluster)",
  "       npm run drill -- rolling [--subject S|all] [--events N] [--rate R] [--times K]   (on the Kafka cluster: OZ0_STACK_KAFKA=cluster)",
  `       S is one of ${SUBJECT_NAMES.join(", ")}`,
].join("\n");
const fail = (why: string): never => {
  process.stderr.write(`${why}\n${usage}\n`);
  process.exit(2);
};
const drill = positionals[0];
const events = Number(values.events);
const rate = Number(values.rate);
const times = Number(values.times);
const downMs = Number(values["down-seconds"]) * 1000;
const drainMs = Number(values["drain-seconds"]) * 1000;
if (!(events > 0 && rate > 0 && Number.isInteger(times) && times >= 0 && downMs >= 0)) fail("--events, --rate, --times and --down-seconds take positive numbers");
const subjects: SubjectName[] = values.subject === "all" ? (REDIS_DISRUPTIONS.has(drill ?? "") ? [...REDIS_SUBJECTS] : [...SUBJECT_NAMES]) : isSubjectName(values.subject) ? [values.subject] : fail(`unknown subject ${values.subject}`);
const SERVICES: readonly StackService[] = ["kafka", "redis", "minio", "registry"];
const fuzzSubjects: FuzzSubject[] = values.subject === "all" ? [...FUZZ_SUBJECTS] : FUZZ_SUBJECTS.filter((s) => s === values.subject);
const messages = Number(values.messages);
if (drill === "fuzz" && !(fuzzSubjects.length > 0 && Number.isInteger(messages) && messages >= fuzzSubjects.length)) fail(`fuzz takes --subject ${FUZZ_SUBJECTS.join("|")}|all and --messages of at least one per subject`);
let disruption: Disruption | null = null;
if (drill === "kill9") disruption = { kind: "kill9" };
else if (drill === "rebalance") disruption = { kind: "rebalance" };
else if (drill === "plant") disruption = { kind: "plant" };
else if (drill === "script-flush") disruption = { kind: "script-flush" };
else if (drill === "oom") disruption = { kind: "oom", downMs };
else if (drill === "outage") {
  const service = SERVICES.find((s) => s === values.service) ?? fail(`--service takes ${SERVICES.join(", ")}`);
  disruption = { kind: "outage", service, kill: values.kill, downMs };
} else if (drill === "reshard") {
  const slots = Number(values.slots);
  if (!(Number.isInteger(slots) && slots > 0 && slots < 16384)) fail("--slots takes a whole number of slots between 1 and 16383");
  disruption = { kind: "reshard", slots };
} else if (drill === "broker-loss") {
  const target = values.target === "leader" || values.target === "coordinator" ? values.target : fail(`--target takes leader or coordinator, not ${values.target}`);
  disruption = { kind: "broker-loss", target, downMs };
} else if (drill === "rolling") disruption = { kind: "rolling" };
else if (drill !== "fuzz") disruption = fail(`unknown drill ${drill ?? "(none)"}`);

process.env.OZ0_LOG_LEVEL ??= "warn";
const log = createLogger({ component: "drill" });
const endpoints = endpointsFromEnv();
const kafka = new kafkajs.Kafka(kafkaConfig("oz0-drill", endpoints, process.env, log));
const admin = kafka.admin();
const serde = new Serde({ registryUrl: endpoints.registryUrl });
const redis = redisClient(endpoints, { maxRetriesPerRequest: 3 });
// Redis is stopped on purpose by an outage drill; the client reconnects by itself.
redis.on("error", () => {});
const minio = minioClient(endpoints);
const say = (line: string): void => void process.stderr.write(`${line}\n`);
const rows: DrillRow[] = [];
try {
  await admin.connect();
  if (disruption !== null && BROKER_DISRUPTIONS.has(disruption.kind)) {
    try {
      await requireStackCluster(admin);
    } catch (err) {
      if (err instanceof BrokerDrillRefused) fail(err.message);
      throw err;
    }
  }
  await serde.registerAll();
  const fuzzed: FuzzResult[] = [];
  for (const [i, subject] of (disruption === null ? fuzzSubjects : []).entries()) {
    const share = Math.floor(messages / fuzzSubjects.length) + (i < messages % fuzzSubjects.length ? 1 : 0);
    const result = await fuzzDrill({ kafka, admin, serde, redis, minio, endpoints }, { subject, messages: share, rate, say });
    fuzzed.push(result);
    rows.push(result.row);
    say(`${result.row.drill} ${subject}: ${passed(result.row) ? "passed" : "FAILED"} ${result.row.details.join("; ")}`);
  }
  if (fuzzed.length > 0) {
    await mkdir(new URL("../bench/out/", import.meta.url), { recursive: true });
    await writeFile(new URL("../bench/out/fuzz.md", import.meta.url), `${drillTable(rows)}\n\n${fuzzTables(fuzzed)}\n`);
  }
  for (const subject of subjects) {
    if (disruption === null) break;
    const row = await disruptDrill({ kafka, admin, serde, redis, minio, endpoints }, { subject, events, rate, times, disruption, say, drainMs });
    rows.push(row);
    say(`${row.drill} ${row.subject}: ${passed(row) ? "passed" : "FAILED"} ${row.details.join("; ")}`);
  }
} finally {
  await admin.disconnect().catch(() => undefined);
  redis.disconnect();
}
const table = drillTable(rows);
const notes = rows.flatMap((r) => (r.notes ?? []).map((n) => `- ${r.drill}, ${r.subject}: ${n}`));
process.stdout.write(`${table}\n${notes.length > 0 ? `\n${notes.join("\n")}\n` : ""}`);
await mkdir(new URL("../bench/out/", import.meta.url), { recursive: true });
await writeFile(new URL("../bench/out/drills.md", import.meta.url), `${table}\n`);
process.exit(rows.every(passed) ? 0 : 1);
