/**
 * How many copies of each topic Kafka keeps, decided from the brokers the cluster reports: on
 * three brokers or more, three replicas with `min.insync.replicas=2`, so that a write acknowledged
 * by all in-sync replicas (what an idempotent or transactional producer asks for) survives the
 * loss of any one broker, and one broker can be down without stopping writes; on fewer, one
 * replica per broker and the broker's own `min.insync.replicas` (one node: one replica, as the
 * local stack's single node). Every topic the project creates goes through here
 * (`ensureTopics`, `topology/create.ts`).
 */

export interface Replication {
  /** Replicas of each partition. */
  readonly factor: number;
  /** Topic configs that go with the factor (none on fewer than three brokers). */
  readonly configs: Readonly<Record<string, string>>;
  /** The brokers the decision was made from. */
  readonly brokers: number;
}

/** The replication factor of a cluster with enough brokers, and the replicas a write must reach. */
export const FULL_REPLICATION = { factor: 3, minInsyncReplicas: 2 } as const;

/** The replication for a cluster of `brokers` brokers (pure). */
export function replicationFor(brokers: number): Replication {
  if (!Number.isInteger(brokers) || brokers < 1) {
    throw new Error(`the Kafka cluster reports ${brokers} brokers: topics need at least one`);
  }
  if (brokers >= FULL_REPLICATION.factor) {
    return { factor: FULL_REPLICATION.factor, configs: { "min.insync.replicas": String(FULL_REPLICATION.minInsyncReplicas) }, brokers };
  }
  return { factor: brokers, configs: {}, brokers };
}

/** Words for a report: "3 replicas, min.insync.replicas 2 (3 brokers)". */
export function describeReplication(r: Replication): string {
  const isr = r.configs["min.insync.replicas"];
  return `${r.factor} replica${r.factor === 1 ? "" : "s"}${isr ? `, min.insync.replicas ${isr}` : ""} (${r.brokers} broker${r.brokers === 1 ? "" : "s"})`;
}
