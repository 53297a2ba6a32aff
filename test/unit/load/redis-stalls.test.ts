import { describe, expect, it } from "vitest";
import { readRedisStalls, slowBesideStalls, stallsBetween, stallsByEvent, type RedisStall } from "../../../bench/load/redis-stalls.ts";
import type { RedisClient } from "../../../store/redis/client.ts";

const stalls: RedisStall[] = [
  { event: "aof-fsync-always", at: 1_002, ms: 224 },
  { event: "command", at: 1_000, ms: 12 },
  { event: "aof-fsync-always", at: 999, ms: 40 },
  { event: "fork", at: 1_030, ms: 14 },
  { event: "aof-fsync-always", at: 1_010, ms: 17 },
  { event: "aof-fsync-always", at: 1_061, ms: 300 },
];

describe("Redis's stalls beside the load's slow answers", () => {
  it("SYS-6 keeps the stalls of a phase's seconds, oldest first, and sums them by event, the longest first", () => {
    const inPhase = stallsBetween(stalls, 1_000_000, 1_060_999);
    expect(inPhase.map((s) => [s.event, s.at])).toEqual([
      ["command", 1_000],
      ["aof-fsync-always", 1_002],
      ["aof-fsync-always", 1_010],
      ["fork", 1_030],
    ]);
    expect(stallsByEvent(inPhase)).toEqual([
      { event: "aof-fsync-always", seconds: 2, longestMs: 224 },
      { event: "fork", seconds: 1, longestMs: 14 },
      { event: "command", seconds: 1, longestMs: 12 },
    ]);
    expect(stallsByEvent([])).toEqual([]);
  });

  it("SYS-6 counts the slow answers that came in a second with a stall, or the second after it", () => {
    // Slow answers at 1,002.5 s (the stall's second), 1,003.9 s (the one after), 1,004.1 s (two after: not beside it),
    // 1,010.2 s (beside a stall under the threshold asked for); a fast answer in the stall's second.
    const at = [1_002_500, 1_003_900, 1_004_100, 1_010_200, 1_002_600];
    const lat = [150, 300, 120, 200, 20];
    expect(slowBesideStalls(at, lat, 100, stalls, 20)).toBe(2);
    expect(slowBesideStalls(at, lat, 100, stalls, 10)).toBe(3);
    expect(slowBesideStalls(at, lat, 100, [], 10)).toBe(0);
  });

  it("SYS-6 reads the latency monitor's threshold and every event's seconds; nothing from a cluster or a Redis that refuses", async () => {
    const replies: Record<string, unknown> = {
      "CONFIG GET latency-monitor-threshold": ["latency-monitor-threshold", "10"],
      "LATENCY LATEST": [
        ["aof-fsync-always", 1_796_688_716, 100, 317],
        ["fork", 1_796_688_689, 14, 14],
      ],
      "LATENCY HISTORY aof-fsync-always": [
        [1_796_688_700, 317],
        [1_796_688_716, 100],
      ],
      "LATENCY HISTORY fork": [[1_796_688_689, 14]],
    };
    const client = (isCluster: boolean, refuse = false) =>
      ({
        isCluster,
        call: (...args: string[]) => (refuse ? Promise.reject(new Error("ERR unknown command 'CONFIG'")) : Promise.resolve(replies[args.join(" ")])),
      }) as unknown as RedisClient;
    expect(await readRedisStalls(client(false))).toEqual({
      thresholdMs: 10,
      stalls: [
        { event: "aof-fsync-always", at: 1_796_688_700, ms: 317 },
        { event: "aof-fsync-always", at: 1_796_688_716, ms: 100 },
        { event: "fork", at: 1_796_688_689, ms: 14 },
      ],
    });
    expect(await readRedisStalls(client(true))).toBeNull();
    expect(await readRedisStalls(client(false, true))).toBeNull();
  });
});
