import { describe, expect, it } from "vitest";
import { FULL_REPLICATION, describeReplication, replicationFor } from "../../topology/replication.ts";

describe("topics' replication from the brokers the cluster reports", () => {
  it("three brokers or more: three replicas and min.insync.replicas 2, so a write acknowledged by all in sync survives one broker's loss", () => {
    for (const brokers of [3, 4, 5, 12]) {
      const r = replicationFor(brokers);
      expect(r.factor, `${brokers} brokers`).toBe(3);
      expect(r.configs, `${brokers} brokers`).toEqual({ "min.insync.replicas": "2" });
      expect(r.brokers).toBe(brokers);
    }
    expect(FULL_REPLICATION).toEqual({ factor: 3, minInsyncReplicas: 2 });
  });

  it("fewer brokers: one replica per broker and no min.insync.replicas of the topic's own (one node: one replica, as the local stack's)", () => {
    expect(replicationFor(1)).toEqual({ factor: 1, configs: {}, brokers: 1 });
    expect(replicationFor(2)).toEqual({ factor: 2, configs: {}, brokers: 2 });
  });

  it("a cluster that reports no broker, or a count that is not one, is refused, saying what it reported", () => {
    expect(() => replicationFor(0)).toThrow(/reports 0 brokers: topics need at least one/);
    expect(() => replicationFor(-1)).toThrow(/reports -1 brokers/);
    expect(() => replicationFor(2.5)).toThrow(/reports 2.5 brokers/);
    expect(() => replicationFor(Number.NaN)).toThrow(/reports NaN brokers/);
  });

  it("says what it decided, in words", () => {
    expect(describeReplication(replicationFor(3))).toBe("3 replicas, min.insync.replicas 2 (3 brokers)");
    expect(describeReplication(replicationFor(1))).toBe("1 replica (1 broker)");
    expect(describeReplication(replicationFor(2))).toBe("2 replicas (2 brokers)");
  });
});
