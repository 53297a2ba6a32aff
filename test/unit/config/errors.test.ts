import { describe, expect, it } from "vitest";
import { parseAgent } from "../../../config/agent.ts";
import { ConfigError, formatConfigIssue } from "../../../config/errors.ts";
import { closest } from "../../../config/suggest.ts";
import { valueOf } from "./helpers.ts";

describe("ConfigError", () => {
  it("reads path:line: field: reason", () => {
    const error = new ConfigError({ path: "agents/a.yaml", field: "limits.tree.fan_out", line: 7, reason: "expected a whole number" });
    expect(error.message).toBe("agents/a.yaml:7: limits.tree.fan_out: expected a whole number");
    expect(error).toMatchObject({ name: "ConfigError", path: "agents/a.yaml", field: "limits.tree.fan_out", line: 7, reason: "expected a whole number" });
  });

  it("leaves out the line when it is not known, and the field when the whole file is meant", () => {
    expect(formatConfigIssue({ path: "tenant/acme", field: "reason", reason: "needs a reason" })).toBe("tenant/acme: reason: needs a reason");
    expect(formatConfigIssue({ path: "agents/a.yaml", field: "", line: 1, reason: "the file is empty" })).toBe("agents/a.yaml:1: the file is empty");
  });
});

describe("did you mean", () => {
  it("suggests a key one typo away, ignoring case and - for _", () => {
    expect(closest("fanout", ["fan_out", "depth"])).toBe("fan_out");
    expect(closest("Fan-Out", ["fan_out", "depth"])).toBe("fan_out");
    expect(closest("no_porgress", ["repeats", "cycles", "no_progress"])).toBe("no_progress");
  });

  it("suggests nothing when nothing is close", () => {
    expect(closest("colour", ["name", "tools", "limits"])).toBeUndefined();
  });
});

describe("YAML", () => {
  it("follows anchors and aliases, so a value can be written once", () => {
    const agent = valueOf(parseAgent("spend:\n  warn_share: &share 75%\n  forecast: {chance: *share}\n", "agents/a.yaml"));
    expect(agent.spend).toEqual({ warn_share: 0.75, forecast: { chance: 0.75 } });
  });
});
