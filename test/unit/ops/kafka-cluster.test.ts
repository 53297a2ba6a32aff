import { describe, expect, it } from "vitest";
import { formatDoctor, healthy, type DoctorReport } from "../../../processors/ops/doctor.ts";
import { Health } from "../../../processors/ops/health.ts";
import { clusterHealth, type ClusterSnapshot, type SnapshotPartition } from "../../../processors/ops/kafka-cluster.ts";

const BROKERS = [
  { nodeId: 1, address: "127.0.0.1:19192" },
  { nodeId: 2, address: "127.0.0.1:19193" },
  { nodeId: 3, address: "127.0.0.1:19194" },
];

const p = (partitionId: number, leader: number, isr: number[], replicas = [1, 2, 3]): SnapshotPartition => ({ partitionId, leader, replicas, isr });

const allWell: ClusterSnapshot = {
  brokers: BROKERS,
  unreachable: [],
  topics: [
    { name: "oz0.tool-calls", minIsr: 2, partitions: [p(0, 1, [1, 2, 3]), p(1, 2, [2, 3, 1])] },
    { name: "oz0.decisions", minIsr: 2, partitions: [p(0, 3, [3, 1, 2])] },
  ],
};

describe("the Kafka cluster as the health and oz0 doctor report it (a metadata snapshot -> the report)", () => {
  it("SYS-1 three brokers answering and every partition led and fully in sync: nothing to say", () => {
    const h = clusterHealth(allWell);
    expect(h).toMatchObject({ unreachable: [], under_replicated: [], below_min_isr: [], leaderless: [], blocking: [], problems: [] });
    expect(h.brokers).toEqual(BROKERS.map((b) => ({ node_id: b.nodeId, address: b.address, up: true })));
  });

  it("SYS-1 a broker lost: named by the address it had, its partitions under-replicated but not blocking while two replicas stay in sync", () => {
    const h = clusterHealth({
      brokers: BROKERS.filter((b) => b.nodeId !== 2),
      known: new Map(BROKERS.map((b) => [b.nodeId, b.address])),
      unreachable: ["127.0.0.1:19193"],
      topics: [
        { name: "oz0.tool-calls", minIsr: 2, partitions: [p(0, 1, [1, 3]), p(1, 3, [3, 1])] },
        { name: "oz0.decisions", minIsr: 2, partitions: [p(0, 3, [3, 1, 2], [3, 1, 2])] },
      ],
    });
    expect(h.brokers).toEqual([
      { node_id: 1, address: "127.0.0.1:19192", up: true },
      { node_id: 2, address: "127.0.0.1:19193", up: false },
      { node_id: 3, address: "127.0.0.1:19194", up: true },
    ]);
    expect(h.unreachable).toEqual(["broker 2 (127.0.0.1:19193): not in the cluster's metadata, a replica of 3 of the pipeline's partitions"]);
    expect(h.under_replicated).toEqual(["oz0.tool-calls/0", "oz0.tool-calls/1"]);
    expect(h.below_min_isr).toEqual([]);
    expect(h.blocking).toEqual([]);
    expect(h.problems).toEqual(["Kafka broker 2 (127.0.0.1:19193): not in the cluster's metadata, a replica of 3 of the pipeline's partitions", "2 partitions under-replicated: oz0.tool-calls/0, oz0.tool-calls/1"]);
  });

  it("SYS-1 a partition without a leader, or with fewer in sync than its min.insync.replicas, blocks; a broker never seen is named by its ID; an address that takes no connection is said", () => {
    const h = clusterHealth({
      brokers: [BROKERS[0]!],
      unreachable: ["127.0.0.1:19193", "10.0.0.9:9092"],
      topics: [{ name: "oz0.tool-calls", minIsr: 2, partitions: [p(0, -1, []), p(1, 1, [1])] }],
    });
    expect(h.leaderless).toEqual(["oz0.tool-calls/0"]);
    expect(h.below_min_isr).toEqual(["oz0.tool-calls/0", "oz0.tool-calls/1"]);
    expect(h.blocking).toEqual([
      "1 partitions without a leader: oz0.tool-calls/0",
      "2 partitions with fewer replicas in sync than their min.insync.replicas (writes refused): oz0.tool-calls/0, oz0.tool-calls/1",
    ]);
    expect(h.unreachable).toEqual([
      "broker 2: not in the cluster's metadata, a replica of 2 of the pipeline's partitions",
      "broker 3: not in the cluster's metadata, a replica of 2 of the pipeline's partitions",
      "127.0.0.1:19193: does not take a connection",
      "10.0.0.9:9092: does not take a connection",
    ]);
  });

  it("SYS-1 a broker listed in the metadata that takes no connection is down; a single node (one replica, min.insync.replicas 1) in sync is well", () => {
    expect(clusterHealth({ ...allWell, unreachable: ["127.0.0.1:19194"] }).unreachable).toEqual(["broker 3 (127.0.0.1:19194): does not take a connection"]);
    const single = clusterHealth({ brokers: [{ nodeId: 1, address: "127.0.0.1:19092" }], unreachable: [], topics: [{ name: "oz0.jobs", minIsr: 1, partitions: [p(0, 1, [1], [1])] }] });
    expect(single.problems).toEqual([]);
  });

  it("SYS-1 /health/ready: not ready while a partition is without a leader, ready again once it has one; a broker down is shown, not failed on; a stale reading blocks nothing", () => {
    let t = 1_000_000;
    const h = new Health({ now: () => t, staleAfterMs: 10_000 });
    h.starting("loop-calls", "oz0.loop-calls");
    h.started("loop-calls");
    h.running();
    h.groupSeen("loop-calls", { state: "Stable", members: 1 });
    expect(h.ready().ready).toBe(true);
    expect(h.ready().kafka).toBeUndefined();

    h.clusterSeen(clusterHealth({ brokers: BROKERS.slice(0, 2), known: new Map([[3, "127.0.0.1:19194"]]), unreachable: ["127.0.0.1:19194"], topics: [{ name: "oz0.tool-calls", minIsr: 2, partitions: [p(0, 1, [1, 2])] }] }));
    const degraded = h.ready();
    expect(degraded.ready).toBe(true);
    expect(degraded.kafka).toMatchObject({ unreachable: ["broker 3 (127.0.0.1:19194): not in the cluster's metadata, a replica of 1 of the pipeline's partitions"], under_replicated: ["oz0.tool-calls/0"], seen_s_ago: 0 });

    h.clusterSeen(clusterHealth({ brokers: BROKERS.slice(0, 1), unreachable: [], topics: [{ name: "oz0.tool-calls", minIsr: 2, partitions: [p(0, -1, [1])] }] }));
    expect(h.ready()).toMatchObject({ ready: false, reasons: ["Kafka: 1 partitions without a leader: oz0.tool-calls/0", "Kafka: 1 partitions with fewer replicas in sync than their min.insync.replicas (writes refused): oz0.tool-calls/0"] });
    t += 11_000;
    h.groupSeen("loop-calls", { state: "Stable", members: 1 });
    expect(h.ready()).toMatchObject({ ready: true, kafka: { seen_s_ago: 11 } });
    h.clusterSeen(clusterHealth(allWell));
    expect(h.ready()).toMatchObject({ ready: true, reasons: [], kafka: { problems: [] } });
  });

  it("SYS-1 oz0 doctor prints the brokers and the partitions in trouble, and is unhealthy while there are any", () => {
    const base: DoctorReport = { at: 3_600_000, since: 0, services: [{ name: "kafka", ok: true, ms: 3 }], processors: [], dead_letters: [], looping: null };
    const well = { ...base, kafka_cluster: clusterHealth(allWell) };
    expect(healthy(well)).toBe(true);
    expect(formatDoctor(well)).toContain("kafka: 3 of 3 brokers answer; every partition of the pipeline led and fully in sync");
    const lost = { ...base, kafka_cluster: clusterHealth({ brokers: BROKERS.slice(1), known: new Map([[1, "127.0.0.1:19192"]]), unreachable: ["127.0.0.1:19192"], topics: [{ name: "oz0.decisions", minIsr: 2, partitions: [p(0, 2, [2, 3])] }] }) };
    expect(healthy(lost)).toBe(false);
    const text = formatDoctor(lost);
    expect(text).toContain("kafka: 2 of 3 brokers answer; 0 partitions without a leader, 1 under-replicated (0 below min.insync.replicas)");
    expect(text).toContain("  Kafka broker 1 (127.0.0.1:19192): not in the cluster's metadata, a replica of 1 of the pipeline's partitions");
    expect(text).toContain("  1 partitions under-replicated: oz0.decisions/0");
    const unread = { ...base, kafka_cluster: null, kafka_cluster_error: "Connection error: connect ECONNREFUSED 127.0.0.1:19194", dead_letters_error: "Connection error: connect ECONNREFUSED 127.0.0.1:19194" };
    expect(healthy(unread)).toBe(false);
    expect(formatDoctor(unread)).toContain("kafka: the brokers and partitions could not be read (Connection error: connect ECONNREFUSED 127.0.0.1:19194): a broker may be going away; ask again");
    expect(formatDoctor(unread)).toContain("(1 h): not read (Connection error: connect ECONNREFUSED 127.0.0.1:19194)");
  });
});
