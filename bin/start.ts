/**
 * `npm start`: the main job. Finds the services (or brings up the local stack), runs every
 * processor of the pipeline, and shows progress until SIGINT or SIGTERM; then stops each
 * processor with its offsets committed and prints a summary.
 */
import { createLogger } from "../processors/runner/log.ts";
import { startPipeline } from "./pipeline.ts";
import { servicesForCommand } from "./services.ts";

const log = createLogger({ component: "start" });
const pipeline = await startPipeline(await servicesForCommand(), log);
const started = Date.now();
const PERIOD_S = 5;
let last = new Map(pipeline.running.map((r) => [r.name, r.stats.in]));

const progress = setInterval(() => {
  void (async () => {
    const lines = await Promise.all(
      pipeline.running.map(async (r) => {
        const lag = await pipeline.lag(r).catch(() => NaN);
        const rate = (r.stats.in - (last.get(r.name) ?? 0)) / PERIOD_S;
        return `${r.name}: ${rate.toFixed(0)}/s, ${r.stats.in} in, ${r.stats.out} out, ${r.stats.deadLetters} dead, lag ${lag}`;
      }),
    );
    last = new Map(pipeline.running.map((r) => [r.name, r.stats.in]));
    process.stderr.write(`[${Math.round((Date.now() - started) / 1000)}s] ${lines.join(" | ") || "no processors"}\n`);
  })();
}, PERIOD_S * 1000);

let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearInterval(progress);
  log.info("stopping", { signal });
  await pipeline.stop();
  const secs = (Date.now() - started) / 1000;
  process.stderr.write(`\nsummary after ${secs.toFixed(0)} s:\n`);
  for (const r of pipeline.running) {
    process.stderr.write(`  ${r.name}: ${r.stats.in} in, ${r.stats.out} out, ${r.stats.deadLetters} dead letters, ${r.stats.retries} retries\n`);
  }
  process.exit(0);
}
process.on("SIGINT", () => void stop("SIGINT"));
process.on("SIGTERM", () => void stop("SIGTERM"));
