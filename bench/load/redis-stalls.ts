/**
 * Redis's own stalls during a phase, from its latency monitor (`LATENCY HISTORY`): each second
 * in which an event took at least the monitor's threshold (an fsync of the append-only file, a
 * fork, a slow command), with the longest of that second. While Redis stalls, every decision
 * that reads or writes it waits, so the report sets the slow answers beside them. The stack
 * starts Redis with the monitor on (`stack/up.sh`, `docker-compose.yml`); a Redis with the
 * threshold at 0 watches nothing, and the report says so.
 */
import type { RedisClient } from "../../store/redis/client.ts";

/** One second in which a Redis event took at least the threshold: when (epoch seconds, as Redis keeps it) and the longest, in ms. */
export interface RedisStall {
  readonly event: string;
  readonly at: number;
  readonly ms: number;
}

/** What the latency monitor held when read: its threshold in ms (0: off), and every second it kept. */
export interface RedisStalls {
  readonly thresholdMs: number;
  readonly stalls: readonly RedisStall[];
}

/** How many seconds of each event Redis keeps (`LATENCY HISTORY`): a longer phase shows only its last ones. */
export const REDIS_LATENCY_KEPT = 160;

/** `[[at, ms], ...]` or `[[event, at, latest, max], ...]`: a reply of numbers and strings, as ioredis gives it. */
function rows(reply: unknown): unknown[][] {
  return Array.isArray(reply) ? reply.filter((r): r is unknown[] => Array.isArray(r)) : [];
}

/**
 * Reads the latency monitor: the threshold, the events it saw (`LATENCY LATEST`) and each one's
 * seconds (`LATENCY HISTORY`). Null when Redis does not answer these (a managed Redis may refuse
 * `CONFIG`), so a load run never fails for the want of them.
 */
export async function readRedisStalls(redis: RedisClient): Promise<RedisStalls | null> {
  // A cluster's nodes each keep their own: one node's would say too little, so none is read.
  if (redis.isCluster) return null;
  try {
    const config = (await redis.call("CONFIG", "GET", "latency-monitor-threshold")) as unknown[];
    const thresholdMs = Number(config[1]);
    if (!Number.isFinite(thresholdMs)) return null;
    const events = rows(await redis.call("LATENCY", "LATEST")).map((r) => String(r[0]));
    const stalls: RedisStall[] = [];
    for (const event of events) {
      for (const [at, ms] of rows(await redis.call("LATENCY", "HISTORY", event))) stalls.push({ event, at: Number(at), ms: Number(ms) });
    }
    return { thresholdMs, stalls };
  } catch {
    return null;
  }
}

/** The stalls whose second falls within [fromMs, toMs] (epoch ms), oldest first. */
export function stallsBetween(stalls: readonly RedisStall[], fromMs: number, toMs: number): RedisStall[] {
  const from = Math.floor(fromMs / 1000);
  const to = Math.floor(toMs / 1000);
  return stalls.filter((s) => s.at >= from && s.at <= to).sort((a, b) => a.at - b.at || a.event.localeCompare(b.event));
}

/** Per event: how many seconds stalled and the longest, the longest first. */
export function stallsByEvent(stalls: readonly RedisStall[]): Array<{ event: string; seconds: number; longestMs: number }> {
  const by = new Map<string, { seconds: number; longestMs: number }>();
  for (const s of stalls) {
    const e = by.get(s.event) ?? { seconds: 0, longestMs: 0 };
    e.seconds++;
    e.longestMs = Math.max(e.longestMs, s.ms);
    by.set(s.event, e);
  }
  return [...by].map(([event, e]) => ({ event, ...e })).sort((a, b) => b.longestMs - a.longestMs || a.event.localeCompare(b.event));
}

/**
 * How many answers slower than `slowMs` came in a second in which Redis noted a stall of at
 * least `stallMs`, or in the second after it (Redis notes a stall when it ends, and the answers
 * it held come after). `at` and `latencies` as the recorder keeps them (epoch ms, ms).
 */
export function slowBesideStalls(at: readonly number[], latencies: readonly number[], slowMs: number, stalls: readonly RedisStall[], stallMs: number): number {
  const stalled = new Set<number>();
  for (const s of stalls) {
    if (s.ms < stallMs) continue;
    stalled.add(s.at);
    stalled.add(s.at + 1);
  }
  let n = 0;
  for (let i = 0; i < at.length; i++) {
    const t = at[i];
    const l = latencies[i];
    if (t !== undefined && l !== undefined && l > slowMs && stalled.has(Math.floor(t / 1000))) n++;
  }
  return n;
}
