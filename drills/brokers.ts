/**
 * The Kafka cluster's brokers as the broker drills see them (`broker-loss`, `rolling`): which
 * broker leads most of a lab's partitions, which coordinates a transactional ID (FindCoordinator),
 * whether a broker is back in the ISR of every partition it replicates, and stopping, killing and
 * starting one node of the local stack's Kafka cluster profile through the stack's own scripts
 * (`stack/down.sh --only kafka-cluster-<port>`, `stack/up.sh --only kafka-cluster`).
 */
import { execFile } from "node:child_process";
import { connect } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import kafkajs, { type Admin } from "kafkajs";
import { localStackEnv } from "../topology/stack.ts";
import { Oz0Error } from "../lib/errors.ts";

const { ConfigResourceTypes } = kafkajs;
const exec = promisify(execFile);
const STACK = fileURLToPath(new URL("../stack/", import.meta.url));

export interface ClusterBroker {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
}

/** The brokers the cluster reports, by node ID. */
export async function clusterBrokers(admin: Admin): Promise<ClusterBroker[]> {
  const { brokers } = await admin.describeCluster();
  return brokers.map((b) => ({ nodeId: b.nodeId, host: b.host, port: b.port })).sort((a, b) => a.nodeId - b.nodeId);
}

/** The ports of the local stack's Kafka cluster profile (OZ0_KAFKA_CLUSTER_BROKERS, or the stack's defaults). */
export function stackClusterPorts(env: NodeJS.ProcessEnv = process.env): number[] {
  const list = env.OZ0_KAFKA_CLUSTER_BROKERS ?? localStackEnv().OZ0_KAFKA_CLUSTER_BROKERS ?? "";
  return list
    .split(",")
    .map((b) => Number(b.trim().split(":").pop()))
    .filter((p) => Number.isInteger(p) && p > 0);
}

/**
 * Refuses, saying why, unless the drill's Kafka is the local stack's cluster of three brokers
 * (the drills stop and start its nodes by their ports).
 */
export async function requireStackCluster(admin: Admin): Promise<ClusterBroker[]> {
  const brokers = await clusterBrokers(admin);
  const ports = stackClusterPorts();
  if (brokers.length !== 3) {
    throw new BrokerDrillRefused(`the broker drills need the Kafka cluster of three brokers, but OZ0_KAFKA_BROKERS reaches ${brokers.length} (${brokers.map((b) => `${b.host}:${b.port}`).join(", ")}): start it (bash stack/up.sh --kafka-cluster) and run the drill with OZ0_STACK_KAFKA=cluster`);
  }
  const foreign = brokers.filter((b) => !ports.includes(b.port));
  if (foreign.length > 0) {
    throw new BrokerDrillRefused(`the broker drills stop and start the local stack's Kafka cluster nodes (ports ${ports.join(", ")}), but ${foreign.map((b) => `${b.host}:${b.port}`).join(", ")} is not one of them`);
  }
  return brokers;
}

/** The drill cannot run here (not three brokers, or not the stack's): `npm run drill` exits 2 on it. */
export class BrokerDrillRefused extends Oz0Error {
  override readonly name = "BrokerDrillRefused";
}

/**
 * The topics' metadata. A broker learns of a new topic from the controller a moment after its
 * creation and answers UNKNOWN_TOPIC_OR_PARTITION meanwhile, which is retriable: retried for
 * at most `withinMs`, as a Kafka client does.
 */
export function metadataOf(admin: Admin, topics: readonly string[], withinMs = 15_000): ReturnType<Admin["fetchTopicMetadata"]> {
  return whileNewTopic(() => admin.fetchTopicMetadata({ topics: [...topics] }), withinMs);
}

/** `ask`, tried again for at most `withinMs` while it fails with a retriable Kafka error (a new topic not yet known to the broker asked). */
export async function whileNewTopic<T>(ask: () => Promise<T>, withinMs = 15_000): Promise<T> {
  const until = Date.now() + withinMs;
  for (;;) {
    try {
      return await ask();
    } catch (err) {
      if (!(err instanceof Error && "retriable" in err && err.retriable === true) || Date.now() > until) throw err;
    }
    await sleep(200);
  }
}

/** The broker leading the most partitions of `topics` (the lowest node ID on a tie), with the count. */
export async function leaderOfMost(admin: Admin, topics: readonly string[]): Promise<{ nodeId: number; partitions: number; of: number }> {
  const meta = await metadataOf(admin, topics);
  const led = new Map<number, number>();
  let of = 0;
  for (const t of meta.topics) {
    for (const p of t.partitions) {
      of++;
      if (p.leader >= 0) led.set(p.leader, (led.get(p.leader) ?? 0) + 1);
    }
  }
  const best = [...led.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0];
  if (best === undefined) throw new Error(`no partition of ${topics.join(", ")} has a leader`);
  return { nodeId: best[0], partitions: best[1], of };
}

/** Kafka's FindCoordinator, version 1, key type 1 (a transactional ID), on a plaintext broker. */
export function findCoordinatorRequest(transactionalId: string, correlationId: number, clientId = "oz0-drill"): Buffer {
  const str = (s: string): Buffer => {
    const b = Buffer.from(s, "utf8");
    const len = Buffer.alloc(2);
    len.writeInt16BE(b.length);
    return Buffer.concat([len, b]);
  };
  const head = Buffer.alloc(8);
  head.writeInt16BE(10, 0); // FindCoordinator
  head.writeInt16BE(1, 2); // version 1
  head.writeInt32BE(correlationId, 4);
  const body = Buffer.concat([head, str(clientId), str(transactionalId), Buffer.from([1])]);
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  return Buffer.concat([size, body]);
}

export interface Coordinator {
  readonly errorCode: number;
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
}

/** Reads a FindCoordinator v1 response (without its 4-byte size). */
export function parseFindCoordinatorResponse(b: Buffer, correlationId: number): Coordinator {
  let at = 0;
  const int32 = (): number => ((at += 4), b.readInt32BE(at - 4));
  const int16 = (): number => ((at += 2), b.readInt16BE(at - 2));
  const str = (): string | null => {
    const len = int16();
    if (len < 0) return null;
    at += len;
    return b.toString("utf8", at - len, at);
  };
  const got = int32();
  if (got !== correlationId) throw new Error(`FindCoordinator: the answer's correlation ID is ${got}, not ${correlationId}`);
  int32(); // throttle time
  const errorCode = int16();
  str(); // error message
  const nodeId = int32();
  const host = str() ?? "";
  const port = int32();
  return { errorCode, nodeId, host, port };
}

function askCoordinator(host: string, port: number, transactionalId: string, timeoutMs = 5_000): Promise<Coordinator> {
  const correlationId = Math.floor(Math.random() * 1_000_000);
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    let got = Buffer.alloc(0);
    const done = (err: Error | null, c?: Coordinator): void => {
      socket.destroy();
      clearTimeout(timer);
      if (err) reject(err);
      else if (c) resolve(c);
    };
    const timer = setTimeout(() => done(new Error(`FindCoordinator: no answer from ${host}:${port} in ${timeoutMs} ms`)), timeoutMs);
    socket.once("error", (err) => done(err));
    socket.on("connect", () => socket.write(findCoordinatorRequest(transactionalId, correlationId)));
    socket.on("data", (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      if (got.length < 4 || got.length < 4 + got.readInt32BE(0)) return;
      try {
        done(null, parseFindCoordinatorResponse(got.subarray(4, 4 + got.readInt32BE(0)), correlationId));
      } catch (err) {
        done(err as Error);
      }
    });
  });
}

/**
 * The broker coordinating `transactionalId`'s transactions, as any broker answers FindCoordinator
 * (retried while the coordinator is loading or not yet known, error codes 14 and 15).
 */
export async function transactionCoordinator(brokers: readonly ClusterBroker[], transactionalId: string, withinMs = 30_000): Promise<ClusterBroker> {
  const until = Date.now() + withinMs;
  let last = "";
  for (;;) {
    for (const b of brokers) {
      try {
        const c = await askCoordinator(b.host, b.port, transactionalId);
        if (c.errorCode === 0) {
          const found = brokers.find((x) => x.nodeId === c.nodeId);
          if (found) return found;
          last = `node ${c.nodeId} is not among the brokers`;
        } else last = `error code ${c.errorCode}`;
      } catch (err) {
        last = err instanceof Error ? err.message : String(err);
      }
    }
    if (Date.now() > until) throw new Error(`no coordinator of the transactional ID ${transactionalId} within ${withinMs / 1000} s: ${last}`);
    await sleep(500);
  }
}

/** The stack's service of one node of the Kafka cluster profile. */
export function nodeService(b: ClusterBroker): string {
  return `kafka-cluster-${b.port}`;
}

/** SIGKILL (`kill`) or SIGTERM of one node of the stack's Kafka cluster, waiting until it is gone. */
export async function stopBroker(b: ClusterBroker, kill: boolean): Promise<void> {
  await exec("bash", [`${STACK}down.sh`, "--only", nodeService(b), ...(kill ? ["--kill"] : [])], { timeout: 120_000 });
}

/** Starts the cluster's nodes that are not running and waits until every node lists the three brokers. */
export async function startBrokers(): Promise<void> {
  await exec("bash", [`${STACK}up.sh`, "--only", "kafka-cluster"], { timeout: 300_000 });
}

/**
 * Partitions (`topic/partition`) that `nodeId` replicates but is not in sync for, or that have
 * no leader, among `topics` (every topic when empty).
 */
export async function outOfSync(admin: Admin, nodeId: number, topics: readonly string[] = []): Promise<string[]> {
  const meta = await admin.fetchTopicMetadata({ topics: [...topics] });
  return meta.topics.flatMap((t) => t.partitions.filter((p) => p.leader < 0 || (p.replicas.includes(nodeId) && !p.isr.includes(nodeId))).map((p) => `${t.name}/${p.partitionId}`));
}

/** Waits until `nodeId` is in the ISR of every partition of `topics` it replicates (every topic when empty), and each has a leader. */
export async function untilInSync(admin: Admin, nodeId: number, topics: readonly string[] = [], withinMs = 120_000): Promise<void> {
  const until = Date.now() + withinMs;
  let behind: string[] = [];
  for (;;) {
    behind = await outOfSync(admin, nodeId, topics).catch((err: unknown) => [`(metadata: ${err instanceof Error ? err.message : String(err)})`]);
    if (behind.length === 0) return;
    if (Date.now() > until) throw new Error(`broker ${nodeId} not back in sync within ${withinMs / 1000} s: ${behind.slice(0, 5).join(", ")}${behind.length > 5 ? ` and ${behind.length - 5} more` : ""}`);
    await sleep(500);
  }
}

/**
 * What keeps `topics` from being replicated as the cluster's topics are: fewer than three
 * replicas on a partition, or a min.insync.replicas other than 2. Empty when all are.
 */
export async function replicationProblems(admin: Admin, topics: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  const meta = await metadataOf(admin, topics);
  for (const t of meta.topics) {
    const short = t.partitions.filter((p) => new Set(p.replicas).size < 3).length;
    if (short > 0) problems.push(`${t.name}: ${short} of ${t.partitions.length} partitions with fewer than three replicas`);
  }
  const described = await whileNewTopic(() => admin.describeConfigs({ includeSynonyms: false, resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ["min.insync.replicas"] })) }));
  for (const r of described.resources) {
    const v = r.configEntries.find((e) => e.configName === "min.insync.replicas")?.configValue;
    if (v !== "2") problems.push(`${r.resourceName}: min.insync.replicas ${v ?? "unset"}`);
  }
  return problems;
}
