/**
 * The retention timer of the pipeline (FILE-6, OFF-10): beside the processors, like the loop
 * deadlines' timer, it runs a round of sweeps (`sweepRound`) `firstMs` after the start and then
 * every `everyMs`, one round at a time, with a producer of its own for the audit entries. Every
 * instance may run one: a tenant's lock and its last sweep's record make each tenant swept once
 * per interval, by whichever instance comes first. Stopping ends a round after the tenant it is
 * sweeping; the tenants left are swept at the next round, here or by another instance.
 */
import { hostname } from "node:os";
import type { Kafka } from "kafkajs";
import type { Serde } from "../../schemas/serde.ts";
import type { Logger } from "../runner/log.ts";
import type { MetricFamily } from "../ops/metrics.ts";
import type { RetentionSchedule } from "./schedule.ts";
import { RetentionMetrics, sweepRound, type RetentionDeps } from "./sweep.ts";

export interface RetentionTimer {
  /** This instance's sweep counters, for `/metrics`. */
  metrics(): MetricFamily[];
  stop(): Promise<void>;
}

/** The name this instance sweeps under: `OZ0_INSTANCE_ID`, else the host and process. */
export function retentionInstance(env: Record<string, string | undefined> = process.env): string {
  return env.OZ0_INSTANCE_ID?.trim() || `${hostname()}.${process.pid}`;
}

export async function startRetentionTimer(deps: Omit<RetentionDeps, "publish" | "metrics" | "log"> & { kafka: Kafka; serde: Serde; log: Logger; schedule: RetentionSchedule; instance: string; now?: () => number }): Promise<RetentionTimer> {
  const producer = deps.kafka.producer({ allowAutoTopicCreation: false, idempotent: true });
  await producer.connect();
  const log = deps.log.child({ component: "retention" });
  const metrics = new RetentionMetrics();
  const now = deps.now ?? Date.now;
  const full: RetentionDeps = {
    ...deps,
    log,
    metrics,
    publish: async (entries) => {
      await producer.send({ topic: "oz0.audit", acks: -1, messages: entries.map((e) => ({ key: e.tenant, value: deps.serde.encode("AuditEvent", e) })) });
    },
  };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const round = async (): Promise<void> => {
    if (stopped) return;
    try {
      // Half the interval: an instance whose timer fires a little after another's skips what that one swept.
      const results = await sweepRound(full, { instance: deps.instance, now: now(), minGapMs: Math.floor(deps.schedule.everyMs / 2), stopping: () => stopped });
      const swept = results.filter((r) => r.outcome === "swept" || r.outcome === "failed");
      log.info("retention round done", { tenants: results.length, swept: swept.length, removed: swept.reduce((n, r) => n + r.removed.files + r.removed.grants + r.removed.traces, 0), held: swept.reduce((n, r) => n + r.held.files + r.held.traces, 0) });
    } catch (err) {
      log.warn("the retention round failed; trying again at the next one", { error: err instanceof Error ? err.message : String(err) });
    }
  };
  const schedule = (ms: number): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = round().finally(() => schedule(deps.schedule.everyMs));
    }, ms);
    timer.unref?.();
  };
  schedule(deps.schedule.firstMs);
  return {
    metrics: () => metrics.families(),
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
      await producer.disconnect();
    },
  };
}
