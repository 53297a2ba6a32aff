import { describe, expect, it } from "vitest";
import { tenantChange } from "../../../config/tenant-change.ts";
import { parseTenant, type TenantSettings } from "../../../config/tenant.ts";
import { errorsOf, example, expectError, valueOf } from "./helpers.ts";

const PATH = "tenants/acme.yaml";

function tenant(yaml: string): TenantSettings {
  return valueOf(parseTenant(yaml, PATH));
}

describe("parseTenant", () => {
  it("reads the example tenant's settings", () => {
    expect(valueOf(parseTenant(example("tenants/default.yaml"), "tenants/default.yaml"))).toEqual({
      id: "default",
      limits: { tree: { fan_out: 5, wait: 2 * 3_600_000 } },
      loops: { cycles: 3 },
      on_loop: "wait",
      spend: { warn_share: 0.8, soft_wall: 0.85 },
      offload: { default: 6_000, ceiling: 20_000 },
      loop_deadline: 3_600_000,
      monthly_budget_usd: 500,
    });
  });

  it("OFF-13 reads offload as the admin API's JSON writes it, -1 as the default meaning off", () => {
    expect(valueOf(parseTenant('{"offload": {"default": 6000, "ceiling": 20000}}', PATH)).offload).toEqual({ default: 6_000, ceiling: 20_000 });
    expect(tenant("offload: {default: -1}\n").offload).toEqual({ default: "off" });
    expect(tenant("offload: {default: off, ceiling: none}\n").offload).toEqual({ default: "off" });
    expect(tenant("offload: {default: platform, ceiling: 20k}\n").offload).toEqual({ ceiling: 20_000 });
  });

  it("OFF-13 refuses a default above the ceiling", () => {
    expectError(errorsOf(parseTenant("offload:\n  default: 30000\n  ceiling: 20000\n", PATH)), {
      path: PATH,
      field: "offload.default",
      line: 2,
      reason: "30000 is above the ceiling (20000)",
    });
  });

  it("LIM-4 reads the tenant's tree limits, 0 meaning the default", () => {
    expect(tenant("limits:\n  tree:\n    fan_out: 0\n    children: 2k\n    wait: none\n").limits.tree).toEqual({ children: 2_000, wait: "none" });
    expectError(errorsOf(parseTenant("limits:\n  tree:\n    depth: -3\n", PATH)), { path: PATH, field: "limits.tree.depth", line: 3, reason: "0 to take the default" });
  });

  it("refuses job limits, which are the agent's, in a tenant's settings", () => {
    expectError(errorsOf(parseTenant("limits:\n  max_steps: 10\n", PATH)), { path: PATH, field: "limits.max_steps", line: 2, reason: 'unknown key "max_steps"' });
  });

  it("LIM-10 reads the monthly budget, and none", () => {
    expect(tenant("monthly_budget_usd: 250.5\n").monthly_budget_usd).toBe(250.5);
    expect(tenant("monthly_budget_usd: none\n").monthly_budget_usd).toBeUndefined();
    expectError(errorsOf(parseTenant("monthly_budget_usd: 0\n", PATH)), { path: PATH, field: "monthly_budget_usd", line: 1, reason: "above 0" });
  });

  it("LOOP-5 reads the deadline of a loop's approval as a duration", () => {
    expect(tenant("loop_deadline: 30m\n").loop_deadline).toBe(30 * 60_000);
    expectError(errorsOf(parseTenant("loop_deadline: 0s\n", PATH)), { path: PATH, field: "loop_deadline", line: 1, reason: "longer than 0" });
  });

  it("takes its id from the file when the file does not say", () => {
    expect(tenant("on_loop: stop\n").id).toBe("acme");
  });
});

describe("tenantChange", () => {
  const before = tenant("offload: {default: 6000, ceiling: 20000}\nlimits: {tree: {fan_out: 5}}\n");

  it("OFF-13 refuses a change of tenant settings without a reason", () => {
    const after = tenant("offload: {default: 8000, ceiling: 20000}\nlimits: {tree: {fan_out: 5}}\n");
    for (const reason of [undefined, null, "", "   "]) {
      const errors = errorsOf(tenantChange({ before, after, reason, by: "ops@acme", at: 1 }));
      expectError(errors, { path: "tenant/acme", field: "reason", reason: "a change of tenant settings needs a reason (OFF-13)" });
    }
  });

  it("OFF-13 keeps the reason, who and when with the change", () => {
    const after = tenant("offload: {default: 8000, ceiling: 20000}\nlimits: {tree: {fan_out: 5}}\n");
    const change = valueOf(tenantChange({ before, after, reason: " long pages fill the context ", by: "ops@acme", at: 1_700_000_000_000 }));
    expect(change).toMatchObject({ tenant: "acme", reason: "long pages fill the context", by: "ops@acme", at: 1_700_000_000_000 });
    expect(change.changes).toEqual([{ field: "offload.default", from: 6_000, to: 8_000, loosening: false }]);
  });

  it("OFF-13 never counts an offload change as a loosening, even a raised ceiling or off", () => {
    const after = tenant("offload: {default: off}\nlimits: {tree: {fan_out: 5}}\n");
    const change = valueOf(tenantChange({ before, after, reason: "measure without offload", by: "ops@acme", at: 1 }));
    expect(change.changes.map((c) => c.field)).toEqual(["offload.ceiling", "offload.default"]);
    expect(change.loosening).toBe(false);
  });

  it("counts a raised or removed tree limit as a loosening, and a lowered one not", () => {
    const raised = valueOf(tenantChange({ before, after: tenant("offload: {default: 6000, ceiling: 20000}\nlimits: {tree: {fan_out: none}}\n"), reason: "batch", by: "ops", at: 1 }));
    expect(raised.changes).toEqual([{ field: "limits.tree.fan_out", from: 5, to: "none", loosening: true }]);
    const lowered = valueOf(tenantChange({ before, after: tenant("offload: {default: 6000, ceiling: 20000}\nlimits: {tree: {fan_out: 3, depth: 5}}\n"), reason: "calm", by: "ops", at: 1 }));
    expect(lowered.loosening).toBe(false);
  });

  it("LOOP-6 counts on_loop moving towards report as a loosening", () => {
    const change = valueOf(tenantChange({ before: tenant("on_loop: stop\n"), after: tenant("on_loop: report\n"), reason: "noisy", by: "ops", at: 1 }));
    expect(change.changes).toEqual([{ field: "on_loop", from: "stop", to: "report", loosening: true }]);
  });

  it("measures a new tenant's settings against the defaults", () => {
    const change = valueOf(tenantChange({ before: null, after: tenant("loops: {repeats: 5}\nlimits: {tree: {children: 100}}\n"), reason: "onboarding", by: "ops", at: 1 }));
    expect(change.changes).toEqual([
      { field: "limits.tree.children", from: null, to: 100, loosening: false },
      { field: "loops.repeats", from: null, to: 5, loosening: true },
    ]);
  });

  it("refuses a change without who made it, or across tenants", () => {
    const other = valueOf(parseTenant("on_loop: stop\n", "tenants/globex.yaml"));
    const errors = errorsOf(tenantChange({ before: other, after: before, reason: "why not", by: " ", at: 1 }));
    expect(errors.map((e) => e.field)).toEqual(["by", "id"]);
  });
});
