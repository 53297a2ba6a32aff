import { describe, expect, it } from "vitest";
import { admitCall, askChild, endJob, newTreeState, rewarm, settleCall, shareOf, startChild, startRoot, waitEvent, type CallAsk, type ChildAsk, type TreeState } from "../../../processors/limits/admission.ts";
import { costMicros, usdToMicros } from "../../../processors/limits/money.ts";
import { DEFAULT_PRICES, priceOf } from "../../../processors/limits/prices.ts";
import { NO_LIMIT, resolveTreeSettings, type TreeSettings } from "../../../processors/limits/tree-settings.ts";
import type { AgentDefinition } from "../../../config/agent.ts";
import type { TenantSettings } from "../../../config/tenant.ts";

function settings(over: Partial<TreeSettings> = {}): TreeSettings {
  return {
    tenant: "acme",
    rootAgent: "root",
    startedByPerson: false,
    budget: NO_LIMIT,
    reserve: "last_call",
    onBudget: "fail",
    modelCalls: NO_LIMIT,
    tokens: NO_LIMIT,
    children: 500,
    fanOut: 100,
    depth: 10,
    wait: NO_LIMIT,
    warnShare: 800_000,
    softWall: 850_000,
    ...over,
  };
}

let n = 0;
function ask(over: Partial<CallAsk> = {}): CallAsk {
  return { requestId: `req-${++n}`, runId: "run-1", inputTokens: 100, worst: 10, maxSteps: 50, maxTokens: NO_LIMIT, deadline: NO_LIMIT, now: 0, ...over };
}

function child(over: Partial<ChildAsk> = {}): ChildAsk {
  return { jobId: `job-${++n}`, parentJobId: "root", parentRunId: "run-1", runId: "", agent: "worker", depth: 1, delegating: false, parentMaxDepth: 1, parentMaxChildren: NO_LIMIT, at: 0, parentDeadline: NO_LIMIT, quotaSpent: false, timeout: NO_LIMIT, session: false, ...over };
}

function tree(over: Partial<TreeSettings> = {}): TreeState {
  const t = newTreeState(settings(over));
  startRoot(t, "root", "root", "run-1", 0);
  return t;
}

describe("limits: tree settings", () => {
  const agent = (treeLimits: Record<string, number | "none">, limits: Partial<AgentDefinition["limits"]> = {}): AgentDefinition =>
    ({ name: "root", tools: [], limits: { tree: treeLimits, ...limits }, delegation: { allow: [] }, loops: {}, spend: {} });
  const tenant = (treeLimits: Record<string, number | "none">): TenantSettings => ({ id: "acme", limits: { tree: treeLimits }, loops: {}, spend: {}, offload: {} });

  it("LIM-4 a tree limit left out takes the tenant's, then the default; -1 removes it", () => {
    const s = resolveTreeSettings({ tenantId: "acme", rootAgentName: "root", root: agent({ fan_out: 7, depth: "none" }), tenant: tenant({ fan_out: 5, children: 40, depth: 3 }), startedByPerson: false });
    expect(s.fanOut).toBe(7);
    expect(s.children).toBe(40);
    expect(s.depth).toBe(NO_LIMIT);
    const d = resolveTreeSettings({ tenantId: "acme", rootAgentName: "", root: undefined, tenant: undefined, startedByPerson: false });
    expect([d.children, d.fanOut, d.depth, d.modelCalls, d.tokens, d.wait]).toEqual([500, 100, 10, NO_LIMIT, NO_LIMIT, NO_LIMIT]);
  });

  it("LIM-7 the budget is the root's max_cost_usd in micro-dollars; on_budget waits when a person started the tree", () => {
    const s = resolveTreeSettings({ tenantId: "acme", rootAgentName: "root", root: agent({}, { max_cost_usd: 2.0 }), tenant: undefined, startedByPerson: true });
    expect(s.budget).toBe(2_000_000);
    expect(s.reserve).toBe("last_call");
    expect(s.onBudget).toBe("wait");
    expect(resolveTreeSettings({ tenantId: "acme", rootAgentName: "root", root: agent({}, { reserve: "strict" }), tenant: undefined, startedByPerson: false }).onBudget).toBe("fail");
  });

  it("LIM-7 a cost is rounded up to the micro-dollar and an unpriced model costs the table's highest prices", () => {
    const sonnet = priceOf(DEFAULT_PRICES, "claude-sonnet-4");
    expect(sonnet.listed).toBe(true);
    expect(costMicros(sonnet.price, { input: 1_000, output: 1_000, cacheRead: 0, cacheWrite: 0 })).toBe(18_000);
    expect(costMicros(sonnet.price, { input: 1, output: 0, cacheRead: 0, cacheWrite: 0 })).toBe(3);
    expect(costMicros(sonnet.price, { input: 0, output: 0, cacheRead: 1, cacheWrite: 0 })).toBe(1);
    const unknown = priceOf(DEFAULT_PRICES, "mystery-model");
    expect(unknown.listed).toBe(false);
    expect(unknown.price.output).toBe(75_000_000);
    expect(usdToMicros(0.1 + 0.2)).toBe(300_000);
  });
});

describe("limits: model calls", () => {
  it("LIM-1 the run's max_steps refuses the call after the last step; other runs are counted apart", () => {
    const t = tree();
    expect(admitCall(t, ask({ maxSteps: 2 })).code).toBe("allow");
    expect(admitCall(t, ask({ maxSteps: 2 })).code).toBe("allow");
    expect(admitCall(t, ask({ maxSteps: 2 })).code).toBe("run_steps");
    expect(admitCall(t, ask({ maxSteps: 2, runId: "run-2" })).code).toBe("allow");
  });

  it("LIM-1 a job past its timeout deadline makes no more model calls: nothing is reserved, and a replay answers the same", () => {
    const t = tree();
    expect(admitCall(t, ask({ deadline: 60_000, now: 60_000 })).code).toBe("allow");
    const late = ask({ deadline: 60_000, now: 60_001 });
    const answer = admitCall(t, late);
    expect(answer).toMatchObject({ code: "job_timeout", modelCalls: 1, reserved: 10 });
    expect(admitCall(t, { ...late, now: 1 })).toEqual(answer);
    // Endings bind: the run stays stopped; another job's run without a deadline goes on.
    expect(admitCall(t, ask({ deadline: NO_LIMIT, now: 10 ** 12 })).code).toBe("job_timeout");
    expect(admitCall(t, ask({ deadline: NO_LIMIT, now: 10 ** 12, runId: "run-2" })).code).toBe("allow");
  });

  it("LIM-1 the run's max_tokens refuses a call whose input would pass it", () => {
    const t = tree();
    expect(admitCall(t, ask({ maxTokens: 250, inputTokens: 200 })).code).toBe("allow");
    expect(admitCall(t, ask({ maxTokens: 250, inputTokens: 60 })).code).toBe("run_tokens");
  });

  it("LIM-2 a call past the tree's model_calls is refused, whatever run makes it", () => {
    const t = tree({ modelCalls: 2 });
    admitCall(t, ask({ runId: "a" }));
    admitCall(t, ask({ runId: "b" }));
    expect(admitCall(t, ask({ runId: "c" })).code).toBe("tree_model_calls");
  });

  it("LIM-2 a call past the tree's tokens is refused; output tokens count once the usage arrives", () => {
    const t = tree({ tokens: 1_000 });
    const a = ask({ inputTokens: 400 });
    admitCall(t, a);
    settleCall(t, { requestId: a.requestId, runId: "run-1", inputTokens: 400, outputTokens: 500, cost: 1 });
    expect(t.tokens).toBe(900);
    expect(admitCall(t, ask({ inputTokens: 101 })).code).toBe("tree_tokens");
    // The refused run's job failed with TreeLimitExceeded: its later asks get the same; another run's that fits goes ahead.
    expect(admitCall(t, ask({ inputTokens: 100 })).code).toBe("tree_tokens");
    expect(admitCall(t, ask({ inputTokens: 100, runId: "run-2" })).code).toBe("allow");
  });

  it("LIM-7 each call reserves its worst case; a call that does not fit is the one last call under last_call", () => {
    const t = tree({ budget: 100 });
    expect(admitCall(t, ask({ worst: 60 })).code).toBe("allow");
    expect(t.reserved).toBe(60);
    expect(admitCall(t, ask({ worst: 50 })).code).toBe("allow_last_call");
    expect(admitCall(t, ask({ worst: 1 })).code).toBe("budget");
  });

  it("LIM-1 LIM-7 endings bind: a run whose ask ended its job gets the same answer for every later ask; a budget that waits for a person ends nothing", () => {
    const failing = tree({ budget: 100, reserve: "strict", onBudget: "fail" });
    expect(admitCall(failing, ask({ worst: 200 })).code).toBe("budget");
    expect(admitCall(failing, ask({ worst: 1 })).code).toBe("budget");
    expect(failing.reserved).toBe(0);
    const waiting = tree({ budget: 100, reserve: "strict", onBudget: "wait" });
    expect(admitCall(waiting, ask({ worst: 200 })).code).toBe("budget");
    expect(admitCall(waiting, ask({ worst: 1 })).code).toBe("allow");
  });

  it("LIM-7 strict refuses the last call that does not fit too", () => {
    const t = tree({ budget: 100, reserve: "strict" });
    expect(admitCall(t, ask({ worst: 60 })).code).toBe("allow");
    expect(admitCall(t, ask({ worst: 50 })).code).toBe("budget");
    expect(admitCall(t, ask({ worst: 40, runId: "run-2" })).code).toBe("allow");
  });

  it("LIM-7 settlement frees the reservation and spends what the call cost", () => {
    const t = tree({ budget: 100, reserve: "strict" });
    const a = ask({ worst: 90 });
    admitCall(t, a);
    expect(admitCall(t, ask({ worst: 20, runId: "run-2" })).code).toBe("budget");
    const s = settleCall(t, { requestId: a.requestId, runId: "run-1", inputTokens: 100, outputTokens: 10, cost: 30 });
    expect(s).toMatchObject({ spent: 30, reserved: 0, spentBefore: 0 });
    expect(admitCall(t, ask({ worst: 70 })).code).toBe("allow");
    expect(admitCall(t, ask({ worst: 1, runId: "run-3" })).code).toBe("budget");
  });

  it("LIM-7 an ask or a usage again answers the same and changes nothing", () => {
    const t = tree({ budget: 100 });
    const a = ask({ worst: 60 });
    const first = admitCall(t, a);
    expect(admitCall(t, a)).toEqual(first);
    expect(t.reserved).toBe(60);
    const u = { requestId: a.requestId, runId: "run-1", inputTokens: 100, outputTokens: 5, cost: 20 };
    const settled = settleCall(t, u);
    expect(settleCall(t, u)).toEqual(settled);
    expect(t.spent).toBe(20);
    expect(t.reserved).toBe(0);
  });

  it("LIM-7 a call never asked about is counted when its usage arrives", () => {
    const t = tree();
    settleCall(t, { requestId: "never-asked", runId: "run-9", inputTokens: 10, outputTokens: 5, cost: 7 });
    expect([t.modelCalls, t.tokens, t.spent, t.runs.get("run-9")?.steps]).toEqual([1, 15, 7, 1]);
  });

  it("LIM-9 a re-warm is no model call and adds no tokens, but its cost is spent", () => {
    const t = tree({ budget: 100, modelCalls: 1 });
    rewarm(t, "rw-1", 40);
    rewarm(t, "rw-1", 40);
    expect([t.modelCalls, t.tokens, t.spent]).toEqual([0, 0, 40]);
    expect(admitCall(t, ask({ worst: 60 })).code).toBe("allow");
  });

  it("LIM-8 the share spent is spent over the budget, and none without a budget", () => {
    expect(shareOf(settings({ budget: 200 }), 160)).toBe(0.8);
    expect(shareOf(settings(), 160)).toBeNull();
  });
});

describe("limits: children", () => {
  it("LIM-3 a child deeper than the tree's depth is refused", () => {
    const t = tree({ depth: 2 });
    expect(askChild(t, child({ depth: 2 })).code).toBe("allow");
    expect(askChild(t, child({ depth: 3 })).code).toBe("depth");
  });

  it("LIM-3 children in all: an ended child still counts", () => {
    const t = tree({ children: 2 });
    const a = child();
    askChild(t, a);
    endJob(t, a.jobId);
    askChild(t, child());
    expect(askChild(t, child()).code).toBe("children");
  });

  it("LIM-3 fan_out counts children running at once: an ended child frees its slot, once", () => {
    const t = tree({ fanOut: 2 });
    const a = child();
    askChild(t, a);
    askChild(t, child());
    expect(askChild(t, child()).code).toBe("fan_out");
    endJob(t, a.jobId);
    endJob(t, a.jobId);
    expect(t.running).toBe(1);
    expect(askChild(t, child()).code).toBe("allow");
    expect(askChild(t, child()).code).toBe("fan_out");
  });

  it("LIM-5 a child is not started once the tree's budget is spent", () => {
    const t = tree({ budget: 10 });
    rewarm(t, "rw", 10);
    expect(askChild(t, child()).code).toBe("budget");
  });

  it("LIM-10 a child whose principal's quota is spent is not started and takes no slot; at its start after an admitted ask, its slots are given back", () => {
    const t = tree({ fanOut: 2 });
    expect(askChild(t, child({ quotaSpent: true })).code).toBe("quota");
    expect([t.children, t.running]).toEqual([0, 0]);
    const a = child();
    expect(askChild(t, a).code).toBe("allow");
    expect(startChild(t, { ...a, quotaSpent: true }).code).toBe("quota");
    expect([t.children, t.running]).toEqual([0, 0]);
    // A start never asked about meets the quota too.
    expect(startChild(t, child({ quotaSpent: true })).code).toBe("quota");
    expect([t.children, t.running]).toEqual([0, 0]);
  });

  it("LIM-5 admission is recorded once: the same ask answers the same and takes no second slot", () => {
    const t = tree({ fanOut: 2 });
    const a = child();
    const first = askChild(t, a);
    expect(askChild(t, a)).toEqual(first);
    expect(t.running).toBe(1);
  });

  it("LIM-5 a child admitted at its ask is checked again at its start: the budget spent since refuses it and frees its slots", () => {
    const t = tree({ budget: 10 });
    const a = child();
    expect(askChild(t, a).code).toBe("allow");
    rewarm(t, "rw", 10);
    expect(startChild(t, a).code).toBe("budget");
    expect([t.children, t.running]).toEqual([0, 0]);
  });

  it("LIM-5 an admitted child starts without taking a second slot; its start again answers the same", () => {
    const t = tree({ fanOut: 1 });
    const a = child();
    askChild(t, a);
    const s = startChild(t, { ...a, runId: "child-run" });
    expect(s.code).toBe("allow");
    expect(startChild(t, a)).toEqual(s);
    expect([t.children, t.running]).toEqual([1, 1]);
  });

  it("LIM-5 a child refused at its ask and started anyway is refused at its start", () => {
    const t = tree({ depth: 1 });
    const a = child({ depth: 2 });
    askChild(t, a);
    expect(startChild(t, a).code).toBe("depth");
  });

  it("LIM-5 a child never asked about meets every check at its start: a runtime cannot start more than the tree allows", () => {
    const t = tree({ fanOut: 1 });
    expect(startChild(t, child()).code).toBe("allow");
    expect(startChild(t, child()).code).toBe("fan_out");
    expect(t.running).toBe(1);
  });

  it("LIM-6 a delegation deeper than the parent agent's max_depth is refused; the delegated cannot delegate by default", () => {
    const t = tree();
    const d = child({ delegating: true, parentMaxDepth: 1 });
    expect(askChild(t, d).code).toBe("allow");
    startChild(t, { ...d, runId: "d-run" });
    expect(askChild(t, child({ parentJobId: d.jobId, parentRunId: "d-run", depth: 2, delegating: true, parentMaxDepth: 1 })).code).toBe("delegation_depth");
    expect(askChild(t, child({ parentJobId: d.jobId, parentRunId: "d-run", depth: 2, delegating: true, parentMaxDepth: 2 })).code).toBe("allow");
  });

  it("LIM-6 delegations and flow tools together meet max_children per run; reviewers and flow steps do not count", () => {
    const t = tree();
    expect(askChild(t, child({ delegating: true, parentMaxChildren: 2 })).code).toBe("allow");
    expect(askChild(t, child({ delegating: true, parentMaxChildren: 2 })).code).toBe("allow");
    expect(askChild(t, child({ delegating: true, parentMaxChildren: 2 })).code).toBe("delegation_children");
    expect(askChild(t, child({ delegating: false, parentMaxChildren: 2 })).code).toBe("allow");
    expect(askChild(t, child({ delegating: true, parentMaxChildren: 2, parentRunId: "run-2" })).code).toBe("allow");
  });

  it("LIM-6 parallel delegations of one response take their slots at the ask, so they cannot all pass max_children", () => {
    const t = tree();
    const asks = [1, 2, 3, 4].map(() => child({ delegating: true, parentMaxChildren: 3 }));
    const codes = asks.map((a) => askChild(t, a).code);
    expect(codes).toEqual(["allow", "allow", "allow", "delegation_children"]);
  });
});

describe("limits: waits for people", () => {
  it("LIM-3 a job whose waits add up past the tree's wait is over; each job counts its own", () => {
    const t = tree({ wait: 1_000 });
    expect(waitEvent(t, "e1", "root", "started", 0).over).toBe(false);
    expect(waitEvent(t, "e2", "root", "ended", 600)).toEqual({ waited: 600, over: false });
    waitEvent(t, "e3", "root", "started", 1_000);
    expect(waitEvent(t, "e4", "root", "ended", 1_500)).toEqual({ waited: 1_100, over: true });
    expect(waitEvent(t, "e4", "root", "ended", 1_500)).toEqual({ waited: 1_100, over: true });
    waitEvent(t, "e5", "other", "started", 0);
    expect(waitEvent(t, "e6", "other", "ended", 900).over).toBe(false);
  });

  it("LIM-3 with no wait limit a job may wait as long as it likes", () => {
    const t = tree();
    waitEvent(t, "e1", "root", "started", 0);
    expect(waitEvent(t, "e2", "root", "ended", 10 ** 9).over).toBe(false);
  });
});
