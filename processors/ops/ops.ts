/**
 * Operability of a pipeline process in one piece: the health state, the monitor of lag and
 * groups, and the HTTP server of `/health/*` and `/metrics`. The pipeline announces each
 * processor as it starts; anything that runs processors (the pipeline, a test) wires it the
 * same way.
 */
import type { Admin } from "kafkajs";
import { Health } from "./health.ts";
import type { Logger } from "../runner/log.ts";
import { MetricsRegistry, type MetricFamily } from "./metrics.ts";
import { Monitor } from "./monitor.ts";
import { pipelineFamilies, type Measured } from "./ops-metrics.ts";
import { startOpsServer, type OpsAddress, type OpsServer } from "./ops-server.ts";
import type { RunningProcessor } from "../runner/runner.ts";
import { TOPICS } from "../../topology/topics.ts";
import { objectPuts } from "../../store/objects.ts";

export interface Ops {
  readonly health: Health;
  readonly monitor: Monitor;
  readonly server: OpsServer;
  /** A processor is about to start under `group`: not ready until it has. */
  starting(name: string, group: string): void;
  /** It started: its counters join the metrics, and the monitor watches its group. */
  started(p: RunningProcessor, group: string): void;
  /** Every processor started: the monitor begins asking the broker. */
  running(): void;
  /** More families for `/metrics`, such as the model gateway's when `npm start` serves it beside the pipeline. */
  addMetrics(source: () => MetricFamily[]): void;
  stop(): Promise<void>;
}

export interface OpsOptions {
  address: OpsAddress;
  log: Logger;
  /** Connected by the caller, who disconnects it after `stop`. */
  admin: Admin;
  /** How often lag and group states are read. @default 5000 */
  periodMs?: number;
}

export async function startOps({ address, log, admin, periodMs }: OpsOptions): Promise<Ops> {
  const health = new Health({ staleAfterMs: Math.max(30_000, 6 * (periodMs ?? 5_000)) });
  // The pipeline's topics: the health says which of their partitions are under-replicated or without a leader.
  const monitor = new Monitor({ admin, health, log, periodMs, topics: TOPICS.map((t) => t.name) });
  const measured: Measured[] = [];
  // The pipeline's own registry, with prom-client's default process metrics beside its families.
  const metrics = new MetricsRegistry();
  metrics.add(() => pipelineFamilies({ processors: measured, lag: (n) => monitor.lag(n), readiness: () => health.ready(), objectPuts }));
  const server = await startOpsServer({ address, health, log, metrics });
  return {
    health,
    monitor,
    server,
    starting: (name, group) => health.starting(name, group),
    started: (p, group) => {
      measured.push(p);
      monitor.watch({ name: p.name, group, input: p.consumes });
      health.started(p.name, () => p.failing());
    },
    addMetrics: (source) => metrics.add(source),
    running: () => {
      health.running();
      monitor.start();
    },
    stop: async () => {
      health.stopping();
      await monitor.stop();
      await server.close();
    },
  };
}
