import { describe, expect, it } from "vitest";
import { TopologyError } from "../../../processors/runner/processor.ts";
import { inputsOf, wiringOf } from "../../../processors/runner/runner.ts";
import { pipelineLayout } from "../../../topology/run.ts";
import { PIPELINE_TOPOLOGY } from "../../../topology/pipeline.ts";

const p = (name: string, input: string, outputs: string[] = []) => ({ processor: { name, input, outputs } });

describe("SYS-1 an application reads each input once and chains what its members write", () => {
  it("consumes each topic once, in the order first named, and none that a member writes", () => {
    const w = wiringOf([p("fill", "requested", ["calls"]), p("loops", "calls", ["decisions"]), p("reads", "calls", ["delivered"]), p("limits", "jobs"), p("files", "jobs")]);
    expect(w.topics).toEqual(["requested", "jobs"]);
    expect(w.chained.get(0)).toEqual([
      { member: 1, topic: "calls" },
      { member: 2, topic: "calls" },
    ]);
    expect(w.consumes).toEqual(["requested", "requested", "requested", "jobs", "jobs"]);
  });

  it("follows a chain of chains to the topic consumed", () => {
    const w = wiringOf([p("a", "in", ["mid"]), p("b", "mid", ["last"]), p("c", "last", [])]);
    expect(w.topics).toEqual(["in"]);
    expect(w.consumes).toEqual(["in", "in", "in"]);
  });

  it("refuses a topic read in process with two writers, but lets two members write a topic nobody in it reads", () => {
    expect(() => wiringOf([p("a", "x", ["t"]), p("b", "y", ["t"]), p("c", "t")])).toThrow(TopologyError);
    expect(() => wiringOf([p("a", "x", ["t"]), p("b", "y", ["t"])])).not.toThrow();
  });

  it("refuses a cycle", () => {
    expect(() => wiringOf([p("a", "x", ["y"]), p("b", "y", ["x"])])).toThrow(/cycle/);
  });

  it("the pipeline: loop-calls and read-result chained after budget-fill-in, oz0.tool-calls not consumed, the sinks apart", () => {
    const deciders = PIPELINE_TOPOLOGY.application("pipeline").processors;
    expect(inputsOf(deciders)).not.toContain("oz0.tool-calls");
    expect(inputsOf(deciders)).toContain("oz0.tool-calls.requested");
    const layout = new Map(pipelineLayout().map((l) => [l.name, l]));
    expect(layout.get("loop-calls")).toEqual({ name: "loop-calls", group: "oz0.pipeline", consumes: "oz0.tool-calls.requested" });
    expect(layout.get("read-result")?.consumes).toBe("oz0.tool-calls.requested");
    expect(layout.get("trace-sink-jobs")).toEqual({ name: "trace-sink-jobs", group: "oz0.sinks", consumes: "oz0.jobs" });
    expect(new Set(pipelineLayout().map((l) => l.group))).toEqual(new Set(["oz0.pipeline", "oz0.sinks"]));
  });
});
