/**
 * `npm start`: the main job. Finds the services (or brings up the local stack), runs every
 * processor of the pipeline and the model gateway (`oz0 gateway`'s settings, from the
 * environment; `OZ0_GATEWAY_LISTEN=off` leaves it out), and shows progress until SIGINT or
 * SIGTERM; then stops the gateway and each processor with its offsets committed and prints a
 * summary.
 */
import { createLogger } from "../processors/runner/log.ts";
import { progressReport, snapshot, summaryReport, type Snapshot } from "../processors/ops/progress.ts";
import { gatewaySettings, serveGateway } from "./oz0-gateway.ts";
import { startPipeline } from "../topology/run.ts";
import { servicesForCommand } from "../topology/services.ts";

const log = createLogger({ component: "start" });
const services = await servicesForCommand();
const pipeline = await startPipeline(services, log);
const gateway = process.env.OZ0_GATEWAY_LISTEN === "off" ? null : await serveGateway(services, gatewaySettings({}), createLogger({ component: "gateway" }), { listenFrom: "first-publish" });
if (gateway) {
  pipeline.ops.addMetrics(() => gateway.metrics());
  process.stderr.write(`model gateway at ${gateway.url} (OpenAI clients: ${gateway.url}/v1; Anthropic clients: ${gateway.url})\n`);
}
const started = Date.now();
const PERIOD_S = 5;
process.stderr.write(`health and metrics at ${pipeline.ops.server.url}/health/ready and ${pipeline.ops.server.url}/metrics\n`);
let last = { at: Date.now(), snapshots: new Map<string, Snapshot>(pipeline.running.map((r) => [r.name, snapshot(r)])) };

const progress = setInterval(() => {
  void (async () => {
    // The lag as the broker shows it now, not as of the monitor's last round.
    await pipeline.ops.monitor.refresh();
    const now = pipeline.running.map(snapshot);
    const at = Date.now();
    const report = progressReport({
      before: last.snapshots,
      now,
      seconds: (at - last.at) / 1000,
      elapsedS: (at - started) / 1000,
      lag: (name) => pipeline.ops.monitor.lag(name),
      ready: pipeline.ops.health.ready().ready,
    });
    last = { at, snapshots: new Map(now.map((s) => [s.name, s])) };
    process.stderr.write(`${report}\n`);
  })();
}, PERIOD_S * 1000);

let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearInterval(progress);
  log.info("stopping", { signal });
  await gateway?.close();
  // A part that failed to stop is named, and the exit status says so.
  const failed = await pipeline.stop().then(
    () => null,
    (err: unknown) => err,
  );
  process.stderr.write(`\n${summaryReport(pipeline.running, (Date.now() - started) / 1000)}\n`);
  if (failed !== null) log.error("the pipeline did not stop cleanly", { error: failed instanceof Error ? failed.message : JSON.stringify(failed) });
  process.exit(failed === null ? 0 : 1);
}
process.on("SIGINT", () => void stop("SIGINT"));
process.on("SIGTERM", () => void stop("SIGTERM"));
