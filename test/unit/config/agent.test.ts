import { describe, expect, it } from "vitest";
import { parseAgent } from "../../../config/agent.ts";
import { ConfigError } from "../../../config/errors.ts";
import { errorsOf, example, expectError, valueOf } from "./helpers.ts";

const PATH = "agents/acme-test.yaml";

describe("parseAgent", () => {
  it("LIM-1 reads the seed's job limits with their units", () => {
    const agent = valueOf(parseAgent(example("agents/acme-reviewer.yaml"), "agents/acme-reviewer.yaml"));
    expect(agent.name).toBe("acme-reviewer");
    expect(agent.limits).toMatchObject({
      max_steps: 20,
      max_tokens: 200_000,
      timeout: 10 * 60_000,
      max_cost_usd: 2,
      max_output_tokens: 4_000,
    });
  });

  it("LIM-2 reads the seed's tree limits, the wait in milliseconds", () => {
    const agent = valueOf(parseAgent(example("agents/acme-reviewer.yaml"), "agents/acme-reviewer.yaml"));
    expect(agent.limits.tree).toEqual({ model_calls: 500, tokens: 2_000_000, children: 40, fan_out: 5, depth: 3, wait: 8 * 3_600_000 });
  });

  it("LIM-4 reads -1 and none as no limit, and 0 or empty as left out", () => {
    const agent = valueOf(parseAgent(example("agents/acme-batch.yaml"), "agents/acme-batch.yaml"));
    expect(agent.limits.tree).toEqual({ fan_out: "none", wait: "none" });
    const zeros = valueOf(parseAgent("limits:\n  tree:\n    fan_out: 0\n    wait:\n    depth: ''\n    children: none\n    tokens: 2M\n", PATH));
    expect(zeros.limits.tree).toEqual({ children: "none", tokens: 2_000_000 });
  });

  it("LOOP-2 LOOP-4 reads loop thresholds and on_loop as written, leaving defaults to resolution", () => {
    const agent = valueOf(parseAgent(example("agents/acme-reviewer.yaml"), "agents/acme-reviewer.yaml"));
    expect(agent.loops).toEqual({ repeats: 4, no_progress: 6 });
    expect(agent.on_loop).toBe("wait");
  });

  it("LOOP-6 accepts report, wait and stop for on_loop, and suggests the closest for a typo", () => {
    for (const choice of ["report", "wait", "stop"]) expect(valueOf(parseAgent(`on_loop: ${choice}\n`, PATH)).on_loop).toBe(choice);
    expectError(errorsOf(parseAgent("on_loop: stpo\n", PATH)), {
      path: PATH,
      field: "on_loop",
      line: 1,
      reason: 'expected one of report, wait, stop; got the text "stpo" (did you mean "stop"?)',
    });
  });

  it("LIM-6 reads delegation: who, how deep and how many", () => {
    const agent = valueOf(parseAgent(example("agents/acme-reviewer.yaml"), "agents/acme-reviewer.yaml"));
    expect(agent.delegation).toEqual({ allow: ["acme-batch"], max_depth: 1, max_children: 4 });
  });

  it("LIM-7 reads reserve and on_budget choices", () => {
    const agent = valueOf(parseAgent("limits:\n  reserve: strict\non_budget: fail\non_unknown: wait\n", PATH));
    expect(agent.limits.reserve).toBe("strict");
    expect(agent.on_budget).toBe("fail");
    expect(agent.on_unknown).toBe("wait");
    expectError(errorsOf(parseAgent("limits:\n  reserve: last\n", PATH)), { path: PATH, field: "limits.reserve", line: 2, reason: "expected one of last_call, strict" });
  });

  it("LIM-8 reads spend shares as fractions or percentages", () => {
    const agent = valueOf(parseAgent("spend:\n  warn_share: 70%\n  soft_wall: 0.9\n  forecast: {chance: 75%, min_runs: 10}\n", PATH));
    expect(agent.spend).toEqual({ warn_share: 0.7, soft_wall: 0.9, forecast: { chance: 0.75, min_runs: 10 } });
  });

  it("LIM-8 refuses a soft wall below the warning share", () => {
    expectError(errorsOf(parseAgent("spend:\n  warn_share: 90%\n  soft_wall: 85%\n", PATH)), {
      path: PATH,
      field: "spend.soft_wall",
      line: 3,
      reason: "must not be below warn_share (90%); got 85%",
    });
  });

  it("OFF-13 reads offload as tokens or off", () => {
    expect(valueOf(parseAgent("offload: 12k\n", PATH)).offload).toBe(12_000);
    expect(valueOf(parseAgent("offload: 8000\n", PATH)).offload).toBe(8_000);
    expect(valueOf(parseAgent("offload: off\n", PATH)).offload).toBe("off");
    expectError(errorsOf(parseAgent("offload: 0\n", PATH)), { path: PATH, field: "offload", line: 1, reason: "at least 1" });
  });

  it("takes its name from the file when the file does not say", () => {
    const agent = valueOf(parseAgent("tools: [acme_docs]\n", "config/agents/acme-reviewer.yaml"));
    expect(agent).toEqual({ name: "acme-reviewer", tools: ["acme_docs"], limits: { tree: {} }, delegation: { allow: [] }, loops: {}, spend: {} });
  });

  it("reports a garbled timeout with the file, line, field and what was expected", () => {
    const errors = errorsOf(parseAgent("limits:\n  timeout: 1h90x\n", PATH));
    const error = expectError(errors, { path: PATH, field: "limits.timeout", line: 2, reason: '"x" is not a unit' });
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toBe(`${PATH}:2: limits.timeout: "1h90x" is not a duration: "x" is not a unit; expected a duration such as 90s, 10m or 1h30m (units d, h, m, s, ms)`);
  });

  it("refuses a timeout without a unit", () => {
    expectError(errorsOf(parseAgent("limits:\n  timeout: 600\n", PATH)), { path: PATH, field: "limits.timeout", line: 2, reason: "write 600s for seconds or 600m for minutes" });
  });

  it("refuses unknown keys, with a did-you-mean when one is close", () => {
    const errors = errorsOf(parseAgent("limits:\n  tree:\n    fanout: 5\n  max_step: 3\n", PATH));
    expectError(errors, { path: PATH, field: "limits.tree.fanout", line: 3, reason: 'unknown key "fanout"; did you mean "fan_out"?' });
    expectError(errors, { path: PATH, field: "limits.max_step", line: 4, reason: 'did you mean "max_steps"?' });
  });

  it("says where a key belongs when it is written at the wrong level", () => {
    const errors = errorsOf(parseAgent("repeats: 3\nlimits:\n  fan_out: 5\n", PATH));
    expectError(errors, { path: PATH, field: "repeats", line: 1, reason: "it belongs under loops" });
    expectError(errors, { path: PATH, field: "limits.fan_out", line: 3, reason: "it belongs under limits.tree" });
  });

  it("lists the allowed keys when nothing is close", () => {
    expectError(errorsOf(parseAgent("colour: blue\n", PATH)), { path: PATH, field: "colour", line: 1, reason: "at the top the keys are name, tools, limits" });
  });

  it("collects every error of a file, in the order of the file", () => {
    const text = [
      "name: Bad Name",
      "tols: [a]",
      "limits:",
      "  timeout: 1h90x",
      "  max_output_tokens: 4kb",
      "  tree:",
      "    fan_out: -2",
      "    wait: 90",
      "loops:",
      "  repeats: 1",
      "on_loop: wiat",
      "offload: lots",
    ].join("\n");
    const errors = errorsOf(parseAgent(text, PATH));
    expect(errors.map((e) => [e.line, e.field])).toEqual([
      [1, "name"],
      [2, "tols"],
      [4, "limits.timeout"],
      [5, "limits.max_output_tokens"],
      [7, "limits.tree.fan_out"],
      [8, "limits.tree.wait"],
      [10, "loops.repeats"],
      [11, "on_loop"],
      [12, "offload"],
    ]);
  });

  it("LIM-4 refuses a tree limit below -1, saying what 0 and -1 mean", () => {
    expectError(errorsOf(parseAgent("limits:\n  tree:\n    fan_out: -2\n", PATH)), {
      path: PATH,
      field: "limits.tree.fan_out",
      line: 3,
      reason: "0 to take the tenant's, or -1 or none for no limit; got -2",
    });
  });

  it("refuses max_output_tokens above max_tokens", () => {
    expectError(errorsOf(parseAgent("limits:\n  max_tokens: 1000\n  max_output_tokens: 4k\n", PATH)), {
      path: PATH,
      field: "limits.max_output_tokens",
      line: 3,
      reason: "4000 is above max_tokens (1000)",
    });
  });

  it("refuses a tool listed twice", () => {
    expectError(errorsOf(parseAgent("tools:\n  - acme_docs\n  - acme_docs\n", PATH)), { path: PATH, field: "tools[1]", line: 3, reason: '"acme_docs" is listed twice' });
  });

  it("reports YAML syntax errors with their line", () => {
    const errors = errorsOf(parseAgent("limits:\n  max_steps: 3\n  max_steps: 4\n", PATH));
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toBe(`${PATH}:3: Map keys must be unique`);
  });

  it("reports an empty file and a file that is not a mapping", () => {
    expect(errorsOf(parseAgent("", PATH))[0]?.message).toBe(`${PATH}:1: the file is empty; an agent definition is a mapping with limits, loops, on_loop and the like`);
    expect(errorsOf(parseAgent("- a\n", PATH))[0]?.reason).toContain("got a list");
  });
});
