/**
 * `npm run trace -- <job-id> [--tenant T] [--json] [--scan]`: a job's trace as the trace sink
 * keeps it (MinIO, `OZ0_TRACE_BUCKET`), read without scanning a topic; `--tenant` reads that
 * tenant's job of the ID only (without it, every tenant's of that ID). The objects holding the
 * job's records are found through the trace index in Redis (`OZ0_REDIS_URL`). `--scan` reads the topics
 * instead (oz0.trace, oz0.call-decisions, oz0.admissions, oz0.jobs), for a pipeline that runs
 * without the sink.
 */
import { parseArgs } from "node:util";
import kafkajs from "kafkajs";
import { formatTrace, type JobTrace } from "../client/trace-format.ts";
import { scanTrace } from "../client/trace-scan.ts";
import { kafkaConfig } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import { sinkStores } from "../processors/sinks.ts";
import { Serde } from "../schemas/serde.ts";
import { redisClient } from "../store/redis/client.ts";
import { servicesForCommand } from "../topology/services.ts";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { json: { type: "boolean", default: false }, scan: { type: "boolean", default: false }, tenant: { type: "string" } },
});
const jobId = positionals[0];
if (!jobId || positionals.length > 1) {
  process.stderr.write("usage: npm run trace -- <job-id> [--tenant T] [--json] [--scan]\n");
  process.exit(2);
}

const endpoints = await servicesForCommand();
let trace: JobTrace;
if (values.scan) {
  const log = createLogger({ component: "trace" });
  trace = await scanTrace(new kafkajs.Kafka(kafkaConfig("oz0-trace", endpoints, process.env, log)), new Serde({ registryUrl: endpoints.registryUrl }), jobId);
} else {
  const { traces } = sinkStores(endpoints);
  if (!(await traces.client.bucketExists(traces.bucket))) {
    process.stderr.write(`bucket ${traces.bucket} does not exist: the trace sink has not run here (npm start runs it); --scan reads the topics instead\n`);
    process.exit(1);
  }
  const redis = redisClient(endpoints, { maxRetriesPerRequest: 3 });
  try {
    trace = await traces.indexed(redis).read(jobId, values.tenant);
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}
process.stdout.write(values.json ? `${JSON.stringify(trace, null, 2)}\n` : formatTrace(trace));
process.exit(0);
