/**
 * The metrics of a pipeline process, built at scrape time from each processor's counters and
 * latency histogram and the lag the monitor last saw; the process's own (CPU, memory, start
 * time, heap, GC, event-loop lag) are prom-client's default metrics (`metrics.ts`). Names and
 * labels: docs/operations.md.
 */
import type { DeadLetterError } from "../../schemas/types.ts";
import type { Readiness } from "./health.ts";
import type { Failing } from "../runner/retry.ts";
import type { Histogram, MetricFamily, Sample } from "./metrics.ts";
import { OUTCOME_KINDS } from "../runner/outcomes.ts";
import type { RunnerStats } from "../runner/runner.ts";

/** What the metrics read of a running processor. */
export interface Measured {
  readonly name: string;
  readonly stats: Readonly<RunnerStats>;
  readonly latency: Histogram;
  /** A batch failing on a dependency past the retry bound (`retry.ts`), or null. */
  failing?(): Failing | null;
  /** Seconds the batch failing longest has been retrying; 0 when none is. */
  retryingSeconds?(): number;
}

const DEAD_LETTER_ERRORS: readonly DeadLetterError[] = ["undecodable", "unknown_schema", "wrong_schema", "invalid", "failed"];

function byKindOrder(kinds: string[]): string[] {
  const rank = (k: string): number => {
    const i = (OUTCOME_KINDS as readonly string[]).indexOf(k);
    return i < 0 ? OUTCOME_KINDS.length : i;
  };
  return [...kinds].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

function counter(name: string, help: string, list: readonly Measured[], value: (s: Readonly<RunnerStats>) => number): MetricFamily {
  return { name, help, type: "counter", samples: list.map((p) => ({ labels: { processor: p.name }, value: value(p.stats) })) };
}

export interface ProcessMetrics {
  readonly processors: readonly Measured[];
  /** Consumer lag of a processor's group; NaN when not known yet. */
  lag: (name: string) => number;
  readiness?: () => Readiness;
  /** Objects the process has put to MinIO so far (`objectPuts` of store/objects.ts); left out when not given. */
  objectPuts?: () => number;
}

export function pipelineFamilies({ processors: list, lag, readiness, objectPuts }: ProcessMetrics): MetricFamily[] {
  const families: MetricFamily[] = [
    counter("oz0_processor_events_in_total", "Input records a processor consumed (a batch handled again after a failed commit counts again).", list, (s) => s.in),
    counter("oz0_processor_events_out_total", "Output records a processor produced, dead letters not included.", list, (s) => s.out),
    {
      name: "oz0_processor_dead_letters_total",
      help: "Inputs a processor sent to oz0.dead-letter, by error class.",
      type: "counter",
      samples: list.flatMap((p) => {
        const classes = new Set<string>([...DEAD_LETTER_ERRORS, ...Object.keys(p.stats.deadLetterErrors)]);
        return [...classes].map((error) => ({ labels: { processor: p.name, error }, value: p.stats.deadLetterErrors[error] ?? 0 }));
      }),
    },
    counter("oz0_processor_batches_total", "Batches a processor handled.", list, (s) => s.batches),
    counter("oz0_processor_retries_total", "Retries of a batch after a dependency failed (Redis, MinIO, the registry).", list, (s) => s.retries),
    {
      name: "oz0_processor_decisions_total",
      help: "Outputs by kind: verdicts (allow, wait, stop, refuse, report), results delivered, fitted and offloaded.",
      type: "counter",
      // Only the kinds a processor produced: a results processor never says "stop".
      samples: list.flatMap((p) => byKindOrder(Object.keys(p.stats.outcomes)).map((kind) => ({ labels: { processor: p.name, kind }, value: p.stats.outcomes[kind] ?? 0 }))),
    },
    {
      name: "oz0_processor_dependency_failing",
      help: "1 while a batch of the processor has failed on a dependency for longer than the retry bound (it is not ready, and keeps retrying), else 0; the dependency is named while 1.",
      type: "gauge",
      samples: list.map((p) => {
        const f = p.failing?.() ?? null;
        return { labels: { processor: p.name, ...(f ? { dependency: f.dependency } : {}) }, value: f ? 1 : 0 };
      }),
    },
    {
      name: "oz0_processor_retrying_seconds",
      help: "Seconds the batch of the processor failing longest on a dependency has been retrying; 0 when none is.",
      type: "gauge",
      samples: list.map((p) => ({ labels: { processor: p.name }, value: p.retryingSeconds?.() ?? 0 })),
    },
    {
      name: "oz0_processor_consumer_lag",
      help: "Records of a processor's input not yet committed by its consumer group, from the broker every few seconds (NaN until first read).",
      type: "gauge",
      samples: list.map((p) => ({ labels: { processor: p.name }, value: lag(p.name) })),
    },
    {
      name: "oz0_processor_decision_latency_seconds",
      help: "Seconds from an input record's timestamp to the commit of its outputs.",
      type: "histogram",
      samples: list.flatMap((p): Sample[] => p.latency.samples({ processor: p.name })),
    },
  ];
  if (objectPuts) {
    families.push({ name: "oz0_object_puts_total", help: "Objects the process put to MinIO: trace parts, audit objects, offloaded results and files, their grants and markers.", type: "counter", samples: [{ value: objectPuts() }] });
  }
  if (readiness) {
    const r = readiness();
    families.push({ name: "oz0_ready", help: "1 when every processor started and its consumer group is stable with a member, else 0.", type: "gauge", samples: [{ value: r.ready ? 1 : 0 }] });
  }
  return families;
}
