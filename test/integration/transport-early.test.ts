/**
 * The transport begins a lone batch's transaction while the batch is decided, its offset sent
 * early (transport.ts, `prepare`). On the real broker: an answer and its offset still commit
 * together, once; a batch that fails aborts the transaction begun for it, so its offset does not
 * move and the batch comes again; a batch decided too slowly commits in a transaction of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Admin } from "kafkajs";
import { TransientError } from "../../lib/errors.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { KafkaTransport, type RawRecord } from "../../processors/runner/transport.ts";
import { kafka } from "../support/kafka.ts";
import { transportTopics, type TransportTopics } from "../support/transport-topics.ts";
import { uid } from "../support/events.ts";
import { until } from "../support/promises.ts";

const log = createLogger({ test: "transport-early" }, () => {});

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
