/**
 * The project's topics on a real Kafka cluster of three brokers (the local stack's Kafka cluster
 * profile, `bash stack/up.sh --kafka-cluster`, or the brokers OZ0_KAFKA_CLUSTER_BROKERS names):
 * ensureTopics gives each three replicas and min.insync.replicas 2, every partition led and fully
 * in sync, and a record the exactly-once producer writes in a transaction is read back
 * read-committed while an aborted one is not. Fails, never skips, when the cluster does not
 * answer with three brokers. Runs only with OZ0_TEST_KAFKA=cluster (vitest.config.ts leaves it
 * out otherwise; CI runs it in a step of its own, `.ci/run`).
 */
import { randomUUID } from "node:crypto";
import kafkajs, { Kafka, logLevel, type Admin } from "kafkajs";
import { afterAll, describe, expect, it } from "vitest";
import { localStackEnv } from "../../../topology/stack.ts";
import { EXACTLY_ONCE_PRODUCER, endpointsFromEnv, kafkaConfig } from "../../../processors/runner/endpoints.ts";
import { ensureTopics } from "../../../topology/create.ts";
import { TOPICS, type TopicSpec } from "../../../topology/topics.ts";

const { ConfigResourceTypes } = kafkajs;

const given = process.env.OZ0_KAFKA_CLUSTER_BROKERS;
const BROKERS = (given ?? localStackEnv().OZ0_KAFKA_CLUSTER_BROKERS ?? "").split(",").map((s) => s.trim()).filter(Boolean);
const WHERE = `${BROKERS.join(",")} (${given === undefined ? "the local stack's Kafka cluster, bash stack/up.sh --kafka-cluster" : "OZ0_KAFKA_CLUSTER_BROKERS"})`;

function clusterKafka(clientId: string, retries = 5): Kafka {
  const config = kafkaConfig(clientId, { ...endpointsFromEnv(), kafkaBrokers: BROKERS });
  return new Kafka({ ...config, logLevel: logLevel.ERROR, connectionTimeout: 3_000, retry: { retries, initialRetryTime: 200, maxRetryTime: 2_000 } });
}

let admin: Admin;
let reached: Promise<void> | undefined;

/**
 * Connects to the Kafka cluster and checks that it answers with three brokers, once; every test
 * awaits it, so each one fails saying why when the cluster is not there (none is skipped).
 */
function cluster(): Promise<void> {
  reached ??= (async () => {
    if (BROKERS.length === 0) throw new Error(`no Kafka cluster to test: OZ0_KAFKA_CLUSTER_BROKERS is empty and the local stack names none`);
    admin = clusterKafka(`oz0-test-cluster-${randomUUID().slice(0, 8)}`, 2).admin();
    let brokers: number;
    try {
      await admin.connect();
      brokers = (await admin.describeCluster()).brokers.length;
    } catch (err) {
      throw new Error(`the Kafka cluster at ${WHERE} does not answer: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (brokers !== 3) throw new Error(`the Kafka cluster at ${WHERE} reports ${brokers} broker(s), not 3`);
  })();
  return reached;
}

/**
 * The topics' metadata. A broker learns of a new topic from the controller a moment after it is
 * created, so one that does not know it yet answers UNKNOWN_TOPIC_OR_PARTITION, which a Kafka
 * client retries: so does this, for at most `timeoutMs`.
 */
async function metadataOf(topics: readonly string[], timeoutMs = 15_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await admin.fetchTopicMetadata({ topics: [...topics] });
    } catch (err) {
      if (!(err instanceof Error && "retriable" in err && err.retriable === true) || Date.now() > until) throw err;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Each partition of `topic`: its replicas, in-sync replicas and leader. */
async function partitionsOf(topic: string) {
  const meta = await metadataOf([topic]);
  return meta.topics[0]?.partitions ?? [];
}

/** Waits until every partition of the topics has all its replicas in sync (a new replica catches up in a moment). */
async function untilInSync(topics: readonly string[], timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const meta = await metadataOf(topics);
    const behind = meta.topics.flatMap((t) => t.partitions.filter((p) => p.isr.length < p.replicas.length || p.leader < 0).map((p) => `${t.name}/${p.partitionId}`));
    if (behind.length === 0) return;
    if (Date.now() > until) throw new Error(`partitions not fully in sync after ${timeoutMs} ms: ${behind.join(", ")}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The topic configs as the broker holds them: value and whether the topic sets it itself. */
async function configsOf(topics: readonly string[], names: string[]) {
  const described = await admin.describeConfigs({ includeSynonyms: false, resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: names })) });
  return new Map(described.resources.map((r) => [r.resourceName, new Map(r.configEntries.map((e) => [e.configName, { value: e.configValue, source: (e as { configSource?: number }).configSource }]))]));
}

/** Checks each topic: as many partitions as declared, each with 3 replicas on 3 brokers, a leader, all in sync; min.insync.replicas 2. */
async function expectReplicated(specs: readonly TopicSpec[], topicLevel: boolean): Promise<void> {
  await untilInSync(specs.map((s) => s.name));
  const configs = await configsOf(specs.map((s) => s.name), ["min.insync.replicas"]);
  for (const spec of specs) {
    const partitions = await partitionsOf(spec.name);
    expect(partitions.length, spec.name).toBe(spec.partitions);
    for (const p of partitions) {
      const at = `${spec.name}/${p.partitionId}`;
      expect(new Set(p.replicas).size, `${at} replicas`).toBe(3);
      expect(p.leader, `${at} leader`).toBeGreaterThanOrEqual(0);
      expect(p.replicas, `${at} leader among replicas`).toContain(p.leader);
      expect([...p.isr].sort(), `${at} in sync`).toEqual([...p.replicas].sort());
      expect(p.offlineReplicas ?? [], `${at} offline replicas`).toEqual([]);
    }
    const isr = configs.get(spec.name)?.get("min.insync.replicas");
    expect(isr?.value, `${spec.name} min.insync.replicas`).toBe("2");
    // the topic's own setting (config source 1, DYNAMIC_TOPIC_CONFIG), not only the brokers' default of 2
    if (topicLevel) expect(isr?.source, `${spec.name} min.insync.replicas set on the topic`).toBe(1);
  }
}

describe("Kafka cluster of three brokers: replicated topics and transactions", () => {
  afterAll(async () => {
    await admin?.disconnect().catch(() => undefined);
  });

  it("the cluster reports three brokers", async () => {
    await cluster();
    const { brokers } = await admin.describeCluster();
    expect(brokers.map((b) => b.nodeId).sort()).toEqual([1, 2, 3]);
  });

  it("ensureTopics gives the project's topics three replicas and min.insync.replicas 2, every partition led and fully in sync", async () => {
    await cluster();
    const report = await ensureTopics(admin, TOPICS);
    expect(report.replication).toEqual({ factor: 3, configs: { "min.insync.replicas": "2" }, brokers: 3 });
    // A topic made earlier with fewer replicas would be named here: none may be.
    expect(report.warnings).toEqual([]);
    await expectReplicated(TOPICS, false);
  });

  it("topics it creates on the cluster get three replicas and their own min.insync.replicas 2 (the project's topics under fresh names)", async () => {
    await cluster();
    const run = randomUUID().slice(0, 8);
    const fresh = TOPICS.map((t) => ({ ...t, name: `test.${run}.${t.name}` }));
    try {
      const report = await ensureTopics(admin, fresh);
      expect(report.created.sort()).toEqual(fresh.map((t) => t.name).sort());
      await expectReplicated(fresh, true);
      // again: nothing to create or change
      const again = await ensureTopics(admin, fresh);
      expect(again).toMatchObject({ created: [], reconfigured: [], grown: [], warnings: [] });
    } finally {
      await admin.deleteTopics({ topics: fresh.map((t) => t.name) }).catch(() => undefined);
    }
  });

  it("SYS-1 a record the exactly-once producer writes in a committed transaction is read back read-committed; one in an aborted transaction is not", async () => {
    await cluster();
    const topic = "oz0.jobs";
    const kafka = clusterKafka(`oz0-test-cluster-tx-${randomUUID().slice(0, 8)}`);
    const key = `cluster-${randomUUID()}`;
    const producer = kafka.producer({ ...EXACTLY_ONCE_PRODUCER, transactionalId: `oz0-test-cluster-${randomUUID()}`, allowAutoTopicCreation: false });
    const consumer = kafka.consumer({ groupId: `oz0-test-cluster-${randomUUID()}`, readUncommitted: false, maxWaitTimeInMs: 500 });
    await producer.connect();
    try {
      const aborted = await producer.transaction();
      await aborted.send({ topic, messages: [{ key, value: Buffer.from("aborted") }] });
      await aborted.abort();
      const committed = await producer.transaction();
      await committed.send({ topic, messages: [{ key, value: Buffer.from("committed") }] });
      await committed.commit();
      const offsets = await admin.fetchTopicOffsets(topic);
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      const seen: string[] = [];
      let resolveDone: () => void = () => undefined;
      const done = new Promise<void>((r) => (resolveDone = r));
      await consumer.run({
        eachMessage: ({ message }) => {
          if (message.key?.toString() === key) seen.push(message.value?.toString() ?? "");
          if (seen.includes("committed")) resolveDone();
          return Promise.resolve();
        },
      });
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the committed record was not read back within 30 s (read: ${JSON.stringify(seen)}; ends of ${topic}: ${JSON.stringify(offsets)})`)), 30_000);
      });
      try {
        await Promise.race([done, late]);
      } finally {
        clearTimeout(timer);
      }
      expect(seen).toEqual(["committed"]);
    } finally {
      await consumer.disconnect().catch(() => undefined);
      await producer.disconnect().catch(() => undefined);
    }
  });
});
