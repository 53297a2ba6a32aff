import { describe, expect, it } from "vitest";
import kafkajs from "kafkajs";
import { ensureTopics } from "../../topology/create.ts";
import type { TopicSpec } from "../../topology/topics.ts";
import { kafka } from "../support/kafka.ts";
import { uid } from "../support/events.ts";

describe("topics created from the topology", () => {
  it("creates declared topics idempotently and sets changed configs on existing ones", async () => {
    const admin = kafka().admin();
    await admin.connect();
    const name = `test.${uid("topic")}`;
    const spec: TopicSpec = { name, schema: "Decision", key: "run_id", partitions: 2, retentionMs: 3_600_000, compacted: false, doc: "test" };
    try {
      const first = await ensureTopics(admin, [spec]);
      expect(first.created).toEqual([name]);
      const again = await ensureTopics(admin, [spec]);
      expect(again).toMatchObject({ created: [], existing: [name], reconfigured: [] });
      const changed = await ensureTopics(admin, [{ ...spec, retentionMs: 7_200_000, maxMessageBytes: 4 * 1024 * 1024, partitions: 3 }]);
      expect(changed.reconfigured).toEqual([name]);
      expect(changed.grown).toEqual([name]);
      const described = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name, configNames: ["retention.ms", "max.message.bytes"] }] });
      const values = Object.fromEntries(described.resources[0]?.configEntries.map((e) => [e.configName, e.configValue]) ?? []);
      expect(values).toEqual({ "retention.ms": "7200000", "max.message.bytes": String(4 * 1024 * 1024) });
    } finally {
      await admin.deleteTopics({ topics: [name] }).catch(() => undefined);
      await admin.disconnect();
    }
  });
});
