/**
 * The transport begins a fetch's transaction while its batches are decided, their offsets sent
 * early (transport.ts, `prepare`). On the real broker: an answer and its offset still commit
 * together, once; a batch that fails aborts the transaction begun for it, so its offset does not
 * move and the batch comes again; a batch decided too slowly commits in a transaction of its own.
 * With several batches in a fetch, the transaction holds every one's offset and is used only by
 * a commit of them all: one that fails, or is left past the commit interval, aborts it, and
 * every answer still commits once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Admin } from "kafkajs";
import { TransientError } from "../../lib/errors.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { KafkaTransport, type OutMessage, type RawRecord } from "../../processors/runner/transport.ts";
import { kafka } from "../support/kafka.ts";
import { transportTopics, type TransportTopics } from "../support/transport-topics.ts";
import { uid } from "../support/events.ts";
import { until } from "../support/promises.ts";

const log = createLogger({ test: "transport-early" }, () => {});

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A handler that counts each input's attempts, decides it with `decide`, and answers "answer <input>" on `output`. */
function answering(output: string, attempts: Map<string, number>, decide: (value: string, attempt: number) => Promise<void>): (records: RawRecord[]) => Promise<OutMessage[]> {
  return async (records) => {
    const out: OutMessage[] = [];
    for (const r of records) {
      const v = r.value?.toString() ?? "";
      const n = (attempts.get(v) ?? 0) + 1;
      attempts.set(v, n);
      await decide(v, n);
      out.push({ topic: output, key: null, value: Buffer.from(`answer ${v}`) });
    }
    return out;
  };
}

describe("SYS-1 a transaction begun while its batch is decided, on the real broker", () => {
  let topics: TransportTopics;
  let input: string;
  let output: string;
  let admin: Admin;
  let seen: string[];
  let send: (value: string) => Promise<unknown>;

  beforeAll(async () => {
    topics = await transportTopics("early");
    ({ input, output, admin, seen, send } = topics);
  });

  afterAll(async () => {
    await topics?.close();
  });

  async function committedOffset(group: string): Promise<string> {
    const [t] = await admin.fetchOffsets({ groupId: group, topics: [input] });
    return t?.partitions[0]?.offset ?? "-1";
  }

  it("answers a lone batch once, its offset committed with it, and aborts what it began for a batch that fails", async () => {
    const group = uid("early.group");
    const attempts = new Map<string, number>();
    const transport = new KafkaTransport({ kafka: kafka(group), log, groupId: group, topics: [input], consumers: 1 });
    await transport.start(
      answering(output, attempts, async (v, n) => {
        // Long enough for the transaction to begin and take the offset while it is decided.
        await pause(50);
        if (v.startsWith("fail-once") && n === 1) throw new TransientError("fails the first time");
        if (v.startsWith("slow") && n === 1) await pause(6_000);
      }),
    );
    try {
      await send("one");
      await until("the answer to one", () => seen.includes("answer one"), 30_000);
      expect(transport.early.used).toBeGreaterThanOrEqual(1);

      await send("fail-once");
      await until("the answer to fail-once", () => seen.includes("answer fail-once"), 30_000);
      expect(attempts.get("fail-once")).toBe(2);
      expect(transport.early.aborted).toBeGreaterThanOrEqual(1);

      // Decided past the time a transaction begun early is kept: committed all the same.
      await send("slow");
      await until("the answer to slow", () => seen.includes("answer slow"), 40_000);

      await send("two");
      await until("the answer to two", () => seen.includes("answer two"), 30_000);
      await until("the group's offset at 4", async () => (await committedOffset(group)) === "4", 10_000);
      expect(seen.filter((v) => v.startsWith("answer "))).toEqual(["answer one", "answer fail-once", "answer slow", "answer two"]);
    } finally {
      await transport.stop();
      await admin.deleteGroups([group]).catch(() => undefined);
    }
  }, 120_000);

  /**
   * Three partitions' inputs, there before the transport starts, come in its first fetch as
   * three batches; `decide` answers each. Gives the transport once every answer is seen and
   * the group's offsets are past each input.
   */
  async function threeBatches(name: string, values: readonly string[], decide: (value: string, attempt: number) => Promise<void>, commitIntervalMs?: number): Promise<{ transport: KafkaTransport; seen: string[]; attempts: Map<string, number> }> {
    const three = await transportTopics(name, values.length);
    const group = uid(`${name}.group`);
    const attempts = new Map<string, number>();
    for (const [p, v] of values.entries()) await three.sendTo(p, v);
    const transport = new KafkaTransport({ kafka: kafka(group), log, groupId: group, topics: [three.input], consumers: 1, commitIntervalMs });
    await transport.start(answering(three.output, attempts, decide));
    try {
      await until("every answer", () => values.every((v) => three.seen.includes(`answer ${v}`)), 40_000);
      await until("the group's offsets past every input", async () => {
        const [t] = await three.admin.fetchOffsets({ groupId: group, topics: [three.input] });
        return values.every((_, p) => t?.partitions.find((x) => x.partition === p)?.offset === "1");
      }, 10_000);
      return { transport, seen: [...three.seen], attempts };
    } finally {
      await transport.stop();
      await three.admin.deleteGroups([group]).catch(() => undefined);
      await three.close();
    }
  }

  it("commits a fetch of several batches in the transaction begun for them, each answer once", async () => {
    const { transport, seen } = await threeBatches("early3", ["a", "b", "c"], () => pause(50));
    expect(transport.early.used).toBeGreaterThanOrEqual(1);
    expect(transport.early.aborted).toBe(0);
    expect([...seen].sort()).toEqual(["answer a", "answer b", "answer c"]);
  }, 90_000);

  it("aborts the transaction begun for a fetch when one of its batches fails, and answers each once", async () => {
    const { transport, seen, attempts } = await threeBatches("early3fail", ["fail-once", "d", "e"], async (v, n) => {
      await pause(50);
      if (v === "fail-once" && n === 1) throw new TransientError("fails the first time");
    });
    expect(attempts.get("fail-once")).toBe(2);
    expect(transport.early.aborted).toBeGreaterThanOrEqual(1);
    expect([...seen].sort()).toEqual(["answer d", "answer e", "answer fail-once"]);
  }, 90_000);

  it("aborts the transaction begun for a fetch when a slow batch is left past the commit interval, and answers each once", async () => {
    const { transport, seen } = await threeBatches("early3slow", ["slow", "f", "g"], (v) => pause(v === "slow" ? 1_500 : 50), 200);
    expect(transport.early.aborted).toBeGreaterThanOrEqual(1);
    expect([...seen].sort()).toEqual(["answer f", "answer g", "answer slow"]);
  }, 90_000);
});
