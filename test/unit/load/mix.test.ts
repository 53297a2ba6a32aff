import { beforeAll, describe, expect, it } from "vitest";
import { loadCorpus } from "../../../bench/load/corpus.ts";
import { countSteps, countTrees, LEAD_FAN_OUT, makePlan, refOf, STEP_KINDS, TREE_KINDS, TREE_WEIGHTS, type Plan } from "../../../bench/load/mix.ts";
import { schemaViolations, type SchemaName } from "../../../schemas/catalog.ts";
import type { ToolResult } from "../../../schemas/types.ts";

const SCHEMA: Record<string, SchemaName> = {
  job_started: "JobEvent",
  child_ask: "JobEvent",
  job_ended: "JobEvent",
  model_ask: "ModelCall",
  model_usage: "ModelCall",
  tool_call: "ToolCall",
  read_result: "ToolCall",
  tool_result: "ToolResult",
};

describe("the load generator's mix", () => {
  let corpus: string[];
  let plan: Plan;

  beforeAll(async () => {
    corpus = await loadCorpus();
    plan = makePlan({ seed: 11, events: 3_000, tag: "t1", corpus });
  });

  it("SYS-6 reads its corpus from real documents of the repository", () => {
    expect(corpus.length).toBeGreaterThan(50);
    expect(corpus.some((t) => /[\u3040-\u30ff\u4e00-\u9fff]/.test(t))).toBe(true);
    expect(corpus.some((t) => t.startsWith("# "))).toBe(true);
  });

  // Building and comparing plans of real text takes seconds on a busy machine.
  it("SYS-6 plays the same plan for the same seed, and another for another seed", { timeout: 60_000 }, () => {
    const again = makePlan({ seed: 11, events: 3_000, tag: "t1", corpus });
    expect(JSON.stringify(again)).toBe(JSON.stringify(plan));
    const other = makePlan({ seed: 12, events: 3_000, tag: "t1", corpus });
    expect(JSON.stringify(other)).not.toBe(JSON.stringify(plan));
    // The tag names the events, never changes the mix.
    const tagged = makePlan({ seed: 11, events: 3_000, tag: "t2", corpus });
    expect(countSteps(tagged)).toEqual(countSteps(plan));
    expect(tagged.trees.map((t) => t.kind)).toEqual(plan.trees.map((t) => t.kind));
  });

  it("SYS-6 stops at the first tree that reaches the events asked", () => {
    const steps = plan.trees.reduce((s, t) => s + t.steps.length, 0);
    expect(plan.events).toBe(steps);
    expect(plan.events).toBeGreaterThanOrEqual(3_000);
    const last = plan.trees[plan.trees.length - 1];
    expect(plan.events - (last?.steps.length ?? 0)).toBeLessThan(3_000);
    const small = makePlan({ seed: 3, events: 300, tag: "s", corpus });
    expect(small.events).toBeGreaterThanOrEqual(300);
    expect(small.events).toBeLessThan(400);
  });

  it("SYS-6 draws every kind of tree near its weight, over several tenants", () => {
    // Four plans' trees (about 560), so a kind of weight 10% is expected about 56 times: a
    // plan's draws also depend on the corpus, and one plan's 140 trees leave too few of each.
    const plans = [plan, ...[12, 13, 14].map((seed) => makePlan({ seed, events: 3_000, tag: "t1", corpus }))];
    const trees = Object.fromEntries(TREE_KINDS.map((k) => [k, plans.reduce((n, p) => n + (countTrees(p)[k] ?? 0), 0)])) as Record<(typeof TREE_KINDS)[number], number>;
    const total = plans.reduce((n, p) => n + p.trees.length, 0);
    const weights = TREE_KINDS.reduce((s, k) => s + TREE_WEIGHTS[k], 0);
    for (const k of TREE_KINDS) {
      const expected = (TREE_WEIGHTS[k] / weights) * total;
      expect(trees[k], k).toBeGreaterThan(expected * 0.5);
      expect(trees[k], k).toBeLessThan(expected * 1.5);
    }
    expect(new Set(plan.trees.map((t) => t.tenant)).size).toBe(3);
  });

  it("SYS-6 has every kind of event, each a valid event of its schema with an ID of its own", { timeout: 60_000 }, () => {
    const steps = countSteps(plan);
    for (const k of STEP_KINDS) expect(steps[k], k).toBeGreaterThan(0);
    // Every ask is followed by its usage; every call by its result.
    expect(steps.model_usage).toBe(steps.model_ask);
    expect(steps.tool_result).toBe(steps.tool_call);
    const ids = new Set<string>();
    for (const t of plan.trees) {
      for (const s of t.steps) {
        expect(schemaViolations(SCHEMA[s.kind] ?? "JobEvent", s.event), `${s.kind} ${s.event.id}`).toEqual([]);
        expect(ids.has(s.event.id), s.event.id).toBe(false);
        ids.add(s.event.id);
        expect(s.event.tree_id).toBe(t.tree_id);
        expect(s.event.tenant).toBe(t.tenant);
      }
    }
  });

  it("SYS-6 trees start and end their jobs, delegators ask for one child over the fan-out, readers read what they were sent", () => {
    for (const t of plan.trees) {
      expect(t.steps[0]?.kind).toBe("job_started");
      expect(t.steps[t.steps.length - 1]?.kind).toBe("job_ended");
      const results = new Map<string, ToolResult>();
      for (const s of t.steps) {
        if (s.kind === "tool_result") results.set(s.event.id, s.event);
        if (s.kind === "read_result") {
          const of = results.get(s.of);
          expect(of, "a read follows the result it reads").toBeDefined();
          const text = (JSON.parse(of?.content ?? "{}") as { content: Array<{ text: string }> }).content[0]?.text ?? "";
          expect(s.ref).toBe(refOf(text));
        }
      }
    }
    const asks = plan.trees.filter((t) => t.kind === "delegator").map((t) => t.steps.filter((s) => s.kind === "child_ask").length);
    expect(Math.max(...asks)).toBe(LEAD_FAN_OUT + 1);
    expect(Math.min(...asks)).toBeGreaterThanOrEqual(1);
  });

  it("SYS-6 a result reads the same each time, copied or not, its size its bytes (large ones are joined when read)", () => {
    const results = plan.trees.flatMap((t) => t.steps.flatMap((s) => (s.kind === "tool_result" ? [s.event] : [])));
    const large = results.filter((r) => r.size_bytes > 40_000);
    expect(large.length).toBeGreaterThan(10);
    for (const r of results) {
      const content = r.content ?? "";
      expect(Buffer.byteLength(content)).toBe(r.size_bytes);
      expect({ ...r }.content).toBe(content);
      expect((JSON.parse(JSON.stringify(r)) as ToolResult).content).toBe(content);
    }
  });

  it("SYS-6 sends results from a few bytes to over the offload threshold", () => {
    const sizes = plan.trees.flatMap((t) => t.steps.flatMap((s) => (s.kind === "tool_result" ? [s.event.size_bytes] : [])));
    expect(Math.min(...sizes)).toBeLessThan(64);
    // Over 10,000 tokens (the default threshold) at four bytes a token or more.
    expect(sizes.filter((n) => n > 40_000).length).toBeGreaterThan(10);
    expect(sizes.filter((n) => n > 1_000 && n < 12_000).length).toBeGreaterThan(100);
  });
});
