/**
 * The runner's hot paths give the same bytes as the plain code they replaced: derived IDs
 * (what consumers drop duplicates by), the per-topic grouping of a batch's outputs and the
 * partition each keyed output goes to.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import kafkajs, { type PartitionMetadata } from "kafkajs";
import { deriveId } from "../../processors/runner/ids.ts";
import { RememberingPartitioner } from "../../processors/runner/partitioner.ts";
import { topicMessages, type OutMessage } from "../../processors/runner/transport.ts";

describe("runner hot paths", () => {
  it("SYS-1 a derived ID is the first 22 characters of the base64url SHA-256 of its parts joined by NUL", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string({ unit: "grapheme" }), fc.string({ unit: "binary" }), fc.integer()), { minLength: 1, maxLength: 5 }), (parts) => {
        const expected = createHash("sha256").update(parts.join("\u0000")).digest("base64url").slice(0, 22);
        expect(deriveId(...parts)).toBe(expected);
      }),
      { numRuns: 300 },
    );
    expect(deriveId("loop-calls", "call-1")).toBe(createHash("sha256").update("loop-calls\u0000call-1").digest("base64url").slice(0, 22));
  });

  it("SYS-1 a batch's outputs go to kafkajs grouped by topic, each topic's in the order they were emitted", () => {
    const m = (topic: string, key: string): OutMessage => ({ topic, key, value: Buffer.from(key) });
    const out = [m("a", "1"), m("b", "2"), m("a", "3"), m("c", "4"), m("b", "5")];
    expect(topicMessages(out)).toEqual([
      { topic: "a", messages: [{ key: "1", value: Buffer.from("1") }, { key: "3", value: Buffer.from("3") }] },
      { topic: "b", messages: [{ key: "2", value: Buffer.from("2") }, { key: "5", value: Buffer.from("5") }] },
      { topic: "c", messages: [{ key: "4", value: Buffer.from("4") }] },
    ]);
    expect(topicMessages([])).toEqual([]);
  });

  it("SYS-1 a remembered key's partition is the Java client's partition, for every partition count, asked once or many times", () => {
    const remembering = RememberingPartitioner();
    const reference = kafkajs.Partitioners.DefaultPartitioner();
    const metadata = (n: number): PartitionMetadata[] => Array.from({ length: n }, (_, i) => ({ partitionErrorCode: 0, partitionId: i, leader: i % 3 === 0 ? -1 : 1, replicas: [1], isr: [1] }));
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: 3 }), (key, n, times) => {
        const args = { topic: "t", partitionMetadata: metadata(n), message: { key, value: null } };
        const expected = reference(args);
        for (let i = 0; i < times; i++) expect(remembering(args)).toBe(expected);
      }),
      { numRuns: 500 },
    );
    // The same key under another partition count is worked out again, not taken from memory.
    const twelve = remembering({ topic: "t", partitionMetadata: metadata(12), message: { key: "run-7", value: null } });
    expect(twelve).toBe(reference({ topic: "t", partitionMetadata: metadata(12), message: { key: "run-7", value: null } }));
    expect(remembering({ topic: "t", partitionMetadata: metadata(5), message: { key: "run-7", value: null } })).toBe(reference({ topic: "t", partitionMetadata: metadata(5), message: { key: "run-7", value: null } }));
    // A partition given with the message wins; a message without a key is spread as before.
    expect(remembering({ topic: "t", partitionMetadata: metadata(8), message: { key: "run-7", value: null, partition: 6 } })).toBe(6);
    const spread = new Set(Array.from({ length: 64 }, () => remembering({ topic: "u", partitionMetadata: metadata(8), message: { key: null, value: null } })));
    expect(spread.size).toBeGreaterThan(1);
  });
});
