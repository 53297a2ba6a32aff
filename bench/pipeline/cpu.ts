/**
 * Where a subject's time goes, as CPU seconds over its throughput window: the whole machine
 * (`/proc/stat`, every core, every process: the broker, Redis and this process alike), this
 * process (the subject and the bench's reader thread), and the Redis server (`INFO cpu`).
 *
 * On two cores kept busy, throughput is the cores over the CPU one input costs, so the ratio of
 * two subjects' throughputs is the inverse ratio of their machine CPU per input. The report
 * shows it per input, so what a processor adds to a passthrough can be read off in microseconds.
 *
 * Sampled every `everyMs`; a window's CPU is read between samples by linear interpolation.
 * Where there is no `/proc/stat` (not Linux), the machine's column is left empty.
 */
import { readFileSync } from "node:fs";
import type { RedisClient } from "../../store/redis/client.ts";
import { masterNodes } from "../../store/redis/slots.ts";

/** Linux reports `/proc/stat` in USER_HZ, which is 100 on every architecture Node runs on. */
const USER_HZ = 100;

export interface CpuSample {
  readonly at: number;
  readonly machine: number | null;
  readonly process: number;
  readonly redis: number | null;
  /** The broker's process, where it runs on this machine and is known; null otherwise. */
  readonly broker?: number | null;
  /** Other processes (`CpuMeter`'s `others`), by name; null where one could not be read. */
  readonly others?: Readonly<Record<string, number | null>>;
}

export interface CpuSpent {
  /** Seconds of CPU, all cores of the machine; null where it cannot be read. */
  readonly machine: number | null;
  /** Seconds of CPU of this process, all its threads. */
  readonly process: number;
  /** Seconds of CPU of the Redis server; null when it did not answer. */
  readonly redis: number | null;
  /** Seconds of CPU of the broker's process; null where it is not on this machine or not known. */
  readonly broker: number | null;
  /** Seconds of CPU of each of the other processes sampled, by name; null where one could not be read. */
  readonly others: Readonly<Record<string, number | null>>;
}

/** A process's CPU seconds (user and system, all its threads) from `/proc/<pid>/stat`; null when it cannot be read. */
export function processCpuSeconds(pid: number, stat: (path: string) => string = (path) => readFileSync(path, "utf8")): number | null {
  let text: string;
  try {
    text = stat(`/proc/${pid}/stat`);
  } catch {
    return null;
  }
  // The command name, in parentheses, may hold spaces: the fields that follow are counted from its end.
  const fields = text.slice(text.lastIndexOf(")") + 2).trim().split(/\s+/);
  // After the name: state is field 3 of the whole line; utime and stime are 14 and 15.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
  return (utime + stime) / USER_HZ;
}

/**
 * A process of the local stack (`stack/`): the pid its start wrote for `service`, if that
 * process's command line still holds `marker`; null for a service elsewhere.
 */
export function localStackPid(service: string, marker: string, env: Record<string, string | undefined> = process.env): number | null {
  const home = env.OZ0_STACK_HOME || `${env.HOME ?? ""}/.cache/oz0-stack`;
  try {
    const pid = Number(readFileSync(`${home}/run/${service}.pid`, "utf8").trim());
    if (!Number.isInteger(pid) || pid <= 0) return null;
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker) ? pid : null;
  } catch {
    return null;
  }
}

/** The local stack's broker process: null for a broker elsewhere. */
export function localBrokerPid(env: Record<string, string | undefined> = process.env): number | null {
  return localStackPid("kafka", "kafka.Kafka", env);
}

/** A reading of a process's counter so far (its CPU seconds, but for `metricsReading` of another metric), read however it can be; null when it cannot. */
export type CpuReading = () => number | null | Promise<number | null>;

/** The CPU readings of the local stack's MinIO, Redis and schema registry, where they run here. */
export function localStackReadings(env: Record<string, string | undefined> = process.env): Record<string, CpuReading> {
  const readings: Record<string, CpuReading> = {};
  for (const [name, service, marker] of [
    ["MinIO", "minio", "minio"],
    ["Redis", "redis", "redis-server"],
    ["the schema registry", "registry", "java"],
  ] as const) {
    const pid = localStackPid(service, marker, env);
    if (pid !== null) readings[name] = () => processCpuSeconds(pid);
  }
  return readings;
}

/** The first sample of the series `name` (a name of letters, digits and '_') in a Prometheus text exposition; null when it is not there. */
export function exposedValue(text: string, name: string): number | null {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, "m").exec(text);
  if (m === null) return null;
  const v = Number(m[1]);
  return Number.isFinite(v) ? v : null;
}

/** `process_cpu_seconds_total` in a Prometheus text exposition; null when it is not there. */
export function exposedCpuSeconds(text: string): number | null {
  return exposedValue(text, "process_cpu_seconds_total");
}

/**
 * What a process exports at its metrics URL as `metric`: by default its CPU seconds
 * (`process_cpu_seconds_total`); null when it does not answer or has no such series.
 */
export function metricsReading(url: string, timeoutMs = 1_000, metric = "process_cpu_seconds_total"): CpuReading {
  return async () => {
    try {
      // Only the one family: a whole scrape costs the pipeline several ms of CPU, a sample a second.
      const res = await fetch(narrowed(url, metric), { signal: AbortSignal.timeout(timeoutMs) });
      return res.ok ? exposedValue(await res.text(), metric) : null;
    } catch {
      return null;
    }
  };
}

/** A `/metrics` URL asking for the family `metric` alone (`?name=`, `docs/operations.md`). */
export function narrowed(url: string, metric: string): string {
  const u = new URL(url);
  u.searchParams.append("name", metric);
  return u.toString();
}

/** Busy CPU seconds of every core since boot, from the first line of `/proc/stat`; null elsewhere. */
export function machineBusySeconds(stat: () => string = () => readFileSync("/proc/stat", "utf8")): number | null {
  let text: string;
  try {
    text = stat();
  } catch {
    return null;
  }
  const line = text.slice(0, text.indexOf("\n"));
  const fields = line.trim().split(/\s+/);
  if (fields[0] !== "cpu" || fields.length < 8) return null;
  // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
  const [user, nice, system, , , irq, softirq, steal] = fields.slice(1, 9).map(Number);
  const busy = [user, nice, system, irq, softirq, steal ?? 0];
  if (busy.some((n) => n === undefined || !Number.isFinite(n))) return null;
  return busy.reduce<number>((a, b) => a + (b ?? 0), 0) / USER_HZ;
}

/** The Redis server's CPU seconds (user and system, its own and its children's) from `INFO cpu`. */
export function redisCpuSeconds(info: string): number | null {
  let total = 0;
  let found = 0;
  for (const line of info.split(/\r?\n/)) {
    const m = /^used_cpu_(sys|user)(_children)?:([\d.]+)$/.exec(line.trim());
    if (!m) continue;
    total += Number(m[3]);
    found++;
  }
  return found === 0 ? null : total;
}

function interpolate(samples: readonly CpuSample[], at: number, pick: (s: CpuSample) => number | null): number | null {
  const first = samples[0];
  if (first === undefined) return null;
  let before = first;
  for (const s of samples) {
    if (s.at === at) return pick(s);
    if (s.at > at) {
      const a = pick(before);
      const b = pick(s);
      if (a === null || b === null) return null;
      if (s.at === before.at) return b;
      return a + ((b - a) * (at - before.at)) / (s.at - before.at);
    }
    before = s;
  }
  return pick(before);
}

/** CPU spent from `from` to `to` (epoch ms), read between the samples (in time order) by linear interpolation. */
export function spentBetween(samples: readonly CpuSample[], from: number, to: number): CpuSpent {
  const spent = (pick: (s: CpuSample) => number | null): number | null => {
    const a = interpolate(samples, from, pick);
    const b = interpolate(samples, to, pick);
    return a === null || b === null ? null : Math.max(0, b - a);
  };
  const names = new Set(samples.flatMap((s) => Object.keys(s.others ?? {})));
  const others = Object.fromEntries([...names].map((name) => [name, spent((s) => s.others?.[name] ?? null)]));
  return { machine: spent((s) => s.machine), process: spent((s) => s.process) ?? 0, redis: spent((s) => s.redis), broker: spent((s) => s.broker ?? null), others };
}

export class CpuMeter {
  private readonly samples: CpuSample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private pending: Promise<void> = Promise.resolve();

  private readonly redis: RedisClient | null;
  private readonly everyMs: number;
  private readonly brokerPid: number | null;
  private readonly others: Readonly<Record<string, CpuReading>>;

  /**
   * `brokerPid`: the broker's process on this machine, sampled too (`localBrokerPid`);
   * `others`: more processes to sample, by name (`localStackReadings`, `metricsReading`).
   */
  constructor(redis: RedisClient | null, everyMs = 250, brokerPid: number | null = null, others: Readonly<Record<string, CpuReading>> = {}) {
    this.redis = redis;
    this.everyMs = everyMs;
    this.brokerPid = brokerPid;
    this.others = others;
  }

  private async sample(): Promise<void> {
    let redis: number | null = null;
    if (this.redis) {
      try {
        // A cluster's CPU is its masters' together.
        const each = await Promise.all(masterNodes(this.redis).map(async (node) => redisCpuSeconds(await node.info("cpu"))));
        redis = each.some((x) => x === null) ? null : each.reduce<number>((a, b) => a + (b ?? 0), 0);
      } catch {
        redis = null;
      }
    }
    const { user, system } = process.cpuUsage();
    const broker = this.brokerPid === null ? null : processCpuSeconds(this.brokerPid);
    const others = Object.fromEntries(await Promise.all(Object.entries(this.others).map(async ([name, read]) => [name, await read()] as const)));
    this.samples.push({ at: Date.now(), machine: machineBusySeconds(), process: (user + system) / 1e6, redis, broker, others });
  }

  start(): Promise<void> {
    this.pending = this.sample();
    this.timer = setInterval(() => {
      this.pending = this.pending.then(() => this.sample());
    }, this.everyMs);
    return this.pending;
  }

  /** Takes a last sample and stops sampling; once stopped, does nothing. */
  async stop(): Promise<void> {
    if (this.timer === undefined) return;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.pending;
    await this.sample();
  }

  /** CPU spent from `from` to `to` (epoch ms), each within the sampled span. */
  between(from: number, to: number): CpuSpent {
    return spentBetween(this.samples, from, to);
  }
}
