import { describe, expect, it } from "vitest";
import kafkajs from "kafkajs";
import { ensureTopics } from "../../topology/create.ts";
import { setGroupOffsets } from "../../topology/group-offsets.ts";
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

describe("where a new consumer group starts", () => {
  it("SYS-1 sets a group's starting offsets on several topics in one step, and refuses a group with a running member", async () => {
    const k = kafka();
    const admin = k.admin();
    await admin.connect();
    const producer = k.producer();
    await producer.connect();
    const names = [`test.${uid("offsets")}`, `test.${uid("offsets")}`];
    const groupId = `test.${uid("group")}`;
    const member = k.consumer({ groupId, maxWaitTimeInMs: 100 });
    try {
      await ensureTopics(admin, names.map((name): TopicSpec => ({ name, schema: "Decision", key: "run_id", partitions: 3, retentionMs: 3_600_000, compacted: false, doc: "test" })));
      for (const topic of names) await producer.send({ topic, messages: [0, 1, 2, 3, 4, 5].map((i) => ({ partition: i % 3, value: `m${i}` })) });
      const started = Date.now();
      await setGroupOffsets(k, admin, groupId, [
        { topic: names[0] as string, partitions: [0, 1, 2].map((partition) => ({ partition, offset: "2" })) },
        { topic: names[1] as string, partitions: [{ partition: 1, offset: "1" }] },
      ]);
      const tookMs = Date.now() - started;
      const committed = await admin.fetchOffsets({ groupId, topics: names });
      const byTopic = Object.fromEntries(committed.map((t) => [t.topic, Object.fromEntries(t.partitions.map((p) => [p.partition, p.offset]))]));
      expect(byTopic).toEqual({ [names[0] as string]: { 0: "2", 1: "2", 2: "2" }, [names[1] as string]: { 0: "-1", 1: "1", 2: "-1" } });
      // One join for both topics, without waiting out a fetch of kafkajs's default 5 s per topic.
      expect(tookMs).toBeLessThan(5_000);

      await member.connect();
      await member.subscribe({ topics: names, fromBeginning: true });
      let joined!: () => void;
      const groupJoined = new Promise<void>((r) => (joined = r));
      member.on(member.events.GROUP_JOIN, () => joined());
      await member.run({ eachMessage: () => Promise.resolve() });
      await groupJoined;
      await expect(setGroupOffsets(k, admin, groupId, [{ topic: names[0] as string, partitions: [{ partition: 0, offset: "0" }] }])).rejects.toThrow(/has running members \(state Stable\)/);
    } finally {
      await member.disconnect().catch(() => undefined);
      await producer.disconnect();
      await admin.deleteTopics({ topics: names }).catch(() => undefined);
      await admin.deleteGroups([groupId]).catch(() => undefined);
      await admin.disconnect();
    }
  });
});
