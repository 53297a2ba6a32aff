/**
 * Prometheus metrics through prom-client: metric families as data, read at scrape time from
 * the counters the processors keep (nothing is paid per record beyond today's counters), and
 * served by a prom-client registry of their own, with its default process and Node.js metrics
 * (CPU, memory, heap, GC, event-loop lag, handles). The fixed-bucket histogram below keeps the
 * decision latency on the hot path and answers the quantiles `npm start` prints at the end.
 */
import { collectDefaultMetrics, Registry, type Metric } from "prom-client";

export type MetricType = "counter" | "gauge" | "histogram";

export type Labels = Readonly<Record<string, string>>;

export interface Sample {
  /** Suffix after the family's name, such as `_bucket`; empty for counters and gauges. */
  readonly suffix?: string;
  readonly labels?: Labels;
  readonly value: number;
}

export interface MetricFamily {
  readonly name: string;
  readonly help: string;
  readonly type: MetricType;
  readonly samples: readonly Sample[];
}

/** The Prometheus text exposition format, version 0.0.4. */
export const CONTENT_TYPE: string = Registry.PROMETHEUS_CONTENT_TYPE;

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

function checkFamily(f: MetricFamily): void {
  if (!NAME.test(f.name)) throw new Error(`metric name ${JSON.stringify(f.name)} is not valid: use letters, digits, underscores and colons`);
  for (const s of f.samples) {
    for (const k of Object.keys(s.labels ?? {})) {
      if (!LABEL.test(k) || k.startsWith("__")) throw new Error(`metric label name ${JSON.stringify(k)} is not valid: use letters, digits and underscores, not starting with __`);
    }
  }
}

/**
 * One family as a prom-client metric: the registry asks it for its values at each scrape,
 * and it answers with the family its source gave for that scrape.
 */
class FamilyMetric {
  readonly aggregator = "sum" as const;
  readonly name: string;
  private readonly current: () => MetricFamily | undefined;

  constructor(name: string, current: () => MetricFamily | undefined) {
    this.name = name;
    this.current = current;
  }

  get help(): string {
    return this.current()?.help ?? "";
  }

  get type(): MetricType {
    return this.current()?.type ?? "gauge";
  }

  get() {
    const f = this.current();
    return Promise.resolve({
      name: this.name,
      help: f?.help ?? "",
      type: f?.type ?? "gauge",
      aggregator: this.aggregator,
      values: (f?.samples ?? []).map((s) => ({ metricName: `${this.name}${s.suffix ?? ""}`, labels: { ...s.labels }, value: s.value })),
    });
  }

  reset(): void {}
}

export interface MetricsRegistryOptions {
  /**
   * prom-client's default metrics of the process (`process_cpu_seconds_total`,
   * `process_resident_memory_bytes`, `process_start_time_seconds`, `nodejs_eventloop_lag_*`,
   * `nodejs_heap_*`, `nodejs_gc_duration_seconds`, ...). @default true
   */
  processMetrics?: boolean;
}

/** Default families whose values another family's collect sets (prom-client's `processCpuTotal`). */
const COLLECTED_BY: Readonly<Record<string, string>> = {
  process_cpu_seconds_total: "process_cpu_user_seconds_total",
  process_cpu_system_seconds_total: "process_cpu_user_seconds_total",
};

/**
 * A prom-client registry of its own (never the global one: several pipelines in one process do
 * not clash) with the families of its sources, asked at each scrape. A family name a source
 * gives twice, or that a default metric has, is refused.
 */
export class MetricsRegistry {
  readonly registry = new Registry();
  private readonly sources: Array<() => readonly MetricFamily[]> = [];
  private readonly bridged = new Set<string>();
  private scraped = new Map<string, MetricFamily>();

  constructor({ processMetrics = true }: MetricsRegistryOptions = {}) {
    if (processMetrics) collectDefaultMetrics({ register: this.registry });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Families asked for at each scrape. */
  add(source: () => readonly MetricFamily[]): void {
    this.sources.push(source);
  }

  /**
   * The exposition text of every family, the sources' and the default ones; with `only`, of
   * those of its names that exist, in its order (a scrape that reads one counter does not pay
   * for formatting every family).
   */
  async render(only?: readonly string[]): Promise<string> {
    const families = new Map<string, MetricFamily>();
    for (const source of this.sources) {
      for (const f of source()) {
        checkFamily(f);
        if (families.has(f.name) || (!this.bridged.has(f.name) && this.registry.getSingleMetric(f.name) !== undefined)) {
          throw new Error(`metric ${f.name} is listed twice: merge its samples into one family`);
        }
        families.set(f.name, f);
      }
    }
    for (const name of this.bridged) {
      if (!families.has(name)) {
        this.registry.removeSingleMetric(name);
        this.bridged.delete(name);
      }
    }
    for (const name of families.keys()) {
      if (this.bridged.has(name)) continue;
      this.registry.registerMetric(new FamilyMetric(name, () => this.scraped.get(name)) as unknown as Metric);
      this.bridged.add(name);
    }
    // prom-client asks every metric for its values before the first await: this scrape's
    // families are the ones each reads, even when two scrapes overlap.
    this.scraped = families;
    if (only === undefined) return this.registry.metrics();
    const named = [...new Set(only)].filter((n) => this.registry.getSingleMetric(n) !== undefined);
    // prom-client reads the process's CPU in one family's collect and sets all three there.
    const collectors = new Set(named.map((n) => COLLECTED_BY[n]).filter((c): c is string => c !== undefined && !named.includes(c)));
    for (const c of collectors) await this.registry.getSingleMetric(c)?.get();
    const texts = await Promise.all(named.map((n) => this.registry.getSingleMetricAsString(n)));
    return texts.length === 0 ? "" : `${texts.join("\n\n")}\n`;
  }
}

/** Renders families as the exposition text (no default metrics); a family with no samples keeps its HELP and TYPE. */
export function renderMetrics(families: readonly MetricFamily[]): Promise<string> {
  const r = new MetricsRegistry({ processMetrics: false });
  r.add(() => families);
  return r.render();
}

/** Decision latency buckets in seconds: from a fast in-memory decision to a long catch-up. */
export const LATENCY_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60] as const;

/** A histogram with fixed upper bounds; a value lands in the first bucket whose bound is at least it. */
export class Histogram {
  readonly bounds: readonly number[];
  private readonly counts: number[];
  private total = 0;
  private n = 0;

  constructor(bounds: readonly number[] = LATENCY_BUCKETS_S) {
    if (bounds.length === 0) throw new Error("a histogram needs at least one bucket bound");
    for (let i = 1; i < bounds.length; i++) {
      if (!((bounds[i] as number) > (bounds[i - 1] as number))) throw new Error(`histogram bounds must increase: ${bounds.join(", ")}`);
    }
    this.bounds = [...bounds];
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(value: number): void {
    if (Number.isNaN(value)) return;
    let i = 0;
    while (i < this.bounds.length && value > (this.bounds[i] as number)) i++;
    this.counts[i] = (this.counts[i] ?? 0) + 1;
    this.total += value;
    this.n++;
  }

  get count(): number {
    return this.n;
  }

  get sum(): number {
    return this.total;
  }

  /**
   * The value below which a share `q` of observations fall, interpolated within its bucket as
   * Prometheus's histogram_quantile does; the largest bound when it falls in +Inf, NaN when empty.
   */
  quantile(q: number): number {
    if (this.n === 0) return NaN;
    const rank = Math.min(1, Math.max(0, q)) * this.n;
    let below = 0;
    for (let i = 0; i < this.counts.length; i++) {
      const c = this.counts[i] ?? 0;
      if (c > 0 && below + c >= rank) {
        if (i === this.bounds.length) return this.bounds[i - 1] as number;
        const lower = i === 0 ? 0 : (this.bounds[i - 1] as number);
        const upper = this.bounds[i] as number;
        return lower + (upper - lower) * ((rank - below) / c);
      }
      below += c;
    }
    return this.bounds[this.bounds.length - 1] as number;
  }

  /** Cumulative counts per bound, the last one for +Inf (equal to `count`). */
  cumulative(): Array<{ le: number; count: number }> {
    let running = 0;
    return this.counts.map((c, i) => {
      running += c;
      return { le: i < this.bounds.length ? (this.bounds[i] as number) : Infinity, count: running };
    });
  }

  /** The `_bucket`, `_sum` and `_count` samples, each with the given labels. */
  samples(labels: Labels = {}): Sample[] {
    return [
      ...this.cumulative().map((b) => ({ suffix: "_bucket", labels: { ...labels, le: formatValue(b.le) }, value: b.count })),
      { suffix: "_sum", labels, value: this.total },
      { suffix: "_count", labels, value: this.n },
    ];
  }
}
