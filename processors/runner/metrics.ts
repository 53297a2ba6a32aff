/**
 * Prometheus metrics in the text exposition format (version 0.0.4), without a client
 * library: metric families as data, rendered at scrape time, and a fixed-bucket histogram.
 */

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

export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function formatLabels(labels: Labels | undefined): string {
  const entries = Object.entries(labels ?? {});
  if (entries.length === 0) return "";
  for (const [k] of entries) {
    if (!LABEL.test(k) || k.startsWith("__")) throw new Error(`metric label name ${JSON.stringify(k)} is not valid: use letters, digits and underscores, not starting with __`);
  }
  return `{${entries.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`;
}

/** Renders families as the exposition text; a family with no samples keeps its HELP and TYPE. */
export function renderMetrics(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  const seen = new Set<string>();
  for (const f of families) {
    if (!NAME.test(f.name)) throw new Error(`metric name ${JSON.stringify(f.name)} is not valid: use letters, digits, underscores and colons`);
    if (seen.has(f.name)) throw new Error(`metric ${f.name} is listed twice: merge its samples into one family`);
    seen.add(f.name);
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) lines.push(`${f.name}${s.suffix ?? ""}${formatLabels(s.labels)} ${formatValue(s.value)}`);
  }
  return `${lines.join("\n")}\n`;
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
