/**
 * What the Kafka cluster looks like to the pipeline: the brokers its metadata lists and those
 * that do not answer, and the pipeline's partitions that are under-replicated (fewer replicas in
 * sync than assigned), below their min.insync.replicas (acks=all writes refused) or without a
 * leader. `clusterHealth` builds the report from a snapshot (pure); `readCluster` takes the
 * snapshot (describeCluster, fetchTopicMetadata, the topics' min.insync.replicas and a TCP
 * connect to each broker known). `/health/ready` (through the monitor, every few seconds) and
 * `oz0 doctor` show it.
 */
import { connect } from "node:net";
import kafkajs, { type Admin } from "kafkajs";

const { ConfigResourceTypes } = kafkajs;

export interface SnapshotPartition {
  readonly partitionId: number;
  readonly leader: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
}

export interface ClusterSnapshot {
  /** The brokers the cluster's metadata lists now. */
  readonly brokers: ReadonlyArray<{ readonly nodeId: number; readonly address: string }>;
  /** Addresses of brokers seen before (by node ID), for those the metadata no longer lists. */
  readonly known?: ReadonlyMap<number, string>;
  /** Addresses that did not take a TCP connection. */
  readonly unreachable: readonly string[];
  readonly topics: ReadonlyArray<{ readonly name: string; readonly minIsr?: number; readonly partitions: readonly SnapshotPartition[] }>;
}

export interface ClusterHealth {
  /** Every broker known, by node ID: its address and whether it answers. */
  readonly brokers: ReadonlyArray<{ readonly node_id: number; readonly address: string | null; readonly up: boolean }>;
  /** Brokers that do not answer (node ID and address when known), one line each. */
  readonly unreachable: readonly string[];
  /** Partitions (`topic/partition`) with fewer replicas in sync than assigned. */
  readonly under_replicated: readonly string[];
  /** Of those, the ones with fewer in sync than their min.insync.replicas: writes with acks=all are refused. */
  readonly below_min_isr: readonly string[];
  /** Partitions without a leader: nothing can be read from or written to them. */
  readonly leaderless: readonly string[];
  /** Why the pipeline cannot work now (partitions without a leader or below their min.insync.replicas); empty when it can. */
  readonly blocking: readonly string[];
  /** Everything above worth saying, one line each; empty when all is well. */
  readonly problems: readonly string[];
}

const listed = (items: readonly string[], most = 5): string => `${items.slice(0, most).join(", ")}${items.length > most ? ` and ${items.length - most} more` : ""}`;

export function clusterHealth(s: ClusterSnapshot): ClusterHealth {
  const byId = new Map<number, string | null>();
  for (const [id, address] of s.known ?? []) byId.set(id, address);
  for (const b of s.brokers) byId.set(b.nodeId, b.address);
  const inMetadata = new Set(s.brokers.map((b) => b.nodeId));
  const replicaOf = new Map<number, number>();
  const under: string[] = [];
  const belowMin: string[] = [];
  const leaderless: string[] = [];
  for (const t of s.topics) {
    for (const p of t.partitions) {
      const at = `${t.name}/${p.partitionId}`;
      for (const r of p.replicas) {
        replicaOf.set(r, (replicaOf.get(r) ?? 0) + 1);
        if (!byId.has(r)) byId.set(r, null);
      }
      if (p.leader < 0) leaderless.push(at);
      if (p.isr.length < p.replicas.length) under.push(at);
      if (p.isr.length < Math.min(t.minIsr ?? 1, p.replicas.length)) belowMin.push(at);
    }
  }
  const unreachableAddresses = new Set(s.unreachable);
  const brokers = [...byId.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([id, address]) => ({ node_id: id, address, up: inMetadata.has(id) && !(address !== null && unreachableAddresses.has(address)) }));
  const unreachable = brokers
    .filter((b) => !b.up)
    .map((b) => `broker ${b.node_id}${b.address ? ` (${b.address})` : ""}: ${inMetadata.has(b.node_id) ? "does not take a connection" : `not in the cluster's metadata${replicaOf.has(b.node_id) ? `, a replica of ${replicaOf.get(b.node_id)} of the pipeline's partitions` : ""}`}`);
  // An address that answers no broker ID (a bootstrap address, say) is said as it is.
  const named = new Set(brokers.map((b) => b.address));
  for (const a of s.unreachable) if (!named.has(a)) unreachable.push(`${a}: does not take a connection`);
  const blocking = [
    ...(leaderless.length > 0 ? [`${leaderless.length} partitions without a leader: ${listed(leaderless)}`] : []),
    ...(belowMin.length > 0 ? [`${belowMin.length} partitions with fewer replicas in sync than their min.insync.replicas (writes refused): ${listed(belowMin)}`] : []),
  ];
  const problems = [
    ...unreachable.map((u) => `Kafka ${u}`),
    ...blocking,
    ...(under.length > 0 ? [`${under.length} partitions under-replicated: ${listed(under)}`] : []),
  ];
  return { brokers, unreachable, under_replicated: under, below_min_isr: belowMin, leaderless, blocking, problems };
}

/** Whether a TCP connection to `address` (host:port) opens within `timeoutMs`. */
export function answers(address: string, timeoutMs = 1_000): Promise<boolean> {
  const i = address.lastIndexOf(":");
  const host = address.slice(0, i);
  const port = Number(address.slice(i + 1));
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/**
 * Takes a snapshot of the cluster for `topics` (those that exist): the brokers listed, a TCP
 * connect to each broker listed or `known` and to each `bootstrap` address, each partition's leader, replicas and ISR, and each
 * topic's min.insync.replicas.
 */
export async function readCluster(admin: Admin, topics: readonly string[], known: ReadonlyMap<number, string> = new Map(), bootstrap: readonly string[] = []): Promise<ClusterSnapshot> {
  const cluster = await admin.describeCluster();
  const brokers = cluster.brokers.map((b) => ({ nodeId: b.nodeId, address: `${b.host}:${b.port}` }));
  const existing = new Set(await admin.listTopics());
  const wanted = topics.filter((t) => existing.has(t));
  const [meta, configs] = await Promise.all([
    wanted.length > 0 ? admin.fetchTopicMetadata({ topics: wanted }) : Promise.resolve({ topics: [] }),
    wanted.length > 0 ? admin.describeConfigs({ includeSynonyms: false, resources: wanted.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ["min.insync.replicas"] })) }) : Promise.resolve({ resources: [] }),
  ]);
  const minIsr = new Map(configs.resources.map((r) => [r.resourceName, Number(r.configEntries.find((e) => e.configName === "min.insync.replicas")?.configValue ?? 1)]));
  const addresses = new Set([...brokers.map((b) => b.address), ...known.values(), ...bootstrap]);
  const probed = await Promise.all([...addresses].map(async (a) => [a, await answers(a)] as const));
  return {
    brokers,
    known,
    unreachable: probed.filter(([, ok]) => !ok).map(([a]) => a),
    topics: meta.topics.map((t) => ({ name: t.name, minIsr: minIsr.get(t.name), partitions: t.partitions.map((p) => ({ partitionId: p.partitionId, leader: p.leader, replicas: p.replicas, isr: p.isr })) })),
  };
}
