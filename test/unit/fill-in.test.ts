import { beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { loadConfigDir } from "../../config/load.ts";
import type { ToolCall } from "../../schemas/types.ts";
import { defaultBudget, MAX_BUDGET, MIN_BUDGET } from "../../processors/fill-in/budget.ts";
import { fillInProcessor, type FillInEnv } from "../../processors/fill-in/processor.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { TestDriver } from "../../processors/runner/test-driver.ts";
import { toolCall } from "../support/events.ts";

let config: ReturnType<typeof staticConfig>;

beforeAll(async () => {
  const loaded = await loadConfigDir("config/examples");
  config = staticConfig([
    ...[...loaded.plugins].map(([id, value]) => ({ kind: "plugin" as const, id, value })),
    ...[...loaded.agents].map(([id, value]) => ({ kind: "agent" as const, id, value })),
  ]);
  config.set("plugin", "plain", { name: "plain", tools: [{ id: "plain", mcp: ["x"], results: { fit: false }, functions: loaded.plugins.get("acme_docs")?.tools[0]?.functions ?? [] }] });
});

function env(budgetState: number | null = null): FillInEnv {
  return { config, spendShare: () => Promise.resolve(budgetState) };
}

async function fill(call: ToolCall, e = env()): Promise<Record<string, unknown>> {
  const driver = new TestDriver(fillInProcessor, e);
  await driver.pipe(call);
  expect(driver.deadLetters).toEqual([]);
  const [out] = driver.read<ToolCall>("oz0.tool-calls");
  expect(out?.id).toBe(call.id);
  return JSON.parse(out?.arguments ?? "null") as Record<string, unknown>;
}

describe("budget fill-in", () => {
  it("FIT-15 fills in the budget a model left out for a function with an integer budget beside the view enum", async () => {
    expect(await fill(toolCall({ function: "get_page", arguments: JSON.stringify({ path: "a.md", view: "summary" }) }))).toEqual({ path: "a.md", view: "summary", budget: 8000 });
  });

  it("FIT-15 never touches a budget without the view, such as an amount of money", async () => {
    expect(await fill(toolCall({ function: "quote", arguments: JSON.stringify({ plan: "gold" }) }))).toEqual({ plan: "gold" });
  });

  it("FIT-15 fills in only for a model's calls, never a flow step's or a person's", async () => {
    for (const origin of ["flow_step", "person", "harness"] as const) {
      expect(await fill(toolCall({ origin, function: "get_page", arguments: JSON.stringify({ path: "a.md" }) }))).toEqual({ path: "a.md" });
    }
  });

  it("FIT-15 keeps a budget the model gave, and fills one it sent as null", async () => {
    expect(await fill(toolCall({ arguments: JSON.stringify({ path: "a.md", budget: 1234 }) }))).toEqual({ path: "a.md", budget: 1234 });
    expect(await fill(toolCall({ arguments: JSON.stringify({ path: "a.md", budget: null }) }))).toEqual({ path: "a.md", budget: 8000 });
  });

  it("FIT-15 fills in nothing for a tool whose manifest does not declare results: {fit: true}, or an unknown plugin", async () => {
    expect(await fill(toolCall({ plugin: "plain", tool: "plain", arguments: JSON.stringify({ path: "a.md" }) }))).toEqual({ path: "a.md" });
    expect(await fill(toolCall({ plugin: "nobody", tool: "nobody", arguments: JSON.stringify({ path: "a.md" }) }))).toEqual({ path: "a.md" });
  });

  it("FIT-16 the default is a quarter of the context left, at least 500 and at most 8,000", async () => {
    expect(await fill(toolCall({ context_used: 100_000, arguments: "{}" }))).toEqual({ budget: 7000 });
    expect(await fill(toolCall({ context_used: 126_500, arguments: "{}" }))).toEqual({ budget: MIN_BUDGET });
    expect(await fill(toolCall({ context_used: 0, arguments: "{}" }))).toEqual({ budget: MAX_BUDGET });
  });

  it("FIT-16 halves the default once the tree has spent the warning share, from the budget state when it has one", async () => {
    expect(await fill(toolCall({ spend_share: 0.8, arguments: "{}" }))).toEqual({ budget: 4000 });
    expect(await fill(toolCall({ spend_share: 0.79, arguments: "{}" }))).toEqual({ budget: 8000 });
    expect(await fill(toolCall({ spend_share: 0.1, arguments: "{}" }), env(0.9))).toEqual({ budget: 4000 });
    expect(await fill(toolCall({ spend_share: 0.95, arguments: "{}" }), env(0.2))).toEqual({ budget: 8000 });
  });

  it("FIT-16 a batch's spend shares are read together, once a tree, and each call gets its own tree's", async () => {
    const asked: string[] = [];
    const answers: Array<() => void> = [];
    const e: FillInEnv = {
      config,
      spendShare: (_tenant, tree) => {
        asked.push(tree);
        // Answered only once every read of the batch was asked: a read asked after another answered never is.
        return new Promise((resolve) => answers.push(() => resolve(tree === "tree-b" ? 0.9 : 0.1)));
      },
    };
    const driver = new TestDriver(fillInProcessor, e);
    const calls = [toolCall({ id: "c1", tree_id: "tree-a", arguments: "{}" }), toolCall({ id: "c2", tree_id: "tree-b", arguments: "{}" }), toolCall({ id: "c3", tree_id: "tree-a", arguments: "{}" })];
    const piped = driver.pipe(calls);
    await new Promise((r) => setTimeout(r, 20));
    expect(asked.sort()).toEqual(["tree-a", "tree-b"]);
    for (const answer of answers) answer();
    await piped;
    const out = driver.read<ToolCall>("oz0.tool-calls");
    expect(out.map((c) => [c.id, (JSON.parse(c.arguments) as { budget: number }).budget])).toEqual([
      ["c1", 8000],
      ["c2", 4000],
      ["c3", 8000],
    ]);
  });

  it("FIT-16 the default stays within its bounds whatever the context used", () => {
    fc.assert(
      fc.property(fc.option(fc.integer({ min: 0, max: 1_000_000 })), fc.option(fc.double({ min: 0, max: 2, noNaN: true })), (used, share) => {
        const b = defaultBudget({ contextUsed: used, spendShare: share, warnShare: 0.8 });
        const full = defaultBudget({ contextUsed: used, spendShare: null, warnShare: 0.8 });
        expect(full).toBeGreaterThanOrEqual(MIN_BUDGET);
        expect(full).toBeLessThanOrEqual(MAX_BUDGET);
        expect(b === full || b === Math.floor(full / 2)).toBe(true);
      }),
    );
  });

  it("sends a call whose arguments are not a JSON object to the dead letters with the reason", async () => {
    const driver = new TestDriver(fillInProcessor, env());
    await driver.pipe([toolCall({ arguments: "[1,2]" }), toolCall({ arguments: "{oops" }), toolCall({ context_used: -5 })]);
    expect(driver.deadLetters.map((d) => d.reason)).toEqual([
      expect.stringMatching(/must be a JSON object/),
      expect.stringMatching(/not JSON/),
      expect.stringMatching(/context_used is -5/),
    ]);
    expect(driver.read("oz0.tool-calls")).toEqual([]);
  });
});
