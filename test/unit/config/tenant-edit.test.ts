import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { editTenant, newTenant, tenantDocument } from "../../../config/tenant-edit.ts";
import { parseTenant, type TenantSettings } from "../../../config/tenant.ts";

function example(): TenantSettings {
  const parsed = parseTenant(readFileSync("config/examples/tenants/default.yaml", "utf8"), "tenants/default.yaml");
  if (!parsed.ok) throw new Error(parsed.errors.map((e) => e.message).join("\n"));
  return parsed.value;
}

const edited = (t: TenantSettings, edit: Parameters<typeof editTenant>[1]) => {
  const r = editTenant(t, edit);
  if (!r.ok) throw new Error(r.errors.map((e) => e.message).join("\n"));
  return r.value;
};

describe("a tenant's settings changed from the command line, held to a tenant file's rules (oz0 tenant, oz0 quota set)", () => {
  it("OFF-13 LIM-4 settings written back as a document read as the same settings, durations with their units", () => {
    const t = example();
    expect(parseTenant(JSON.stringify(tenantDocument(t)), "tenants/default.yaml")).toEqual({ ok: true, value: t, warnings: [] });
    expect(tenantDocument(t)).toMatchObject({ loop_deadline: "1h", limits: { tree: { wait: "2h" } } });
    expect(newTenant("acme")).toEqual({ id: "acme", limits: { tree: {} }, loops: {}, spend: {}, offload: {} });
  });

  it("OFF-13 the offload default and ceiling change; platform takes the default out; a default above the ceiling is refused as a file's would be", () => {
    const t = example();
    expect(edited(t, { offload: { default: 8000 } }).offload).toEqual({ default: 8000, ceiling: 20000 });
    expect(edited(t, { offload: { default: "off", ceiling: "none" } }).offload).toEqual({ default: "off" });
    expect(edited(t, { offload: { default: "platform" } }).offload).toEqual({ ceiling: 20000 });
    const refused = editTenant(t, { offload: { default: 30000 } });
    expect(refused.ok).toBe(false);
    expect(refused.ok ? [] : refused.errors.map((e) => e.message)).toEqual([expect.stringContaining("offload.default: 30000 is above the ceiling (20000)")]);
  });

  it("LIM-4 LIM-10 tree limits, loops, spend, the monthly budget and a person's quota change; the rest stays; null takes a field out", () => {
    const t = example();
    const after = edited(t, { "limits.tree": { fan_out: 7, depth: 4 }, loops: { repeats: 4 }, spend: { warn_share: 0.7 }, monthly_budget_usd: null, "quotas.per_person": { alice: 200 } });
    expect(after.limits.tree).toEqual({ fan_out: 7, depth: 4, wait: 7_200_000 });
    expect(after.loops).toEqual({ cycles: 3, repeats: 4 });
    expect(after.spend).toEqual({ warn_share: 0.7, soft_wall: 0.85 });
    expect(after.monthly_budget_usd).toBeUndefined();
    expect(after.quotas).toEqual({ per_person: { alice: 200 } });
    expect(after.offload).toEqual(t.offload);
    expect(after.loop_deadline).toBe(t.loop_deadline);
    expect(edited(after, { "quotas.per_person": { alice: null } }).quotas?.per_person ?? {}).toEqual({});
    const refused = editTenant(t, { loops: { repeats: 0 } });
    expect(refused.ok ? [] : refused.errors.map((e) => e.message)).toEqual([expect.stringContaining("loops.repeats")]);
  });
});
