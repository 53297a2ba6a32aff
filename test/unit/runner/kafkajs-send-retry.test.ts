import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { compiledAt, installed, unpatched } from "./kafkajs-text.ts";

const SEND_FILE = "src/producer/sendMessages.js";

type Produced = { nodeId: number; partitions: Array<{ topic: string; partition: number; values: string[] }> };
type Send = (o: { acks: number; timeout: number; topicMessages: Array<{ topic: string; messages: Array<{ value: string; partition: number }> }> }) => Promise<Array<{ topicName: string; partition: number }>>;

/**
 * A cluster of two brokers: partition 0 led by broker 1, partition 1 by broker 2 until broker 2
 * goes (its produce fails with a connection error, as a broker SIGKILLed does); the metadata
 * refreshed after says broker 1 leads partition 1 now.
 */
function clusterLosingBroker2() {
  const produced: Produced[] = [];
  const leaders = new Map([
    [0, 1],
    [1, 2],
  ]);
  const broker = (nodeId: number) => ({
    nodeId,
    produce: ({ topicData }: { topicData: Array<{ topic: string; partitions: Array<{ partition: number; messages: Array<{ value: string }> }> }> }) => {
      if (nodeId === 2) {
        leaders.set(1, 1);
        return Promise.reject(Object.assign(new Error("Connection error: connect ECONNREFUSED 127.0.0.1:19193"), { name: "KafkaJSConnectionError", retriable: true }));
      }
      produced.push({ nodeId, partitions: topicData.flatMap((t) => t.partitions.map((p) => ({ topic: t.topic, partition: p.partition, values: p.messages.map((m) => m.value) }))) });
      return Promise.resolve({ topics: topicData.map((t) => ({ topicName: t.topic, partitions: t.partitions.map((p) => ({ partition: p.partition, errorCode: 0, baseOffset: "0", logAppendTime: "-1", logStartOffset: "0" })) })) });
    },
  });
  const brokers = new Map([
    [1, broker(1)],
    [2, broker(2)],
  ]);
  const cluster = {
    refreshMetadataIfNecessary: () => Promise.resolve(),
    refreshMetadata: () => Promise.resolve(),
    addMultipleTargetTopics: () => Promise.resolve(),
    isConnected: () => true,
    removeBroker: () => undefined,
    targetTopics: new Set<string>(),
    findTopicPartitionMetadata: () => [...leaders.entries()].map(([partitionId, leader]) => ({ partitionId, leader })),
    findLeaderForPartitions: (_topic: string, partitions: Array<string | number>) => {
      const by: Record<number, number[]> = {};
      for (const p of partitions.map(Number)) (by[leaders.get(p)!] ??= []).push(p);
      return by;
    },
    findBroker: ({ nodeId }: { nodeId: number | string }) => Promise.resolve(brokers.get(Number(nodeId))),
  };
  return { cluster, produced };
}

/** kafkajs's sendMessages compiled from `text`, with the retrier trying up to five times. */
function sendOf(text: string, cluster: object): Send {
  const make = compiledAt<(o: object) => Send>(SEND_FILE, text);
  const logger = { debug() {}, info() {}, warn() {}, error() {}, namespace: () => logger };
  const eosManager = {
    isTransactional: () => false,
    acquireBrokerLock: () => Promise.resolve(),
    releaseBrokerLock: () => Promise.resolve(),
    getSequence: () => 0,
    updateSequence: () => undefined,
    getProducerId: () => -1,
    getProducerEpoch: () => 0,
    getTransactionalId: () => undefined,
  };
  const retrier = async <T>(fn: (bail: (e: Error) => never, retryCount: number, retryTime: number) => Promise<T>): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn((e) => {
          throw Object.assign(e, { bailed: true });
        }, attempt, 0);
      } catch (err) {
        if ((err as { bailed?: boolean }).bailed || attempt >= 4) throw err;
      }
    }
  };
  const partitioner = ({ message }: { message: { partition: number } }) => message.partition;
  return make({ logger, cluster, partitioner, eosManager, retrier });
}

const messages = [
  { value: "a", partition: 0 },
  { value: "b", partition: 1 },
  { value: "c", partition: 0 },
  { value: "d", partition: 1 },
];

describe("kafkajs's send retried after a broker's loss (patches/kafkajs+2.2.4.patch, applied after npm ci)", () => {
  it("SYS-1 the installed kafkajs holds the change", () => {
    expect(readFileSync(installed(SEND_FILE), "utf8")).toContain("responsePerPartition");
  });

  it("SYS-1 kafkajs's own text drops the messages of a partition whose leader moved to a broker that had answered, and resolves", async () => {
    const { cluster, produced } = clusterLosingBroker2();
    const answers = await sendOf(unpatched(SEND_FILE), cluster)({ acks: -1, timeout: 30_000, topicMessages: [{ topic: "drill.in", messages }] });
    // What the patch is for: partition 1's messages ("b", "d") were never written.
    expect(produced.flatMap((p) => p.partitions.flatMap((x) => x.values)).sort()).toEqual(["a", "c"]);
    expect(answers.map((a) => a.partition)).toEqual([0]);
  });

  it("SYS-1 with the change, the retry sends partition 1 to its new leader, broker 1, which had answered for partition 0: every message written once, every partition answered", async () => {
    const { cluster, produced } = clusterLosingBroker2();
    const answers = await sendOf(readFileSync(installed(SEND_FILE), "utf8"), cluster)({ acks: -1, timeout: 30_000, topicMessages: [{ topic: "drill.in", messages }] });
    expect(produced).toEqual([
      { nodeId: 1, partitions: [{ topic: "drill.in", partition: 0, values: ["a", "c"] }] },
      { nodeId: 1, partitions: [{ topic: "drill.in", partition: 1, values: ["b", "d"] }] },
    ]);
    expect(answers.map((a) => a.partition).sort()).toEqual([0, 1]);
  });
});
