/**
 * Creates the declared topics idempotently: missing ones are created, existing ones are left
 * alone when they match, and a mismatch that Kafka cannot fix in place (fewer partitions than
 * declared can be raised; more cannot be lowered) is reported, not hidden.
 */
import kafkajs, { type Admin } from "kafkajs";

// A value of kafkajs's CommonJS module that Node's ESM loader does not offer as a named export.
const { ConfigResourceTypes } = kafkajs;
import { topicConfigs, type TopicSpec } from "./topics.ts";

export interface EnsureReport {
  created: string[];
  existing: string[];
  /** Existing topics whose configs differed from the declared ones and were set to them. */
  reconfigured: string[];
  grown: string[];
  warnings: string[];
}

export async function ensureTopics(admin: Admin, specs: readonly TopicSpec[], replicationFactor = 1): Promise<EnsureReport> {
  const report: EnsureReport = { created: [], existing: [], reconfigured: [], grown: [], warnings: [] };
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
        replicationFactor,
        configEntries: Object.entries(topicConfigs(s)).map(([name, value]) => ({ name, value })),
      })),
    });
    await waitForLeaders(admin, missing.map((s) => s.name));
    report.created.push(...missing.map((s) => s.name));
  }
  const existing = specs.filter((s) => present.has(s.name));
  if (existing.length > 0) {
    const meta = await admin.fetchTopicMetadata({ topics: existing.map((s) => s.name) });
    for (const spec of existing) {
      const found = meta.topics.find((t) => t.name === spec.name);
      const count = found?.partitions.length ?? 0;
      if (count < spec.partitions) {
        await admin.createPartitions({ topicPartitions: [{ topic: spec.name, count: spec.partitions }] });
        report.grown.push(spec.name);
      } else {
        if (count > spec.partitions) report.warnings.push(`${spec.name} has ${count} partitions, more than the ${spec.partitions} declared; Kafka cannot lower them, so it is left as it is`);
        report.existing.push(spec.name);
      }
    }
  }
  if (existing.length > 0) report.reconfigured = await reconcileConfigs(admin, existing);
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

/** Sets the declared configs on existing topics whose values differ (idempotent). */
async function reconcileConfigs(admin: Admin, specs: readonly TopicSpec[]): Promise<string[]> {
  const described = await admin.describeConfigs({
    includeSynonyms: false,
    resources: specs.map((s) => ({ type: ConfigResourceTypes.TOPIC, name: s.name, configNames: Object.keys(topicConfigs(s)) })),
  });
  const changed = specs.filter((spec) => {
    const found = described.resources.find((r) => r.resourceName === spec.name);
    return Object.entries(topicConfigs(spec)).some(([name, value]) => found?.configEntries.find((e) => e.configName === name)?.configValue !== value);
  });
  if (changed.length > 0) {
    await admin.alterConfigs({
      validateOnly: false,
      resources: changed.map((s) => ({
        type: ConfigResourceTypes.TOPIC,
        name: s.name,
        configEntries: Object.entries(topicConfigs(s)).map(([name, value]) => ({ name, value })),
      })),
    });
  }
  return changed.map((s) => s.name);
}
