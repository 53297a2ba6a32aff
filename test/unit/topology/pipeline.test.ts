import { describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { RedisLoopStore } from "../../../processors/loops/index.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TopologyError } from "../../../processors/runner/processor.ts";
import type { Endpoints } from "../../../processors/runner/endpoints.ts";
import type { FileStore } from "../../../store/files.ts";
import { declareTopology, type NodeShape, type PunctuatorShape } from "../../../topology/declare.ts";
import { PIPELINE_TOPOLOGY, type PipelineDeps } from "../../../topology/pipeline.ts";
import { topic, type TopicSpec } from "../../../topology/topics.ts";

const p = (name: string, input: string, outputs: string[] = []): NodeShape => ({ processor: { name, input, outputs } });
const spec = (name: string, partitions = 8, key: TopicSpec["key"] = "run_id"): TopicSpec => ({ name, schema: "ToolCall", key, partitions, retentionMs: 1, compacted: false, doc: "" });
const app = (processors: NodeShape[], punctuators: PunctuatorShape[] = []) => ({ name: "app", doc: "", exactlyOnce: true, consumers: { text: "1", fromEnv: () => 1 }, processors, punctuators });

describe("SYS-1 the topology is declared once and checked when declared", () => {
  it("refuses two writers of a topic read in process, a cycle, and an undeclared topic", () => {
    const topics = [spec("x"), spec("y"), spec("t")];
    expect(() => declareTopology([app([p("a", "x", ["t"]), p("b", "y", ["t"]), p("c", "t")])], topics)).toThrow(/one writer/);
    expect(() => declareTopology([app([p("a", "x", ["y"]), p("b", "y", ["x"])])], topics)).toThrow(/cycle/);
    expect(() => declareTopology([app([p("a", "x", ["nowhere"])])], topics)).toThrow(/does not declare/);
    expect(() => declareTopology([app([p("a", "x", ["t"])], [{ name: "tick", every: "1 s", writes: ["nowhere"], doc: "" }])], topics)).toThrow(/punctuator tick/);
    expect(() => declareTopology([app([p("a", "x", ["x"])])], topics)).toThrow(/its own input/);
    expect(() => declareTopology([app([p("a", "x"), p("a", "y")])], topics)).toThrow(/two processors are named a/);
  });

  it("refuses a chained topic not co-partitioned with the topic its chain consumes: other partition count, or other key", () => {
    expect(() => declareTopology([app([p("a", "x", ["t"]), p("b", "t")])], [spec("x", 8), spec("t", 4)])).toThrow(TopologyError);
    expect(() => declareTopology([app([p("a", "x", ["t"]), p("b", "t")])], [spec("x", 8), spec("t", 4)])).toThrow(/co-partitioned/);
    expect(() => declareTopology([app([p("a", "x", ["t"]), p("b", "t")])], [spec("x", 8, "run_id"), spec("t", 8, "tree_id")])).toThrow(/key tree_id/);
    // Chained through two hops: the last topic is compared with the one consumed.
    expect(() => declareTopology([app([p("a", "x", ["t"]), p("b", "t", ["u"]), p("c", "u")])], [spec("x"), spec("t"), spec("u", 2)])).toThrow(/c is chained after b on u/);
    const ok = declareTopology([app([p("a", "x", ["t"]), p("b", "t", ["u"]), p("c", "u")])], [spec("x"), spec("t"), spec("u")]);
    expect(ok.edges).toEqual([
      { application: "app", from: "a", to: "b", topic: "t" },
      { application: "app", from: "b", to: "c", topic: "u" },
    ]);
    // Topics written in one application and read in another are read from Kafka: no co-partitioning asked.
    expect(() => declareTopology([app([p("a", "x", ["t"])]), { ...app([p("b", "t")]), name: "other" }], [spec("x", 8), spec("t", 4)])).not.toThrow();
  });

  it("the pipeline: two applications, the deciders exactly-once and the sinks without transactions, each processor once", () => {
    expect(PIPELINE_TOPOLOGY.applications.map((a) => [a.name, a.exactlyOnce])).toEqual([
      ["pipeline", true],
      ["sinks", false],
    ]);
    const names = PIPELINE_TOPOLOGY.nodes.map((n) => n.processor.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toHaveLength(18);
    // A sink emits nothing; every processor that emits runs in the pipeline's application.
    for (const n of PIPELINE_TOPOLOGY.nodes) expect(PIPELINE_TOPOLOGY.applicationOf(n.processor.name).name).toBe(n.processor.outputs.length === 0 ? "sinks" : "pipeline");
    expect(PIPELINE_TOPOLOGY.application("pipeline").consumers.fromEnv({})).toBe(1);
    expect(PIPELINE_TOPOLOGY.application("pipeline").consumers.fromEnv({ OZ0_CONSUMERS: "3" })).toBe(3);
    expect(PIPELINE_TOPOLOGY.application("sinks").consumers.fromEnv({ OZ0_CONSUMERS: "3" })).toBe(1);
    expect(PIPELINE_TOPOLOGY.application("sinks").fetch?.fromEnv({})).toEqual({ minBytes: 8 * 1024 * 1024, maxWaitMs: 10_000 });
    expect(PIPELINE_TOPOLOGY.application("pipeline").fetch).toBeUndefined();
    expect(() => PIPELINE_TOPOLOGY.node("no-such")).toThrow(TopologyError);
  });

  it("SYS-1 FIT-15 LOOP-7 the pipeline's chained edges, each on co-partitioned topics", () => {
    expect(PIPELINE_TOPOLOGY.edges.map((e) => `${e.from} -[${e.topic}]-> ${e.to}`)).toEqual([
      "budget-fill-in -[oz0.tool-calls]-> loop-calls",
      "budget-fill-in -[oz0.tool-calls]-> read-result",
      "loop-results -[oz0.tool-results.watched]-> fit-results",
    ]);
    for (const e of PIPELINE_TOPOLOGY.edges) {
      const writer = PIPELINE_TOPOLOGY.node(e.from).processor;
      expect(topic(e.topic as never)).toMatchObject({ partitions: topic(writer.input).partitions, key: topic(writer.input).key });
    }
    expect(PIPELINE_TOPOLOGY.application("pipeline").topics).toEqual(["oz0.tool-calls.requested", "oz0.tool-results", "oz0.loop-approvals", "oz0.model-calls", "oz0.jobs"]);
  });

  it("LOOP-5 LIM-11 FILE-6 the timers are punctuators of the pipeline's application, writing declared topics", () => {
    expect(PIPELINE_TOPOLOGY.application("pipeline").punctuators.map((t) => [t.name, t.writes])).toEqual([
      ["loop-deadlines", ["oz0.loop-approvals"]],
      ["unknown-outcome-deadlines", ["oz0.admissions", "oz0.audit"]],
      ["retention-sweeps", ["oz0.audit"]],
    ]);
    // What loop-deadlines writes, loop-approvals reads: the stop reaches oz0.call-decisions.
    expect(PIPELINE_TOPOLOGY.node("loop-approvals").processor).toMatchObject({ input: "oz0.loop-approvals" });
    expect(PIPELINE_TOPOLOGY.application("sinks").punctuators).toEqual([]);
  });

  it("LOOP-1 the loop detector: three processors, one per input, each writing decisions, trace entries and what else it owes, sharing one store per Redis connection", () => {
    const loops = ["loop-calls", "loop-results", "loop-approvals"].map((n) => PIPELINE_TOPOLOGY.node(n));
    expect(loops.map((e) => e.processor.input)).toEqual(["oz0.tool-calls", "oz0.tool-results", "oz0.loop-approvals"]);
    // LOOP-7: a call not made gets a failed result, and every result goes on to fit-results (the one
    // that crossed the no-progress line with its words); LOOP-9: loops acted on go to the audit log.
    expect(loops.map((e) => e.processor.outputs)).toEqual([
      ["oz0.call-decisions", "oz0.trace", "oz0.results-delivered", "oz0.audit"],
      ["oz0.tool-results.watched", "oz0.call-decisions", "oz0.trace", "oz0.audit"],
      ["oz0.call-decisions", "oz0.trace", "oz0.results-delivered"],
    ]);
    expect(topic("oz0.loop-approvals")).toMatchObject({ schema: "Decision", key: "run_id" });
    expect(topic("oz0.tool-results.watched")).toMatchObject({ schema: "ToolResult", key: "run_id", partitions: topic("oz0.tool-results").partitions });
    const redis = new Redis({ lazyConnect: true });
    const deps: PipelineDeps = { redis, config: staticConfig([]), endpoints: {} as Endpoints, files: {} as FileStore };
    const envs = loops.map((e) => e.env(deps) as { store: unknown });
    expect(envs[0]?.store).toBeInstanceOf(RedisLoopStore);
    expect(new Set(envs.map((e) => e.store)).size).toBe(1);
    redis.disconnect();
  });

  it("describe() gives every application, source, processor, chained edge and punctuator as text", () => {
    const text = PIPELINE_TOPOLOGY.describe();
    expect(text).toContain("Application pipeline: group oz0.pipeline, exactly-once, consumers 1 (OZ0_CONSUMERS)");
    expect(text).toContain("Application sinks: group oz0.sinks, at-least-once");
    expect(text).toMatch(/Source oz0\.tool-calls\.requested \(8 partitions, key run_id\)\n {4}Processor budget-fill-in -> oz0\.tool-calls\n {6}chained on oz0\.tool-calls: Processor loop-calls -> /);
    expect(text).toContain("Punctuator loop-deadlines (every 1 s) -> oz0.loop-approvals");
    for (const n of PIPELINE_TOPOLOGY.nodes) expect(text).toContain(`Processor ${n.processor.name} ->`);
  });
});
