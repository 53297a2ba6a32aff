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
import type { Redis } from "ioredis";

/** Linux reports `/proc/stat` in USER_HZ, which is 100 on every architecture Node runs on. */
const USER_HZ = 100;

export interface CpuSample {
  readonly at: number;
  readonly machine: number | null;
  readonly process: number;
  readonly redis: number | null;
}

export interface CpuSpent {
  /** Seconds of CPU, all cores of the machine; null where it cannot be read. */
  readonly machine: number | null;
  /** Seconds of CPU of this process, all its threads. */
  readonly process: number;
  /** Seconds of CPU of the Redis server; null when it did not answer. */
  readonly redis: number | null;
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
  return { machine: spent((s) => s.machine), process: spent((s) => s.process) ?? 0, redis: spent((s) => s.redis) };
}

export class CpuMeter {
  private readonly samples: CpuSample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private pending: Promise<void> = Promise.resolve();

  private readonly redis: Redis | null;
  private readonly everyMs: number;

  constructor(redis: Redis | null, everyMs = 250) {
    this.redis = redis;
    this.everyMs = everyMs;
  }

  private async sample(): Promise<void> {
    let redis: number | null = null;
    if (this.redis) {
      try {
        redis = redisCpuSeconds(await this.redis.info("cpu"));
      } catch {
        redis = null;
      }
    }
    const { user, system } = process.cpuUsage();
    this.samples.push({ at: Date.now(), machine: machineBusySeconds(), process: (user + system) / 1e6, redis });
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
