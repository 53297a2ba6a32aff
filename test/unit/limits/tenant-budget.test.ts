import { describe, expect, it } from "vitest";
import { monthOf, newTenantMonth, tenantAsk, tenantRelease, tenantSettle } from "../../../processors/limits/tenant-budget.ts";
import type { Decision } from "../../../schemas/types.ts";
import { uid } from "../../support/events.ts";
import { agent, jobEvent, modelCall, setup, tenantSettings, usageOf } from "./support.ts";

const times = { now: 1_000, holdMs: 60_000, keepMs: 600_000 };

describe("LIM-10 tenant monthly budget: pure logic", () => {
  it("LIM-10 an admitted ask holds its worst case, so asks that would pass the budget together are refused", () => {
    const m = newTenantMonth();
    expect(tenantAsk(m, { requestId: "a", worst: 40, budget: 100, ...times }).code).toBe("allow");
    expect(tenantAsk(m, { requestId: "b", worst: 40, budget: 100, ...times }).code).toBe("allow");
    const c = tenantAsk(m, { requestId: "c", worst: 40, budget: 100, ...times });
    expect(c).toEqual({ code: "budget", spent: 0, reserved: 80, spentBefore: 0 });
    expect(tenantAsk(m, { requestId: "d", worst: 20, budget: 100, ...times }).code).toBe("allow");
    expect(m.reserved).toBe(100);
  });

  it("LIM-10 a usage drops its held worst case and spends what it cost, once; a release gives back the worst case", () => {
    const m = newTenantMonth();
    tenantAsk(m, { requestId: "a", worst: 40, budget: 100, ...times });
    tenantAsk(m, { requestId: "b", worst: 40, budget: 100, ...times });
    const u = tenantSettle(m, { kind: "usage", requestId: "a", cost: 15, ...times });
    expect(u).toEqual({ code: "allow", spent: 15, reserved: 40, spentBefore: 0 });
    expect(tenantSettle(m, { kind: "usage", requestId: "a", cost: 15, ...times })).toEqual(u);
    tenantRelease(m, "b");
    tenantRelease(m, "b");
    expect([m.spent, m.reserved]).toEqual([15, 0]);
    tenantSettle(m, { kind: "rewarm", requestId: "w", cost: 5, ...times });
    expect(m.spent).toBe(20);
    // A replayed ask answers as before and holds nothing again.
    expect(tenantAsk(m, { requestId: "b", worst: 40, budget: 100, ...times }).code).toBe("allow");
    expect(m.reserved).toBe(0);
  });

  it("LIM-10 a worst case whose usage never comes is dropped after holdMs; answers are forgotten after keepMs", () => {
    const m = newTenantMonth();
    tenantAsk(m, { requestId: "a", worst: 100, budget: 100, ...times });
    expect(tenantAsk(m, { requestId: "b", worst: 1, budget: 100, ...times }).code).toBe("budget");
    expect(tenantAsk(m, { requestId: "c", worst: 1, budget: 100, ...times, now: 61_000 }).code).toBe("allow");
    expect(m.reserved).toBe(1);
    expect(m.done.has("ask:a")).toBe(true);
    tenantSettle(m, { kind: "rewarm", requestId: "w", cost: 0, ...times, now: 601_001 });
    expect(m.done.has("ask:a")).toBe(false);
  });

  it("LIM-10 the month is the calendar month in UTC", () => {
    expect(monthOf(Date.UTC(2026, 0, 31, 23, 59, 59))).toBe("2026-01");
    expect(monthOf(Date.UTC(2026, 1, 1))).toBe("2026-02");
  });
});

describe("LIM-10 tenant monthly budget in the model-call processor", () => {
  const boss = agent("boss", { limits: { tree: {}, max_cost_usd: 10 } });

  it("LIM-10 once the tenant's monthly budget is spent, every model call of the tenant fails with 402 BudgetExceeded, in every tree", async () => {
    const { calls, jobs } = setup([boss], tenantSettings({ monthly_budget_usd: 0.05 }));
    const [a, b] = [uid("tree"), uid("tree")];
    await jobs.pipe([jobEvent(a), jobEvent(b)]);
    const asksA = [modelCall(a), modelCall(a)];
    await calls.pipe(asksA, { key: a });
    const refused = modelCall(b);
    await calls.pipe(refused, { key: b });
    const d = calls.read<Decision>("oz0.admissions").at(-1);
    expect(d).toMatchObject({ verdict: "refuse", reason_code: "BudgetExceeded", limit: "tenant.monthly_budget_usd", subject: refused.request_id, tree_id: b });
    expect(d?.numbers).toMatchObject({ tenant_spent_usd: 0, tenant_reserved_usd: 0.036, tenant_budget_usd: 0.05, worst_usd: 0.018 });
    expect(d?.message).toMatch(/402 BudgetExceeded.*monthly budget of \$0\.05.*raise monthly_budget_usd/);
    // Usage settles below the worst case ($0.0105 each): room again for one more.
    await calls.pipe(asksA.map((x) => usageOf(x, 500)), { key: a });
    await calls.pipe(modelCall(b), { key: b });
    expect(calls.read<Decision>("oz0.admissions").at(-1)?.verdict).toBe("allow");
    // A new month starts anew.
    await calls.pipe([modelCall(b, { ts: Date.UTC(1970, 1, 1) }), modelCall(b, { ts: Date.UTC(1970, 1, 1) })], { key: b });
    expect(calls.read<Decision>("oz0.admissions").slice(-2).map((x) => x.verdict)).toEqual(["allow", "allow"]);
  });

  it("LIM-10 a call the tree refuses gives back what it held of the tenant's month; a tenant with no budget still counts its spend", async () => {
    const small = agent("boss", { limits: { tree: { model_calls: 1 }, max_cost_usd: 10 } });
    const { calls, jobs, store } = setup([small], tenantSettings({ monthly_budget_usd: 1 }));
    const tree = uid("tree");
    await jobs.pipe(jobEvent(tree));
    await calls.pipe([modelCall(tree), modelCall(tree)], { key: tree });
    expect(calls.read<Decision>("oz0.admissions").map((d) => d.limit)).toEqual([null, "limits.tree.model_calls"]);
    expect(store.months.get("acme/1970-01")?.reserved).toBe(18_000);

    const free = setup([boss]);
    await free.jobs.pipe(jobEvent(tree));
    const ask = modelCall(tree);
    await free.calls.pipe([ask, usageOf(ask, 500), usageOf(ask, 500)], { key: tree });
    expect(free.store.months.get("acme/1970-01")?.spent).toBe(10_500);
  });
});
