/**
 * Sets where a consumer group that is not running starts, on several topics in one step.
 *
 * kafkajs's `admin.setOffsets` does this one topic at a time: it joins the group with a paused
 * consumer, seeks, and leaves after its first fetch, which, with nothing to fetch, waits the
 * consumer's whole `maxWaitTimeInMs` (5 s by default). A group of six inputs took 30 s to place
 * that way. Here one member joins for all of the group's topics, with a short fetch wait, seeks
 * every partition (kafkajs commits a seek at once when auto-commit is on) and leaves after its
 * first fetch: one join, one commit per partition, well under a second.
 */
import type { Admin, Kafka } from "kafkajs";

export interface TopicOffsets {
  readonly topic: string;
  readonly partitions: ReadonlyArray<{ readonly partition: number; readonly offset: string }>;
}

/** How long the placing member's fetches wait when there is nothing to fetch. */
const FETCH_WAIT_MS = 50;
/** How long the commits may take to show, from the member's first fetch. */
const SHOW_WITHIN_MS = 30_000;
/** How long the placing member may take to join and make its first fetch. */
export const FIRST_FETCH_WITHIN_MS = 30_000;

/**
 * Commits `offsets` for `groupId`, which must have no running member (as `admin.setOffsets`
 * requires): the member leaves once the group's committed offsets read back as asked (each
 * broker's fetch commits the seeks of the partitions it leads), and a group with members is
 * refused, naming its state. A member that makes no first fetch within `firstFetchWithinMs` (a
 * broker that does not answer, a join that never ends) is given up on, naming the group and its
 * topics, and disconnected.
 */
export async function setGroupOffsets(kafka: Kafka, admin: Admin, groupId: string, offsets: readonly TopicOffsets[], options: { readonly firstFetchWithinMs?: number } = {}): Promise<void> {
  const wanted = offsets.filter((t) => t.partitions.length > 0);
  if (wanted.length === 0) return;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: FETCH_WAIT_MS, allowAutoTopicCreation: false });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: wanted.map((t) => t.topic), fromBeginning: true });
    const description = await consumer.describeGroup();
    if (!["Empty", "Dead"].includes(description.state)) throw new Error(`consumer group ${groupId} has running members (state ${description.state}): its starting offsets are set only while none runs`);
    const firstFetchMs = options.firstFetchWithinMs ?? FIRST_FETCH_WITHIN_MS;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new Error(`consumer group ${groupId}: the member placing its starting offsets on ${wanted.map((t) => t.topic).join(", ")} made no first fetch within ${firstFetchMs} ms (is the broker answering, and the group's coordinator?)`));
      }, firstFetchMs);
      const off = consumer.on(consumer.events.FETCH, () => {
        clearTimeout(timer);
        off();
        resolve();
      });
      consumer.run({ eachBatchAutoResolve: false, eachBatch: () => Promise.resolve() }).catch((err: unknown) => {
        clearTimeout(timer);
        off();
        reject(err instanceof Error ? err : new Error(String(err)));
      });
      // It reads nothing: the seeks below are committed as the member takes its partitions.
      consumer.pause(wanted.map((t) => ({ topic: t.topic })));
      for (const t of wanted) for (const p of t.partitions) consumer.seek({ topic: t.topic, partition: p.partition, offset: p.offset });
    });
    const until = Date.now() + SHOW_WITHIN_MS;
    for (;;) {
      const missing = await notYetCommitted(admin, groupId, wanted);
      if (missing.length === 0) return;
      if (Date.now() > until) throw new Error(`consumer group ${groupId}: the starting offsets of ${missing.join(", ")} were not committed within ${SHOW_WITHIN_MS} ms`);
      await new Promise((r) => setTimeout(r, FETCH_WAIT_MS));
    }
  } finally {
    await consumer.disconnect();
  }
}

/** The partitions (`topic/partition`) whose committed offset is not yet the one asked for. */
async function notYetCommitted(admin: Admin, groupId: string, wanted: readonly TopicOffsets[]): Promise<string[]> {
  const committed = await admin.fetchOffsets({ groupId, topics: wanted.map((t) => t.topic) });
  const at = new Map(committed.flatMap((t) => t.partitions.map((p) => [`${t.topic}/${p.partition}`, p.offset] as const)));
  return wanted.flatMap((t) => t.partitions.filter((p) => at.get(`${t.topic}/${p.partition}`) !== p.offset).map((p) => `${t.topic}/${p.partition}`));
}
