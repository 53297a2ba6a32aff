import { describe, expect, it } from "vitest";
import { parseAgent, type AgentDefinition } from "../../../config/agent.ts";
import { jobAgents, labelsAboveClearance, offersReadResult } from "../../../client/read-result.ts";
import { builtinManifest, isBuiltinTool, OZ_MANIFEST } from "../../../processors/read-result/index.ts";
import { budgetFillInFunctions } from "../../../config/plugin.ts";

function agent(name: string, tools: string[], allow: string[] = [], clearance?: string[]): AgentDefinition {
  return { name, tools, limits: { tree: {} }, delegation: { allow }, loops: {}, spend: {}, ...(clearance ? { clearance } : {}) };
}

function lookupOf(...agents: AgentDefinition[]) {
  const m = new Map(agents.map((a) => [a.name, a]));
  return (name: string) => m.get(name);
}

describe("read_result offered (OFF-7) and clearance (OFF-9)", () => {
  it("OFF-7 is offered when the requesting agent lists a plugin tool, and not when it lists only the platform's own", () => {
    const lookup = lookupOf(agent("reviewer", ["acme_docs"]), agent("planner", ["oz.board_read", "oz"]), agent("idle", []));
    expect(offersReadResult("reviewer", lookup)).toBe(true);
    expect(offersReadResult("planner", lookup)).toBe(false);
    expect(offersReadResult("idle", lookup)).toBe(false);
    expect(offersReadResult("nobody", lookup)).toBe(false);
  });

  it("OFF-7 counts every agent of the job: those the requesting agent may delegate to, followed on, each once", () => {
    const lookup = lookupOf(agent("router", [], ["middle"]), agent("middle", ["oz.board_read"], ["worker", "router"]), agent("worker", ["acme_docs"]), agent("loner", [], ["loner"]));
    expect(offersReadResult("router", lookup)).toBe(true);
    expect(jobAgents("router", lookup).map((a) => a.name)).toEqual(["router", "middle", "worker"]);
    expect(offersReadResult("loner", lookup)).toBe(false);
  });

  it("OFF-7 tells the platform's tools from plugin tools by name", () => {
    expect(["oz", "oz.board_read", "oz.read_result"].map(isBuiltinTool)).toEqual([true, true, true]);
    expect(["acme_docs", "ozone", "oz0_github"].map(isBuiltinTool)).toEqual([false, false, false]);
  });

  it("OFF-6 the built-in oz manifest declares read_result as a fitted function, so its budget is filled in", () => {
    expect(builtinManifest("oz")).toBe(OZ_MANIFEST);
    expect(builtinManifest("acme_docs")).toBeUndefined();
    expect(budgetFillInFunctions(OZ_MANIFEST.tools[0]!)).toEqual(["read_result"]);
  });

  it("OFF-9 withholds the labels a clearance does not list; no clearance withholds nothing", () => {
    expect(labelsAboveClearance(["finance", "pii"], agent("a", [], [], ["pii"]))).toEqual(["finance"]);
    expect(labelsAboveClearance(["pii"], agent("a", [], [], ["pii"]))).toEqual([]);
    expect(labelsAboveClearance(["pii"], agent("a", [], [], []))).toEqual(["pii"]);
    expect(labelsAboveClearance(["pii", "finance"], agent("a", []))).toEqual([]);
    expect(labelsAboveClearance([], agent("a", [], [], []))).toEqual([]);
  });

  it("OFF-9 an agent definition reads clearance as a list of labels, left out when not written", () => {
    const parsed = parseAgent("tools: [acme_docs]\nclearance: [pii, finance]\n", "agents/a.yaml");
    expect(parsed.ok && parsed.value.clearance).toEqual(["pii", "finance"]);
    const none = parseAgent("tools: [acme_docs]\n", "agents/a.yaml");
    expect(none.ok && none.value.clearance).toBeUndefined();
    const bad = parseAgent("clearance: [pii, pii]\n", "agents/a.yaml");
    expect(bad.ok).toBe(false);
  });
});
