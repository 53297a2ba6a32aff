import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { compiledAt, installed, unpatched } from "./kafkajs-text.ts";

const require = createRequire(import.meta.url);
const EOS_FILE = "src/producer/eosManager/index.js";
const INSTALLED = installed(EOS_FILE);
const { createErrorFromCode } = require("kafkajs/src/protocol/error.js") as { createErrorFromCode: (code: number) => Error & { type: string } };

const originalText = (): string => unpatched(EOS_FILE);

type Call = { api: string; args: Record<string, unknown> };
type Broker = Record<string, (args: Record<string, unknown>) => Promise<unknown>> & { nodeId: number };
type EosManager = {
  initProducerId(): Promise<void>;
  beginTransaction(): void;
  addPartitionsToTransaction(t: Array<{ topic: string; partitions: Array<{ partition: number }> }>): Promise<void>;
  sendOffsets(o: { consumerGroupId: string; topics: Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }> }): Promise<void>;
  commit(): Promise<void>;
};

/** A transaction manager made by kafkajs's factory compiled from `text`, over `cluster`. */
function managerOf(text: string, cluster: object): EosManager {
  const make = compiledAt<(o: object) => EosManager>(EOS_FILE, text);
  const logger = { debug() {}, info() {}, warn() {}, error() {}, namespace: () => logger };
  return make({ logger, cluster, transactional: true, transactionalId: "oz0.test.txn", transactionTimeout: 60_000 });
}

/**
 * A cluster of one broker that records what the transaction manager sends it; `fail` names
 * requests that fail once, with the error given.
 */
function recordingCluster(fail: Map<string, Error> = new Map()) {
  const calls: Call[] = [];
  const broker: Broker = { nodeId: 1 } as Broker;
  for (const api of ["initProducerId", "addPartitionsToTxn", "addOffsetsToTxn", "txnOffsetCommit", "endTxn"]) {
    broker[api] = (args) => {
      calls.push({ api, args });
      const err = fail.get(api);
      if (err) {
        fail.delete(api);
        return Promise.reject(err);
      }
      return Promise.resolve(api === "initProducerId" ? { producerId: 7, producerEpoch: 0 } : {});
    };
  }
  const cluster = {
    retry: { retries: 0, initialRetryTime: 1 },
    refreshMetadataIfNecessary: () => Promise.resolve(),
    findGroupCoordinator: (o: { groupId: string; coordinatorType: number }) => {
      calls.push({ api: "findCoordinator", args: o });
      return Promise.resolve(broker);
    },
    findBroker: ({ nodeId }: { nodeId: number }) => (nodeId === broker.nodeId ? Promise.resolve(broker) : Promise.reject(new Error(`no broker ${nodeId}`))),
  };
  return { cluster, calls };
}

/** Three transactions as the runner commits them: outputs' partitions, offsets, commit. */
async function threeTransactions(eos: EosManager): Promise<void> {
  await eos.initProducerId();
  for (let i = 0; i < 3; i++) {
    eos.beginTransaction();
    await eos.addPartitionsToTransaction([{ topic: "oz0.call-decisions", partitions: [{ partition: i }] }]);
    await eos.sendOffsets({ consumerGroupId: "oz0.pipeline", topics: [{ topic: "oz0.tool-calls.requested", partitions: [{ partition: 0, offset: String(i + 1) }] }] });
    await eos.commit();
  }
}

const finds = (calls: Call[]) => calls.filter((c) => c.api === "findCoordinator").length;
const requests = (calls: Call[]) => calls.filter((c) => c.api !== "findCoordinator");

describe("kafkajs's transactions find their coordinators once (patches/kafkajs+2.2.4.patch, applied after npm ci)", () => {
  it("SYS-1 the installed kafkajs holds the patch, and its producer loads it", () => {
    const installed = require("kafkajs/src/producer/eosManager/index.js") as { toString(): string };
    expect(installed.toString()).toContain("coordinatorOf(transactionalId");
  });

  it("SYS-1 the same requests, in the same order and with the same arguments, as kafkajs's own, with two coordinator lookups in place of sixteen", async () => {
    const original = recordingCluster();
    const patched = recordingCluster();
    await threeTransactions(managerOf(originalText(), original.cluster));
    await threeTransactions(managerOf(readFileSync(INSTALLED, "utf8"), patched.cluster));
    expect(requests(patched.calls)).toEqual(requests(original.calls));
    expect(requests(patched.calls).map((c) => c.api)).toEqual(["initProducerId", ...Array.from({ length: 3 }, () => ["addPartitionsToTxn", "addOffsetsToTxn", "txnOffsetCommit", "endTxn"]).flat()]);
    // kafkajs: one lookup for the producer ID, then four a transaction.
    expect(finds(original.calls)).toBe(1 + 3 * 4);
    // Patched: the transaction coordinator once, the group's coordinator once.
    expect(finds(patched.calls)).toBe(2);
  });

  it("SYS-1 a coordinator that moved (NOT_COORDINATOR) is looked up again by the next request; an error of the transaction's state (CONCURRENT_TRANSACTIONS) keeps it", async () => {
    const notCoordinator = createErrorFromCode(16);
    const concurrent = createErrorFromCode(51);
    expect([notCoordinator.type, concurrent.type]).toEqual(["NOT_COORDINATOR_FOR_GROUP", "CONCURRENT_TRANSACTIONS"]);

    const offsets = { consumerGroupId: "g", topics: [{ topic: "t", partitions: [{ partition: 0, offset: "1" }] }] };
    const moved = recordingCluster(new Map([["addOffsetsToTxn", notCoordinator]]));
    const eos = managerOf(readFileSync(INSTALLED, "utf8"), moved.cluster);
    await eos.initProducerId();
    eos.beginTransaction();
    await eos.addPartitionsToTransaction([{ topic: "t", partitions: [{ partition: 0 }] }]);
    await expect(eos.sendOffsets(offsets)).rejects.toThrow(/not the correct coordinator/);
    const before = finds(moved.calls);
    await eos.sendOffsets(offsets);
    await eos.commit();
    // Looked up again: the transaction's coordinator and the group's.
    expect(finds(moved.calls)).toBe(before + 2);

    const busy = recordingCluster(new Map([["addPartitionsToTxn", concurrent]]));
    const other = managerOf(readFileSync(INSTALLED, "utf8"), busy.cluster);
    await other.initProducerId();
    other.beginTransaction();
    await expect(other.addPartitionsToTransaction([{ topic: "t", partitions: [{ partition: 0 }] }])).rejects.toThrow(/pending transaction|concurrent/i);
    const kept = finds(busy.calls);
    await other.addPartitionsToTransaction([{ topic: "t", partitions: [{ partition: 0 }] }]);
    expect(finds(busy.calls)).toBe(kept);
  });

  it("SYS-1 a lost connection (an error outside the protocol) forgets the coordinators too", async () => {
    const lost = Object.assign(new Error("Connection closed"), { name: "KafkaJSConnectionClosedError" });
    const c = recordingCluster(new Map([["addOffsetsToTxn", lost]]));
    const eos = managerOf(readFileSync(INSTALLED, "utf8"), c.cluster);
    await eos.initProducerId();
    eos.beginTransaction();
    await eos.addPartitionsToTransaction([{ topic: "t", partitions: [{ partition: 0 }] }]);
    await expect(eos.sendOffsets({ consumerGroupId: "g", topics: [{ topic: "t", partitions: [{ partition: 0, offset: "1" }] }] })).rejects.toThrow(/Connection closed/);
    const before = finds(c.calls);
    await eos.sendOffsets({ consumerGroupId: "g", topics: [{ topic: "t", partitions: [{ partition: 0, offset: "1" }] }] });
    expect(finds(c.calls)).toBe(before + 2);
  });
});
