/**
 * Creates the declared topics idempotently: missing ones are created, existing ones are left
 * alone when they match, and a mismatch that Kafka cannot fix in place (fewer partitions than
 * declared can be raised; more cannot be lowered; replicas are not added) is reported, not
 * hidden. How many replicas a topic gets is decided from the brokers the cluster reports
 * (`replication.ts`).
 */
import kafkajs, { type Admin } from "kafkajs";

// A value of kafkajs's CommonJS module that Node's ESM loader does not offer as a named export.
const { ConfigResourceTypes } = kafkajs;
import { replicationFor, type Replication } from "./replication.ts";
import { topicConfigs, type TopicSpec } from "./topics.ts";

export interface EnsureReport {
  created: string[];
  existing: string[];
  /** Existing topics whose configs differed from the declared ones and were set to them. */
  reconfigured: string[];
  grown: string[];
  warnings: string[];
  /** The replication new topics were given, and existing ones were held to. */
  replication: Replication;
}

/** The replication for the cluster `admin` talks to, from the brokers it reports. */
export async function clusterReplication(admin: Admin): Promise<Replication> {
  const { brokers } = await admin.describeCluster();
  return replicationFor(brokers.length);
}

/** A topic's configs: its declared ones, and those of its replication when it has the replicas. */
function configsOf(spec: TopicSpec, replication: Replication, replicated: boolean): Record<string, string> {
  return { ...topicConfigs(spec), ...(replicated ? replication.configs : {}) };
}

/**
 * Creates the missing topics of `specs`, with the replication the cluster's brokers call for
 * (`replication`, when given, instead), and reconciles the existing ones.
 */
export async function ensureTopics(admin: Admin, specs: readonly TopicSpec[], replication?: Replication): Promise<EnsureReport> {
  const r = replication ?? (await clusterReplication(admin));
  const report: EnsureReport = { created: [], existing: [], reconfigured: [], grown: [], warnings: [], replication: r };
  const present = new Set(await admin.listTopics());
  const missing = specs.filter((s) => !present.has(s.name));
  if (missing.length > 0) {
    // Leaders are awaited below, not by kafkajs: its own wait can leave a metadata error
    // (UNKNOWN_TOPIC_OR_PARTITION on a loaded broker) as an unhandled rejection.
    await admin.createTopics({
      waitForLeaders: false,
      topics: missing.map((s) => ({
        topic: s.name,
        numPartitions: s.partitions,
        replicationFactor: r.factor,
        configEntries: Object.entries(configsOf(s, r, true)).map(([name, value]) => ({ name, value })),
      })),
    });
    await waitForLeaders(admin, missing.map((s) => s.name));
    report.created.push(...missing.map((s) => s.name));
  }
  const existing = specs.filter((s) => present.has(s.name));
  const reconcile: Array<{ spec: TopicSpec; configs: Record<string, string> }> = [];
  if (existing.length > 0) {
    const meta = await admin.fetchTopicMetadata({ topics: existing.map((s) => s.name) });
    for (const spec of existing) {
      const found = meta.topics.find((t) => t.name === spec.name);
      const count = found?.partitions.length ?? 0;
      const replicas = Math.min(...(found?.partitions ?? []).map((p) => p.replicas.length));
      // A topic made with fewer replicas keeps them: Kafka adds replicas only by a reassignment,
      // and a min.insync.replicas above its replicas would refuse every acks=all write.
      const replicated = replicas >= r.factor;
      if (!replicated && Number.isFinite(replicas)) report.warnings.push(`${spec.name} has ${replicas} replica${replicas === 1 ? "" : "s"} of some partition, fewer than the ${r.factor} of this cluster's ${r.brokers} brokers; Kafka does not add replicas by itself (kafka-reassign-partitions), so it is left as it is`);
      reconcile.push({ spec, configs: configsOf(spec, r, replicated) });
      if (count < spec.partitions) {
        await admin.createPartitions({ topicPartitions: [{ topic: spec.name, count: spec.partitions }] });
        report.grown.push(spec.name);
      } else {
        if (count > spec.partitions) report.warnings.push(`${spec.name} has ${count} partitions, more than the ${spec.partitions} declared; Kafka cannot lower them, so it is left as it is`);
        report.existing.push(spec.name);
      }
    }
  }
  if (reconcile.length > 0) report.reconfigured = await reconcileConfigs(admin, reconcile);
  return report;
}

/** Waits until every partition of the topics has a leader, retrying metadata errors, for at most `timeoutMs`. */
async function waitForLeaders(admin: Admin, topics: readonly string[], timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last = "";
  for (let attempt = 0; ; attempt++) {
    try {
      const meta = await admin.fetchTopicMetadata({ topics: [...topics] });
      const waiting = meta.topics.filter((t) => t.partitions.length === 0 || t.partitions.some((p) => p.leader < 0));
      if (waiting.length === 0) return;
      last = `no leader yet for ${waiting.map((t) => t.name).join(", ")}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > until) throw new Error(`the topics ${topics.join(", ")} were created but have no leaders after ${timeoutMs} ms: ${last}`);
    await new Promise((r) => setTimeout(r, Math.min(1_000, 50 * 2 ** attempt)));
  }
}

/** Sets the given configs on existing topics whose values differ (idempotent). */
async function reconcileConfigs(admin: Admin, topics: ReadonlyArray<{ spec: TopicSpec; configs: Record<string, string> }>): Promise<string[]> {
  const described = await admin.describeConfigs({
    includeSynonyms: false,
    resources: topics.map(({ spec, configs }) => ({ type: ConfigResourceTypes.TOPIC, name: spec.name, configNames: Object.keys(configs) })),
  });
  const changed = topics.filter(({ spec, configs }) => {
    const found = described.resources.find((r) => r.resourceName === spec.name);
    return Object.entries(configs).some(([name, value]) => found?.configEntries.find((e) => e.configName === name)?.configValue !== value);
  });
  if (changed.length > 0) {
    await admin.alterConfigs({
      validateOnly: false,
      resources: changed.map(({ spec, configs }) => ({
        type: ConfigResourceTypes.TOPIC,
        name: spec.name,
        configEntries: Object.entries(configs).map(([name, value]) => ({ name, value })),
      })),
    });
  }
  return changed.map(({ spec }) => spec.name);
}
