/**
 * The transport begins a lone batch's transaction while the batch is decided, its offset sent
 * early (transport.ts, `prepare`). On the real broker: an answer and its offset still commit
 * together, once; a batch that fails aborts the transaction begun for it, so its offset does not
 * move and the batch comes again; a batch decided too slowly commits in a transaction of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Admin, Consumer, Producer } from "kafkajs";
import { TransientError } from "../../lib/errors.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { KafkaTransport, type RawRecord } from "../../processors/runner/transport.ts";
import { kafka } from "../support/kafka.ts";
import { uid } from "../support/events.ts";
import { until } from "../support/promises.ts";

const log = createLogger({ test: "transport-early" }, () => {});

describe("SYS-1 a transaction begun while its batch is decided, on the real broker", () => {
  const input = uid("test.early.in");
  const output = uid("test.early.out");
  let admin: Admin;
  let producer: Producer;
  let reader: Consumer;
  const seen: string[] = [];

  beforeAll(async () => {
    admin = kafka().admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: input, numPartitions: 1 }, { topic: output, numPartitions: 1 }], waitForLeaders: true });
    producer = kafka().producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    // Read committed: an answer is seen only once its transaction commits.
    reader = kafka().consumer({ groupId: uid("early.reader"), readUncommitted: false, maxWaitTimeInMs: 200 });
    await reader.connect();
    await reader.subscribe({ topics: [output], fromBeginning: true });
    await reader.run({
      eachMessage: ({ message }) => {
        seen.push(message.value?.toString() ?? "");
        return Promise.resolve();
      },
    });
  });

  afterAll(async () => {
    await reader?.disconnect();
    await producer?.disconnect();
    await admin?.deleteTopics({ topics: [input, output] }).catch(() => undefined);
    await admin?.disconnect();
  });

  async function committedOffset(group: string): Promise<string> {
    const [t] = await admin.fetchOffsets({ groupId: group, topics: [input] });
    return t?.partitions[0]?.offset ?? "-1";
  }

  it("answers a lone batch once, its offset committed with it, and aborts what it began for a batch that fails", async () => {
    const group = uid("early.group");
    const attempts = new Map<string, number>();
    const transport = new KafkaTransport({ kafka: kafka(group), log, groupId: group, topics: [input], consumers: 1 });
    await transport.start(async (records: RawRecord[]) => {
      const out = [];
      for (const r of records) {
        const v = r.value?.toString() ?? "";
        const n = (attempts.get(v) ?? 0) + 1;
        attempts.set(v, n);
        // Long enough for the transaction to begin and take the offset while it is decided.
        await new Promise((resolve) => setTimeout(resolve, 50));
        if (v.startsWith("fail-once") && n === 1) throw new TransientError("fails the first time");
        if (v.startsWith("slow") && n === 1) await new Promise((resolve) => setTimeout(resolve, 6_000));
        out.push({ topic: output, key: null, value: Buffer.from(`answer ${v}`) });
      }
      return out;
    });
    try {
      const send = (v: string) => producer.send({ topic: input, messages: [{ key: "k", value: Buffer.from(v) }] });
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
});
