import { describe, expect, it } from "vitest";
import kafkajs from "kafkajs";
import { kafkaThreadFromEnv, kafkaTransports } from "../../../processors/runner/kafka-thread.ts";
import { createLogger } from "../../../processors/runner/log.ts";
import { packOutputs, packRecords, unpackOutputs, unpackRecords } from "../../../processors/runner/thread-batches.ts";
import { KafkaTransport, type OutMessage, type RawRecord } from "../../../processors/runner/transport.ts";

/** As postMessage hands it over: cloned, its buffer moved (the sender's is detached). */
function handedOver<T extends { bytes: ArrayBuffer }>(packed: T): T {
  const copy = structuredClone(packed, { transfer: [packed.bytes] });
  expect(packed.bytes.byteLength).toBe(0);
  return copy;
}

function record(offset: number, key: Buffer | null, value: Buffer | null): RawRecord {
  return { topic: "oz0.tool-calls", partition: 3, offset: String(offset), key, value, timestamp: String(1_700_000_000_000 + offset) };
}

describe("a batch handed between the Kafka thread and the processors' thread", () => {
  it("SYS-1 arrives with every record's offset, timestamp, key and value as they were, nulls and empty ones included", () => {
    const records = [
      record(10, Buffer.from("run-1"), Buffer.from([0, 0, 0, 0, 7, 1, 2, 3])),
      record(11, null, Buffer.from("é ✓ 🙂")),
      record(12, Buffer.from("run-2"), null),
      record(13, Buffer.alloc(0), Buffer.alloc(0)),
      // An offset past 2^53 stays exact: offsets cross as the decimal text Kafka gives.
      { ...record(14, Buffer.from("k"), Buffer.alloc(70_000, 0xab)), offset: "9007199254740993" },
    ];
    const back = unpackRecords(handedOver(packRecords(records)));
    expect(back).toHaveLength(records.length);
    back.forEach((r, i) => {
      const want = records[i] as RawRecord;
      expect(r.topic).toBe(want.topic);
      expect(r.partition).toBe(want.partition);
      expect(r.offset).toBe(want.offset);
      expect(r.timestamp).toBe(want.timestamp);
      expect(r.key === null ? null : Buffer.from(r.key)).toEqual(want.key);
      expect(r.value === null ? null : Buffer.from(r.value)).toEqual(want.value);
    });
  });

  it("SYS-1 refuses to pack records of two partitions, or none, into one batch", () => {
    const other: RawRecord = { ...record(1, null, Buffer.from("x")), partition: 4 };
    expect(() => packRecords([record(0, null, Buffer.from("x")), other])).toThrow(/mixes oz0.tool-calls\/3 with oz0.tool-calls\/4/);
    expect(() => packRecords([])).toThrow(/no records/);
  });

  it("SYS-1 hands the outputs back in order, each to its topic, with its key and value", () => {
    const out: OutMessage[] = [
      { topic: "oz0.call-decisions", key: "run-1", value: Buffer.from("allow") },
      { topic: "oz0.trace", key: "tree-1", value: Buffer.from("finding") },
      { topic: "oz0.call-decisions", key: null, value: null },
      { topic: "oz0.dead-letter", key: "oz0.tool-calls/3/12", value: Buffer.alloc(0) },
      { topic: "oz0.call-decisions", key: "run-2", value: Buffer.from("ünïcode") },
    ];
    const packed = packOutputs(out);
    expect(packed.topicNames).toEqual(["oz0.call-decisions", "oz0.trace", "oz0.dead-letter"]);
    const back = unpackOutputs(handedOver(packed));
    expect(back.map((m) => ({ ...m, value: m.value === null ? null : Buffer.from(m.value) }))).toEqual(out);
  });

  it("SYS-1 hands back no outputs as none", () => {
    expect(unpackOutputs(handedOver(packOutputs([])))).toEqual([]);
  });

  it("SYS-1 runs the Kafka client in a thread of its own unless OZ0_KAFKA_THREAD=off, refusing nonsense", () => {
    expect(kafkaThreadFromEnv({})).toBe(true);
    expect(kafkaThreadFromEnv({ OZ0_KAFKA_THREAD: "on" })).toBe(true);
    expect(kafkaThreadFromEnv({ OZ0_KAFKA_THREAD: " OFF " })).toBe(false);
    expect(kafkaThreadFromEnv({ OZ0_KAFKA_THREAD: "0" })).toBe(false);
    expect(() => kafkaThreadFromEnv({ OZ0_KAFKA_THREAD: "sometimes" })).toThrow(/OZ0_KAFKA_THREAD=sometimes is neither on nor off/);
  });

  it("SYS-1 with OZ0_KAFKA_THREAD=off gives plain Kafka transports on the process's own client, and no thread", async () => {
    const kafka = new kafkajs.Kafka({ clientId: "t", brokers: ["127.0.0.1:1"] });
    const endpoints = { kafkaBrokers: ["127.0.0.1:1"], registryUrl: "http://127.0.0.1:1", redisUrl: "redis://127.0.0.1:1", minioUrl: "http://127.0.0.1:1", minioAccessKey: "a", minioSecretKey: "b" };
    const transports = kafkaTransports({ clientId: "t", endpoints, kafka, log: createLogger({}, () => undefined), env: { OZ0_KAFKA_THREAD: "off" } });
    expect(transports.transport({ groupId: "g", topics: ["t"] })).toBeInstanceOf(KafkaTransport);
    await expect(transports.stop()).resolves.toBeUndefined();
  });
});
