import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Producer } from "kafkajs";
import type { Serde } from "../../schemas/serde.ts";
import type { Decision, DeadLetter, ToolCall } from "../../schemas/types.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { startProcessor, type RunningProcessor } from "../../processors/runner/runner.ts";
import { KafkaThread } from "../../processors/runner/kafka-thread.ts";
import { KafkaTransport, type Transport } from "../../processors/runner/transport.ts";
import { Keys } from "../../store/redis/keys.ts";
import { collect, endpoints, groupAtEnd, kafka, serde, TEST_FETCH_WAIT_MS } from "../support/kafka.ts";
import { redisTally, tallyProcessor } from "../support/tally-processor.ts";
import { toolCall, uid } from "../support/events.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";

describe.each([
  { where: "in one thread", threaded: false },
  { where: "with the Kafka client in a thread of its own (kafka-thread.ts)", threaded: true },
])("processor runner on the real broker, registry and Redis, $where", ({ threaded }) => {
  let s: Serde;
  let redis: RedisClient;
  let producer: Producer;
  let thread: KafkaThread | undefined;
  const keys = new Keys(uid("t").replace(/-/g, "_"));
  const group = uid("tally");
  const log = createLogger({ test: "runner" }, () => {});

  async function start(): Promise<RunningProcessor> {
    const options = { groupId: group, topics: ["oz0.tool-calls"], maxWaitMs: TEST_FETCH_WAIT_MS };
    let transport: Transport;
    if (threaded) {
      thread ??= new KafkaThread(group, endpoints(), log);
      transport = thread.transport(options);
    } else {
      transport = new KafkaTransport({ kafka: kafka(group), log, ...options });
    }
    return startProcessor(tallyProcessor, redisTally(redis, keys), { transport, serde: s, log });
  }

  beforeAll(async () => {
    s = await serde();
    redis = redisClient(endpoints());
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    // The group starts where the topic ends now, so it sees this test's inputs and no others'.
    await groupAtEnd(group, "oz0.tool-calls");
  });

  afterAll(async () => {
    await thread?.stop();
    await producer?.disconnect();
    redis?.disconnect();
  });

  it("SYS-1 decides every valid call once, dead-letters bad input with its reason, and keeps counts across a restart", async () => {
    const run = uid("run");
    const send = (calls: ToolCall[]) =>
      producer.send({ topic: "oz0.tool-calls", messages: calls.map((c) => ({ key: run, value: s.encode("ToolCall", c) })) });
    const marker = uid("garbage");
    const badArgs = toolCall({ run_id: run, arguments: `{not json ${marker}` });

    await send([toolCall({ run_id: run }), toolCall({ run_id: run }), badArgs, toolCall({ run_id: run })]);
    await producer.send({ topic: "oz0.tool-calls", messages: [{ key: run, value: Buffer.from(`random bytes ${marker}`) }] });
    await send([toolCall({ run_id: run }), toolCall({ run_id: run })]);

    const first = await start();
    const decided = await collect<Decision>("oz0.call-decisions", "Decision", s, (d) => d.run_id === run && d.processor === "tally", 5, 60_000);
    expect(decided.map((d) => d.numbers.calls)).toEqual([1, 2, 3, 4, 5]);
    expect(decided.every((d) => d.verdict === "allow" && d.processor === "tally")).toBe(true);

    const dead = await collect<DeadLetter>("oz0.dead-letter", "DeadLetter", s, (d) => d.processor === "tally" && Boolean(d.value?.includes(marker)), 2, 30_000);
    const byError = new Map(dead.map((d) => [d.error, d]));
    expect(byError.get("undecodable")?.reason).toMatch(/magic byte/);
    expect(byError.get("undecodable")?.value?.toString()).toBe(`random bytes ${marker}`);
    expect(byError.get("invalid")?.reason).toMatch(/arguments are not JSON/);
    expect(first.stats.deadLetters).toBe(2);
    await first.stop();

    await send([toolCall({ run_id: run }), toolCall({ run_id: run })]);
    const second = await start();
    const all = await collect<Decision>("oz0.call-decisions", "Decision", s, (d) => d.run_id === run && d.processor === "tally", 7, 60_000, 2_000);
    await second.stop();
    expect(all.map((d) => d.numbers.calls)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(new Set(all.map((d) => d.id)).size).toBe(7);
    expect(await redis.hget(keys.tally(run), "calls")).toBe("7");
  });
});
