/**
 * The configuration table: every processor reads the compacted `oz0.config` topic from the
 * start into memory (agent definitions, plugin manifests, tenant settings, by kind and ID),
 * is ready once it has caught up with what was there when it started, and follows changes
 * after that. A null value (tombstone) removes a row.
 */
import { randomUUID } from "node:crypto";
import type { Consumer, Kafka } from "kafkajs";
import type { Serde } from "../../schemas/serde.ts";
import type { ConfigKind, ConfigRecord } from "../../schemas/types.ts";
import { EXACTLY_ONCE_PRODUCER } from "./endpoints.ts";
import type { Logger } from "./log.ts";

export const CONFIG_TOPIC = "oz0.config";

/** What a core reads of the configuration; the table and a plain map both provide it. */
export interface ConfigView {
  get(kind: ConfigKind, id: string): unknown;
}

export function configKey(kind: ConfigKind, id: string): string {
  return `${kind}/${id}`;
}

/**
 * Writes rows (and tombstones, by key) to `oz0.config`, acknowledged by every in-sync replica,
 * with an idempotent producer of its own: how `config publish`, `oz0 tenant` and the load's
 * agents reach the table.
 */
export async function publishConfig(kafka: Kafka, serde: Serde, records: readonly ConfigRecord[], tombstones: readonly string[] = []): Promise<void> {
  const producer = kafka.producer(EXACTLY_ONCE_PRODUCER);
  await producer.connect();
  try {
    await producer.send({
      topic: CONFIG_TOPIC,
      acks: -1,
      messages: [...records.map((r) => ({ key: configKey(r.kind, r.id), value: serde.encode("ConfigRecord", r) })), ...tombstones.map((key) => ({ key, value: null }))],
    });
  } finally {
    await producer.disconnect();
  }
}

/** A configuration view over a map, for tests and the in-memory driver. */
export function staticConfig(rows: Array<{ kind: ConfigKind; id: string; value: unknown }>): ConfigView & { set(kind: ConfigKind, id: string, value: unknown): void } {
  const map = new Map(rows.map((r) => [configKey(r.kind, r.id), r.value]));
  return {
    get: (kind, id) => map.get(configKey(kind, id)),
    set: (kind, id, value) => void map.set(configKey(kind, id), value),
  };
}

export class ConfigTable implements ConfigView {
  private readonly rows = new Map<string, unknown>();
  private readonly consumer: Consumer;
  private readonly serde: Serde;
  private readonly log: Logger;
  private readonly kafka: Kafka;
  private version = 0;

  private constructor(kafka: Kafka, serde: Serde, log: Logger) {
    this.kafka = kafka;
    this.serde = serde;
    this.log = log.child({ component: "config-table" });
    // A group of its own, never committed: every instance reads the whole table.
    this.consumer = kafka.consumer({ groupId: `oz0.config-reader.${randomUUID()}`, readUncommitted: false, allowAutoTopicCreation: false });
  }

  /** Starts reading and resolves once the table holds everything published before the call. */
  static async start(kafka: Kafka, serde: Serde, log: Logger, timeoutMs = 60_000): Promise<ConfigTable> {
    const table = new ConfigTable(kafka, serde, log);
    await table.run(timeoutMs);
    return table;
  }

  get(kind: ConfigKind, id: string): unknown {
    return this.rows.get(configKey(kind, id));
  }

  /** Every row, by key (`kind/id`). */
  entries(): ReadonlyMap<string, unknown> {
    return new Map(this.rows);
  }

  /** Changes applied so far; grows by one per record read. */
  get changes(): number {
    return this.version;
  }

  private async run(timeoutMs: number): Promise<void> {
    const admin = this.kafka.admin();
    await admin.connect();
    const ends = await admin.fetchTopicOffsets(CONFIG_TOPIC).finally(() => admin.disconnect());
    const pending = new Map(ends.filter((p) => BigInt(p.high) > BigInt(p.low)).map((p) => [p.partition, BigInt(p.high) - 1n]));
    let caughtUp: () => void = () => {};
    const ready = new Promise<void>((resolve) => {
      caughtUp = resolve;
      if (pending.size === 0) resolve();
    });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: CONFIG_TOPIC, fromBeginning: true });
    await this.consumer.run({
      eachBatch: async ({ batch }) => {
        const partition = batch.partition;
        for (const message of batch.messages) {
          const key = message.key?.toString("utf8");
          if (message.value === null) {
            if (key) this.rows.delete(key);
          } else {
            try {
              const rec = await this.serde.decode<ConfigRecord>("ConfigRecord", message.value);
              this.rows.set(configKey(rec.kind, rec.id), JSON.parse(rec.value));
            } catch (err) {
              this.log.error("config record unreadable; the row keeps its previous value", { partition, offset: message.offset, key, error: String(err) });
            }
          }
          this.version++;
        }
        // The batch's last offset counts records a consumer never sees (a transaction's commit
        // marker, an aborted write), so the table catches up even when the topic ends in one.
        const until = pending.get(partition);
        if (until !== undefined && BigInt(batch.lastOffset()) >= until) {
          pending.delete(partition);
          if (pending.size === 0) caughtUp();
        }
      },
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the config table did not catch up with ${CONFIG_TOPIC} within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([ready, timeout]);
    } finally {
      clearTimeout(timer);
    }
    this.log.info("config table ready", { rows: this.rows.size });
  }

  async stop(): Promise<void> {
    await this.consumer.disconnect();
  }
}
