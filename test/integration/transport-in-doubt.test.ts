/**
 * A commit whose answer never comes (its coordinator lost with it) may have landed. On the real
 * broker, with the answer of one real commit thrown away: the transport reads the group's
 * offsets once the transaction is completed, sees it landed, and does not handle the batch
 * again, so its answer is written once. A commit that failed before landing is handled again,
 * and its answer is written once too.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Admin, Kafka, Producer, Transaction } from "kafkajs";
import { createLogger } from "../../processors/runner/log.ts";
import { KafkaTransport, type RawRecord } from "../../processors/runner/transport.ts";
import { kafka } from "../support/kafka.ts";
import { transportTopics, type TransportTopics } from "../support/transport-topics.ts";
import { uid } from "../support/events.ts";
import { until } from "../support/promises.ts";

const log = createLogger({ test: "transport-in-doubt" }, () => {});

/** What the next commit meets: its answer lost after it landed, or a failure before it is sent. */
interface Fault {
  next: "answer-lost" | "not-sent" | null;
}

/** The client, its transactional producers' next commit failing as `fault` says (the broker is the real one). */
function withFault(client: Kafka, fault: Fault): Kafka {
  const producer = client.producer.bind(client);
  return Object.assign(Object.create(client) as Kafka, {
    producer: (...args: Parameters<Kafka["producer"]>): Producer => {
      const p = producer(...args);
      const transaction = p.transaction.bind(p);
      p.transaction = async (): Promise<Transaction> => {
        const t = await transaction();
        const commit = t.commit.bind(t);
        t.commit = async () => {
          const now = fault.next;
          fault.next = null;
          if (now === "not-sent") throw new Error("the connection closed before the commit was sent");
          await commit();
          if (now === "answer-lost") throw new Error("the connection closed before the commit's answer came");
        };
        return t;
      };
      return p;
    },
  });
}

describe("SYS-1 a commit in doubt, on the real broker", () => {
  let topics: TransportTopics;
  let input: string;
  let output: string;
  let admin: Admin;
  let seen: string[];
  let send: (value: string) => Promise<unknown>;

  beforeAll(async () => {
    topics = await transportTopics("doubt");
    ({ input, output, admin, seen, send } = topics);
  });

  afterAll(async () => {
    await topics?.close();
  });

  it("writes the answer once whether the failed commit landed or not", async () => {
    const group = uid("doubt.group");
    const fault: Fault = { next: null };
    const attempts = new Map<string, number>();
    const transport = new KafkaTransport({ kafka: withFault(kafka(group), fault), log, groupId: group, topics: [input], consumers: 1 });
    await transport.start((records: RawRecord[]) => {
      const out = [];
      for (const r of records) {
        const v = r.value?.toString() ?? "";
        const n = (attempts.get(v) ?? 0) + 1;
        attempts.set(v, n);
        if (n === 1 && v === "answer-lost") fault.next = "answer-lost";
        if (n === 1 && v === "not-sent") fault.next = "not-sent";
        out.push({ topic: output, key: null, value: Buffer.from(`answer ${v}`) });
      }
      return Promise.resolve(out);
    });
    try {
      await send("answer-lost");
      await until("the answer to answer-lost", () => seen.includes("answer answer-lost"), 60_000);
      await send("not-sent");
      await until("the answer to not-sent", () => seen.includes("answer not-sent"), 60_000);
      await send("last");
      await until("the answer to last", () => seen.includes("answer last"), 30_000);
      expect(seen.filter((v) => v.startsWith("answer "))).toEqual(["answer answer-lost", "answer not-sent", "answer last"]);
      // The commit that landed is not handled again; the one that did not is.
      expect(attempts.get("answer-lost")).toBe(1);
      expect(attempts.get("not-sent")).toBe(2);
      expect(transport.inDoubt).toEqual({ committed: 1, notCommitted: 1, unknown: 0 });
      const [t] = await admin.fetchOffsets({ groupId: group, topics: [input] });
      expect(t?.partitions[0]?.offset).toBe("3");
    } finally {
      await transport.stop();
      await admin.deleteGroups([group]).catch(() => undefined);
    }
  }, 150_000);
});
