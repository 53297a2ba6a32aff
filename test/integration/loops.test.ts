import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setGroupOffsets } from "../../topology/group-offsets.ts";
import type { Producer } from "kafkajs";
import { loopApprovalsProcessor } from "../../processors/loops/approvals-processor.ts";
import { loopCallsProcessor, type LoopEnv } from "../../processors/loops/calls-processor.ts";
import { startLoopDeadlines } from "../../processors/loops/index.ts";
import { loopReport } from "../../processors/loops/report.ts";
import { MemoryLoopStore } from "../../processors/loops/memory-store.ts";
import { RedisLoopStore } from "../../processors/loops/redis-store.ts";
import { loopResultsProcessor } from "../../processors/loops/results-processor.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { Processor } from "../../processors/runner/processor.ts";
import { startProcessor, type RunningProcessor } from "../../processors/runner/runner.ts";
import { TestDriver } from "../../processors/runner/test-driver.ts";
import { KafkaTransport } from "../../processors/runner/transport.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { Decision, ToolCall, ToolResult } from "../../schemas/types.ts";
import { Keys } from "../../store/redis/keys.ts";
import { toolCall, uid } from "../support/events.ts";
import { collect, endpoints, groupAtEnd, kafka, serde, TEST_FETCH_WAIT_MS } from "../support/kafka.ts";
import { EMPTY_RESULT, toolResult } from "../support/loop-events.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { scanKeys } from "../../store/redis/slots.ts";

const config = staticConfig([
  { kind: "agent", id: "reporter", value: { on_loop: "report" } },
  { kind: "tenant", id: "hasty", value: { loop_deadline: 1500, loops: {} } },
]);
const DAY = "2026-11-30";
const TS = Date.UTC(2026, 10, 30, 9);

describe("loop detector on the real broker and Redis", () => {
  let s: Serde;
  let redis: RedisClient;
  let producer: Producer;
  const keys = new Keys(uid("t").replace(/-/g, "_"));
  const log = createLogger({ test: "loops" }, () => {});
  let env: LoopEnv;

  /** Runs a processor under a group whose offsets are set first (at the end, or where told). */
  async function start<In>(p: Processor<In, LoopEnv>, group: string, at?: Array<{ partition: number; offset: string }>): Promise<RunningProcessor> {
    if (at) {
      const k = kafka();
      const admin = k.admin();
      await admin.connect();
      await setGroupOffsets(k, admin, group, [{ topic: p.input, partitions: at }]).finally(() => admin.disconnect());
    }
    const transport = new KafkaTransport({ kafka: kafka(group), groupId: group, topics: [p.input], log, maxWaitMs: TEST_FETCH_WAIT_MS });
    return startProcessor(p, env, { transport, serde: s, log });
  }

  async function ends(topic: string): Promise<Array<{ partition: number; offset: string }>> {
    const admin = kafka().admin();
    await admin.connect();
    const offsets = await admin.fetchTopicOffsets(topic).finally(() => admin.disconnect());
    return offsets.map((o) => ({ partition: o.partition, offset: o.high }));
  }

  const sendCalls = (run: string, calls: ToolCall[]) => producer.send({ topic: "oz0.tool-calls", messages: calls.map((c) => ({ key: run, value: s.encode("ToolCall", c) })) });
  const sendResults = (run: string, results: ToolResult[]) => producer.send({ topic: "oz0.tool-results", messages: results.map((r) => ({ key: run, value: s.encode("ToolResult", r) })) });
  // Other processors (other tests' tally, say) may decide the same calls: only the loop detector's count.
  const decisionsOf = (run: string, want: number, settleMs = 0) => collect<Decision>("oz0.call-decisions", "Decision", s, (d) => d.run_id === run && d.processor.startsWith("loop-"), want, 60_000, settleMs);

  /** Every Redis field this test's prefix holds, by key, so two moments can be compared. */
  async function snapshot(): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {};
    const found: string[] = [];
    for await (const batch of scanKeys(redis, `${keys.prefix}:*`)) found.push(...batch);
    for (const key of found.sort()) {
      const type = await redis.type(key);
      out[key] = type === "hash" ? await redis.hgetall(key) : type === "set" ? (await redis.smembers(key)).sort() : type === "string" ? await redis.get(key) : await redis.zrange(key, 0, -1, "WITHSCORES");
    }
    return out;
  }

  beforeAll(async () => {
    s = await serde();
    redis = redisClient(endpoints());
    env = { config, store: new RedisLoopStore(redis, keys) };
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
  });

  afterAll(async () => {
    await producer?.disconnect();
    redis?.disconnect();
  });

  it("LOOP-2 a processor restarted mid-run decides and counts exactly as an uninterrupted run", async () => {
    const run = uid("run");
    const tenant = uid("tenant");
    const c = (fn: string, args: object) => toolCall({ run_id: run, tenant, agent: "reporter", function: fn, arguments: JSON.stringify(args), ts: TS });
    const before = [c("get_page", { p: "a" }), c("get_page", { p: "a" }), c("search", { q: "x" }), c("get_page", { p: "a" }), c("get_page", { p: "b" }), c("search", { q: "y" })];
    const after = [c("get_page", { p: "b" }), c("search", { q: "y" }), c("get_page", { p: "b" }), c("get_page", { p: "c" }), c("get_page", { p: "c" }), c("get_page", { p: "c" })];

    // The same inputs, uninterrupted, in memory.
    const memory = new MemoryLoopStore();
    const driver = new TestDriver(loopCallsProcessor, { config, store: memory });
    await driver.pipe([...before, ...after], { key: run });
    const expected = driver.read<Decision>("oz0.call-decisions");
    expect(expected.map((d) => d.verdict)).toEqual(["allow", "allow", "allow", "report", "allow", "allow", "allow", "report", "allow", "allow", "allow", "report"]);

    const group = uid("loop-calls");
    await groupAtEnd(group, "oz0.tool-calls");
    await sendCalls(run, before);
    const first = await start(loopCallsProcessor, group);
    await decisionsOf(run, before.length);
    await first.stop();
    await sendCalls(run, after);
    const second = await start(loopCallsProcessor, group);
    const all = await decisionsOf(run, before.length + after.length, 2_000);
    await second.stop();

    expect(all).toEqual(expected);
    expect(await redis.hgetall(keys.loopStats(DAY, "counts"))).toEqual({ [`${tenant}|acme_docs|acme_docs`]: String(memory.counts.get(`${DAY}|${tenant}|acme_docs|acme_docs`)) });
  });

  it("LOOP-2 replaying the same input offsets changes nothing in Redis and emits the same decisions again", async () => {
    const run = uid("run");
    const c = (args: object, over: Partial<ToolCall> = {}) => toolCall({ run_id: run, arguments: JSON.stringify(args), ts: TS, ...over });
    const from = await ends("oz0.tool-calls");
    await sendCalls(run, [c({ p: 1 }), c({ p: 1 }), c({ p: 2 }), c({ p: 1 }), c({ p: 3 })]);
    const first = await start(loopCallsProcessor, uid("loop-calls"), from);
    const once = await decisionsOf(run, 5);
    await first.stop();
    expect(once.map((d) => d.verdict)).toEqual(["allow", "allow", "allow", "wait", "wait"]);
    const state = await snapshot();

    const replay = await start(loopCallsProcessor, uid("loop-calls"), from);
    const twice = await decisionsOf(run, 10, 2_000);
    await replay.stop();
    expect(twice.slice(5)).toEqual(once);
    expect(await snapshot()).toEqual(state);
  });

  it("LOOP-2 the commit script applies an input offset once: a second writer of the same offsets (a zombie instance) changes nothing", async () => {
    const store = new RedisLoopStore(redis, keys);
    const run = uid("run");
    const write = (at: string, state: string) => ({ tenant: run, run, source: "oz0.tool-calls:2", at, from: at, state, memos: [["7", "[]"]] as const, flags: [["stopped", state]] as const, deadlines: [], settled: [], counts: [{ id: `loop-${run}`, day: DAY, tenant: run, plugin: "p", tool: "t" }] });
    await store.write("calls", [write("7", "first")]);
    await store.write("calls", [write("7", "second"), write("6", "older")]);
    const [snap] = await store.read("calls", [{ tenant: run, run, source: "oz0.tool-calls:2", offsets: ["7"] }]);
    expect(snap).toMatchObject({ state: "first", at: "7", memos: new Map([["7", "[]"]]), flags: { stopped: "first" } });
    expect(await redis.hget(keys.loopStats(DAY, "counts"), `${run}|p|t`)).toBe("1");
    expect(await redis.ttl(keys.loopLane(run, run, "calls"))).toBeGreaterThan(3600);
    // A loop waiting three days for a person keeps the run's state at least that long; a later write never shortens it.
    const hold = { approval: uid("a"), at: Date.now() + 3 * 86_400_000, tenant: run, tree_id: "t", job_id: "j", run_id: run, call_id: "c" };
    await store.write("calls", [{ ...write("7", "x"), at: "9", deadlines: [hold] }]);
    await store.write("calls", [{ ...write("7", "x"), at: "10" }]);
    expect(await redis.ttl(keys.loopFlags(run, run))).toBeGreaterThan(3 * 86_400);
    await redis.zrem(keys.loopDeadlines(), JSON.stringify(hold));
    await store.write("calls", [write("18", "third")]);
    const [next] = await store.read("calls", [{ tenant: run, run, source: "oz0.tool-calls:2", offsets: [] }]);
    expect(next).toMatchObject({ state: "third", at: "18", flags: { stopped: "first" } });
  });

  it("LOOP-2 a run's memos from a source go once a batch of that source starts past them: no replay can need them, so a run refused call after call keeps only its last batch's", async () => {
    const store = new RedisLoopStore(redis, keys);
    const run = uid("run");
    const lane = keys.loopLane(run, run, "calls");
    const source = "oz0.tool-calls:3";
    const write = (from: number, to: number, memos: number[], at = String(to)) => ({ tenant: run, run, source, at, from: String(from), state: `s${to}`, memos: memos.map((o) => [String(o), `m${o}`] as const), flags: [], deadlines: [], settled: [], counts: [] });
    const memoFields = async (): Promise<string[]> => (await redis.hkeys(lane)).filter((f) => f.startsWith("memo:")).sort();
    await store.write("calls", [write(10, 14, [10, 12, 14])]);
    // Another source's memo of the same run is that source's to drop.
    await store.write("calls", [{ ...write(5, 5, [5]), source: "oz0.tool-calls:4" }]);
    expect(await memoFields()).toEqual([`memo:${source}:10`, `memo:${source}:12`, `memo:${source}:14`, "memo:oz0.tool-calls:4:5"]);
    // The next batch starts at 13: 10 and 12 were committed, 14 may still be replayed.
    await store.write("calls", [write(13, 20, [20])]);
    expect(await memoFields()).toEqual([`memo:${source}:14`, `memo:${source}:20`, "memo:oz0.tool-calls:4:5"]);
    expect(await redis.hget(lane, `memos:${source}`)).toBe("14 20");
    const [snap] = await store.read("calls", [{ tenant: run, run, source, offsets: ["14", "20"] }]);
    expect(snap?.memos).toEqual(new Map([["14", "m14"], ["20", "m20"]]));
    // A zombie's older batch changes nothing, memos included.
    await store.write("calls", [write(1, 20, [])]);
    expect(await memoFields()).toEqual([`memo:${source}:14`, `memo:${source}:20`, "memo:oz0.tool-calls:4:5"]);
    // A batch past them all, with no memo of its own, leaves none and no list.
    await store.write("calls", [write(30, 31, [])]);
    expect(await memoFields()).toEqual(["memo:oz0.tool-calls:4:5"]);
    expect(await redis.hexists(lane, `memos:${source}`)).toBe(0);
    expect(await redis.hget(lane, "state")).toBe("s31");
  });

  it("LOOP-7 on the real broker, five empty results leave only the answer and the next call is refused with the same words", async () => {
    const run = uid("run");
    const calls = Array.from({ length: 5 }, (_, i) => toolCall({ run_id: run, function: "search", arguments: JSON.stringify({ q: i }), ts: TS }));
    const callsGroup = uid("loop-calls");
    const resultsGroup = uid("loop-results");
    await groupAtEnd(callsGroup, "oz0.tool-calls");
    await groupAtEnd(resultsGroup, "oz0.tool-results");
    const running = [await start(loopCallsProcessor, callsGroup), await start(loopResultsProcessor, resultsGroup)];
    try {
      await sendCalls(run, calls);
      await decisionsOf(run, 5);
      await sendResults(run, calls.map((c) => toolResult(c, { content: EMPTY_RESULT })));
      const [refused] = (await decisionsOf(run, 6)).filter((d) => d.processor === "loop-results");
      expect(refused).toMatchObject({ verdict: "refuse", reason_code: "NoProgress", subject: calls[4]?.call_id });
      await sendCalls(run, [toolCall({ run_id: run, function: "search", arguments: '{"q":"new"}', ts: TS })]);
      const later = (await decisionsOf(run, 7)).at(-1);
      expect(later).toMatchObject({ verdict: "refuse", message: refused?.message });
    } finally {
      await Promise.all(running.map((r) => r.stop()));
    }
  });

  it("LOOP-5 on the real broker, a loop nobody decides on stops the job when its deadline passes, with no other event of the run", async () => {
    const run = uid("run");
    const calls = [1, 2, 3].map(() => toolCall({ run_id: run, tenant: "hasty", arguments: '{"path":"a.md"}' }));
    const callsGroup = uid("loop-calls");
    const answersGroup = uid("loop-approvals");
    await groupAtEnd(callsGroup, "oz0.tool-calls");
    await groupAtEnd(answersGroup, "oz0.loop-approvals");
    const running = [await start(loopCallsProcessor, callsGroup), await start(loopApprovalsProcessor, answersGroup)];
    const timer = await startLoopDeadlines({ store: env.store, kafka: kafka(), serde: s, log, intervalMs: 200 });
    try {
      await sendCalls(run, calls);
      const ds = await decisionsOf(run, 4);
      expect(ds.map((d) => `${d.processor}:${d.verdict}`)).toEqual(["loop-calls:allow", "loop-calls:allow", "loop-calls:wait", "loop-approvals:stop"]);
      expect(ds[3]).toMatchObject({ reason_code: "LoopDetected", subject: calls[2]?.call_id });
      expect(ds[3]?.message).toMatch(/Nobody decided on the loop/);
      expect((await redis.zrange(keys.loopDeadlines(), 0, -1)).filter((m) => m.includes(run))).toEqual([]);
    } finally {
      await timer.stop();
      await Promise.all(running.map((r) => r.stop()));
    }
  });

  it("LOOP-9 a tool that loops in three tenants in a week is listed from the daily counts in Redis", async () => {
    const store = new RedisLoopStore(redis, keys);
    const tool = uid("tool");
    const loop = (tenant: string, day: string) => ({ id: uid("loop"), day, tenant, plugin: "docs", tool });
    const write = (counts: ReturnType<typeof loop>[]) => ({ tenant: "t", run: uid("run"), source: "oz0.tool-calls:0", at: "1", from: "1", state: "{}", memos: [], flags: [], deadlines: [], settled: [], counts });
    await store.write("calls", [write([loop("t1", "2026-11-24"), loop("t2", "2026-11-27")]), write([loop("t2", "2026-11-30"), loop("t3", "2026-11-30")])]);
    await store.write("calls", [write([loop("t4", "2026-11-23")])]);
    const listed = (await loopReport(redis, keys, { until: TS })).filter((t) => t.tool === tool);
    expect(listed).toEqual([{ plugin: "docs", tool, tenants: ["t1", "t2", "t3"], loops: 4, risk: null, kill_switch: null }]);
  });
});
