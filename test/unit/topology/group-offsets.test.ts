import type { Admin, Kafka } from "kafkajs";
import { describe, expect, it } from "vitest";
import { setGroupOffsets } from "../../../topology/group-offsets.ts";
import { rejectionOf } from "../../support/promises.ts";

/**
 * A group's placing member whose first fetch never comes (a join that never ends): only the
 * calls setGroupOffsets makes before that wait, and what it did with the member.
 */
function stuckMember(): { kafka: Kafka; admin: Admin; seen: string[]; listeners: () => number } {
  const seen: string[] = [];
  const fetchListeners = new Set<() => void>();
  const consumer = {
    events: { FETCH: "consumer.fetch" },
    connect: () => Promise.resolve(void seen.push("connect")),
    subscribe: () => Promise.resolve(void seen.push("subscribe")),
    describeGroup: () => Promise.resolve({ state: "Empty" }),
    on: (_event: string, listener: () => void) => {
      fetchListeners.add(listener);
      return () => void fetchListeners.delete(listener);
    },
    // Joins and never fetches.
    run: () => new Promise(() => void seen.push("run")),
    pause: () => void seen.push("pause"),
    seek: () => void seen.push("seek"),
    disconnect: () => Promise.resolve(void seen.push("disconnect")),
  };
  return { kafka: { consumer: () => consumer } as unknown as Kafka, admin: {} as Admin, seen, listeners: () => fetchListeners.size };
}

describe("setting a group's starting offsets", () => {
  it("gives up on a member that makes no first fetch within its bound, naming the group and its topics, and disconnects it", async () => {
    const { kafka, admin, seen, listeners } = stuckMember();
    const started = Date.now();
    const err = await rejectionOf(
      setGroupOffsets(
        kafka,
        admin,
        "oz0.pipeline",
        [
          { topic: "oz0.tool-calls", partitions: [{ partition: 0, offset: "0" }] },
          { topic: "oz0.job-events", partitions: [{ partition: 0, offset: "5" }] },
        ],
        { firstFetchWithinMs: 100 },
      ),
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((err as Error).message).toBe("consumer group oz0.pipeline: the member placing its starting offsets on oz0.tool-calls, oz0.job-events made no first fetch within 100 ms (is the broker answering, and the group's coordinator?)");
    expect(seen).toEqual(["connect", "subscribe", "run", "pause", "seek", "seek", "disconnect"]);
    expect(listeners()).toBe(0);
  });
});
