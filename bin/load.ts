/**
 * `npm run load`: many runtimes at once, through the runtime client, against the pipeline, and
 * the same plan against a bare kafkajs passthrough on the same broker; a report with figures
 * and a chart. Bounded in count and time: it stops by itself.
 *
 *   npm run load -- [--events N] [--seconds S] [--runtimes R] [--seed K] [--external] [--out DIR]
 *
 * Trees of several tenants: paging, large results offloaded to MinIO and read back with
 * oz.read_result, loops, delegated children, budgets that run out (bench/load/mix.ts), with
 * text from real documents of the repository. Without --external the pipeline runs in this
 * process. The report goes to DIR/load.md and DIR/load.svg (default bench/out); progress to
 * stderr. Exit status 0 when every awaited answer came, 1 otherwise, 2 on a usage mistake.
 */
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { runLoad } from "../bench/load/run.ts";
import { MEASURED_KINDS } from "../bench/load/play.ts";
import { createLogger } from "../processors/runner/log.ts";
import { servicesForCommand } from "./services.ts";

const usage = "usage: npm run load -- [--events N>0] [--seconds S>0] [--runtimes R>0] [--seed K] [--external] [--out DIR]\n";
let values;
try {
  ({ values } = parseArgs({
    options: {
      events: { type: "string", default: "3000" },
      seconds: { type: "string", default: "120" },
      runtimes: { type: "string", default: "24" },
      seed: { type: "string", default: "1" },
      external: { type: "boolean", default: false },
      out: { type: "string", default: fileURLToPath(new URL("../bench/out/", import.meta.url)) },
    },
  }));
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${usage}`);
  process.exit(2);
}
const events = Number(values.events);
const seconds = Number(values.seconds);
const runtimes = Number(values.runtimes);
const seed = Number(values.seed);
if (!(Number.isInteger(events) && events > 0 && seconds > 0 && Number.isInteger(runtimes) && runtimes > 0 && Number.isInteger(seed))) {
  process.stderr.write(usage);
  process.exit(2);
}

// The runner and kafkajs log at info; a load run wants warnings only, unless told otherwise.
process.env.OZ0_LOG_LEVEL ??= "warn";
const endpoints = await servicesForCommand();
const command = `npm run load -- ${process.argv.slice(2).join(" ")}`.trim();
const { result, markdown, files } = await runLoad({ endpoints, events, seconds, runtimes, seed, external: values.external, outDir: values.out, command, log: createLogger({ component: "load" }) });
process.stdout.write(`${markdown}\n`);
process.stderr.write(`report: ${files.markdown}, chart: ${files.chart}\n`);
const missing = MEASURED_KINDS.reduce((s, k) => s + result.pipeline.rec.unanswered[k], 0);
process.exit(missing > 0 || result.pipeline.rec.errors.length > 0 ? 1 : 0);
