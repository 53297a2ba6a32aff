/**
 * `npm run load`: plays many runtimes at once against the pipeline, through the runtime
 * client, and reports throughput and latency from publish to what the model reads. Bounded
 * in count and time: it stops by itself.
 *
 *   npm run load -- [--results N] [--seconds S] [--runs R] [--external]
 *
 * Results are real text (the checked-in corpus of `test/fixtures/tokens`: docs, code, JSON,
 * diffs, logs, non-English text); a quarter of the calls ask for no fitting, the rest for a
 * budget, a view or a line range. Without --external the pipeline runs in this process.
 * The report goes to stdout and `bench/out/load.md`.
 */
import { randomUUID } from "node:crypto";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { RuntimeClient } from "../client/runtime-client.ts";
import { random, syntheticResult } from "../client/synthetic.ts";
import { createLogger } from "../processors/runner/log.ts";
import { opsAddressFromEnv } from "../processors/runner/ops-server.ts";
import type { ToolResult } from "../schemas/types.ts";
import { startPipeline, type Pipeline } from "./pipeline.ts";
import { servicesForCommand } from "./services.ts";

const { values } = parseArgs({
  options: {
    results: { type: "string", default: "2000" },
    seconds: { type: "string", default: "60" },
    runs: { type: "string", default: "20" },
    external: { type: "boolean", default: false },
  },
});
const total = Number(values.results);
const seconds = Number(values.seconds);
const runs = Number(values.runs);
if (!(total > 0 && seconds > 0 && runs > 0)) {
  process.stderr.write("usage: npm run load -- [--results N>0] [--seconds S>0] [--runs R>0] [--external]\n");
  process.exit(2);
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

const log = createLogger({ component: "load" });
const endpoints = await servicesForCommand();
const corpusDir = new URL("../test/fixtures/tokens/", import.meta.url);
const corpus = await Promise.all((await readdir(corpusDir)).filter((f) => f.endsWith(".txt")).sort().map((f) => readFile(new URL(f, corpusDir), "utf8")));
if (corpus.length === 0) throw new Error("no corpus in test/fixtures/tokens");

let pipeline: Pipeline | undefined;
// Its health and metrics on any free port unless OZ0_METRICS_PORT says, so a running `npm start` keeps 9464.
if (!values.external) pipeline = await startPipeline(endpoints, createLogger({ component: "pipeline" }, () => {}), { ops: opsAddressFromEnv({ OZ0_METRICS_PORT: "0", ...process.env }) });
const client = await RuntimeClient.connect(endpoints, { log, listen: ["delivered"] });

const rnd = random(42);
const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)] as T;
const argsMix = [{}, { budget: 500 }, { budget: 2000 }, { view: "summary" }, { view: "stub" }, { query: "1-40" }, { budget: 4000, view: "full" }, { budget: 1000 }];
const tag = randomUUID().slice(0, 8);
const results: ToolResult[] = Array.from({ length: total }, (_, index) =>
  syntheticResult({ prefix: `load-${tag}`, index, runs, text: pick(corpus), args: pick(argsMix), agent: "acme-reviewer" }),
);

const deadline = Date.now() + seconds * 1000;
const sentAt = new Map<string, number>();
const latencies: number[] = [];
let delivered = 0;
let lost = 0;
const started = Date.now();
const bar = setInterval(() => {
  const width = 30;
  const done = Math.round((delivered / total) * width);
  const rate = delivered / Math.max(0.001, (Date.now() - started) / 1000);
  process.stderr.write(`\r[${"#".repeat(done)}${".".repeat(width - done)}] ${delivered}/${total} delivered, ${rate.toFixed(0)}/s  `);
}, 500);

const waits: Array<Promise<void>> = [];
const BATCH = 200;
for (let i = 0; i < results.length && Date.now() < deadline; i += BATCH) {
  const batch = results.slice(i, i + BATCH);
  const now = Date.now();
  for (const r of batch) sentAt.set(r.id, now);
  await client.publishToolResults(batch);
  for (const r of batch) {
    waits.push(
      client.awaitDelivered(r.id, Math.max(1, deadline - Date.now())).then(
        () => {
          latencies.push(Date.now() - (sentAt.get(r.id) ?? now));
          delivered++;
        },
        () => void lost++,
      ),
    );
  }
}
await Promise.all(waits);
clearInterval(bar);
const elapsed = (Date.now() - started) / 1000;
process.stderr.write("\n");
latencies.sort((a, b) => a - b);

const stats = pipeline?.running.map((r) => `| ${r.name} | ${r.stats.in} | ${r.stats.out} | ${r.stats.deadLetters} | ${r.stats.retries} |`) ?? [];
const report = [
  `# Load report (${new Date().toISOString()})`,
  "",
  `Results sent: ${sentAt.size} of ${total} asked, over ${runs} runs and 3 tenants; bounded by ${seconds} s.`,
  "",
  "| measure | value |",
  "| --- | --- |",
  `| delivered | ${delivered} |`,
  `| not answered in time | ${lost} |`,
  `| elapsed | ${elapsed.toFixed(1)} s |`,
  `| throughput (delivered per second) | ${(delivered / elapsed).toFixed(0)} |`,
  `| latency p50 publish to delivered | ${percentile(latencies, 50)} ms |`,
  `| latency p95 | ${percentile(latencies, 95)} ms |`,
  `| latency p99 | ${percentile(latencies, 99)} ms |`,
  "",
  ...(stats.length > 0 ? ["| processor | in | out | dead letters | retries |", "| --- | --- | --- | --- | --- |", ...stats] : ["(pipeline external: its counters are in its own progress lines)"]),
  "",
].join("\n");
process.stdout.write(report);
await mkdir(new URL("../bench/out/", import.meta.url), { recursive: true });
await writeFile(new URL("../bench/out/load.md", import.meta.url), report);

await client.close();
await pipeline?.stop();
process.exit(lost > 0 ? 1 : 0);
