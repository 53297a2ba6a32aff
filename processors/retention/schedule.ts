/**
 * When the retention sweep runs and what it keeps (FILE-6, OFF-10; docs/files.md "Retention"),
 * read from the environment and checked before the pipeline starts:
 *
 * | variable | meaning | default |
 * | --- | --- | --- |
 * | `OZ0_RETENTION_EVERY` | how often the pipeline sweeps, a duration (`1h`, `30m`), or `off` | `1h` |
 * | `OZ0_RETENTION_FIRST` | how soon after the start the first sweep runs, a duration | `30s` (never later than the interval) |
 * | `OZ0_TRACE_RETENTION_DAYS` | days a trace part is kept after it was written; 0 keeps traces | 30 |
 *
 * Files are kept 90 days after a tree last stored them (`RETENTION_MS` in store/files.ts), a
 * rule of the product (FILE-6), not a setting.
 */
import { formatDuration, tryParseDuration } from "../../config/units.ts";
import { TRACE_RETENTION_DAYS } from "../../store/trace-store.ts";

type Env = Record<string, string | undefined>;

export const DEFAULT_EVERY_MS = 60 * 60 * 1000;
export const DEFAULT_FIRST_MS = 30 * 1000;
/** The shortest interval taken: a sweep lists every object of a tenant. */
export const MIN_EVERY_MS = 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface RetentionSchedule {
  /** Milliseconds between sweeps. */
  readonly everyMs: number;
  /** Milliseconds from the start to the first sweep. */
  readonly firstMs: number;
}

/** `OZ0_RETENTION_EVERY` and `OZ0_RETENTION_FIRST`: the schedule, or "off" (no sweep in this instance). */
export function retentionScheduleFromEnv(env: Env = process.env): RetentionSchedule | "off" {
  const every = parseEvery(env.OZ0_RETENTION_EVERY);
  if (every === "off") return "off";
  const rawFirst = env.OZ0_RETENTION_FIRST?.trim();
  let firstMs = Math.min(DEFAULT_FIRST_MS, every);
  if (rawFirst) {
    const parsed = tryParseDuration(rawFirst);
    if (!parsed.ok) throw new Error(`OZ0_RETENTION_FIRST=${rawFirst}: ${parsed.reason}`);
    firstMs = parsed.value;
  }
  return { everyMs: every, firstMs };
}

/** The interval: a duration of at least a second, or `off`; blank is the default hour. */
export function parseEvery(raw: string | undefined): number | "off" {
  const text = raw?.trim() ?? "";
  if (text === "") return DEFAULT_EVERY_MS;
  if (text.toLowerCase() === "off") return "off";
  const parsed = tryParseDuration(text);
  if (!parsed.ok) throw new Error(`OZ0_RETENTION_EVERY=${text}: ${parsed.reason}, or off to sweep nowhere in this instance`);
  if (parsed.value < MIN_EVERY_MS) throw new Error(`OZ0_RETENTION_EVERY=${text} is below ${formatDuration(MIN_EVERY_MS)}: a sweep lists every stored object of each tenant; give 1s or more, or off`);
  return parsed.value;
}

/** `OZ0_TRACE_RETENTION_DAYS`: days a trace part is kept after it was written (0: kept until erased). */
export function traceRetentionDaysFromEnv(env: Env = process.env): number {
  const raw = env.OZ0_TRACE_RETENTION_DAYS?.trim();
  if (raw === undefined || raw === "") return TRACE_RETENTION_DAYS;
  const days = Number(raw);
  if (!Number.isInteger(days) || days < 0 || days > 36_500) throw new Error(`OZ0_TRACE_RETENTION_DAYS=${raw} is not a whole number of days from 0 (keep traces) to 36500`);
  return days;
}

export function daysToMs(days: number): number {
  return days * DAY_MS;
}

/** How the schedule reads in a log line or the status: `every 1h, the first 30s after the start`. */
export function describeSchedule(s: RetentionSchedule | "off"): string {
  return s === "off" ? "off (OZ0_RETENTION_EVERY=off)" : `every ${formatDuration(s.everyMs)}, the first ${formatDuration(s.firstMs)} after the start`;
}
