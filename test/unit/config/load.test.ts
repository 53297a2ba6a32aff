import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfigDir, recordKey, toConfigRecords, toTableRecords } from "../../../config/load.ts";
import { errorsOf, EXAMPLES, expectError, FIXTURES, valueOf } from "./helpers.ts";

describe("loadConfigDir", () => {
  it("loads the examples without errors", async () => {
    const config = await loadConfigDir(EXAMPLES);
    expect(config.errors.map((e) => e.message)).toEqual([]);
    expect([...config.agents.keys()]).toEqual(["acme-batch", "acme-reviewer"]);
    expect([...config.plugins.keys()]).toEqual(["acme_docs"]);
    expect([...config.tenants.keys()]).toEqual(["default"]);
    expect(config.sources.get("agent/acme-reviewer")).toBe(join(EXAMPLES, "agents", "acme-reviewer.yaml"));
  });

  it("FIT-17 passes on the manifest lint's warnings", async () => {
    const config = await loadConfigDir(EXAMPLES);
    expect(config.warnings.map((w) => [w.path, w.field])).toEqual([[join(EXAMPLES, "plugins", "acme_docs.yaml"), "tools[0].functions[1].input_schema.properties.budget"]]);
  });

  it("reports every error of every broken file with its path, field, line and reason, and keeps the good files", async () => {
    const dir = join(FIXTURES, "broken");
    const config = await loadConfigDir(dir);
    const typo = join(dir, "agents", "typo.yaml");
    expectError(config.errors, { path: typo, field: "limits.timeout", line: 3, reason: '"x" is not a unit' });
    expectError(config.errors, { path: typo, field: "limits.tree.fanout", line: 5, reason: 'did you mean "fan_out"?' });
    expectError(config.errors, { path: typo, field: "on_loop", line: 6, reason: 'did you mean "wait"?' });
    expectError(config.errors, { path: join(dir, "plugins", "bad", "oz0-plugin.yaml"), field: "tools[0].mcp", line: 4, reason: "which is neither" });
    expectError(config.errors, { path: join(dir, "tenants", "acme.yaml"), field: "offload.default", line: 3, reason: "above the ceiling (20000)" });
    expectError(config.errors, { path: join(dir, "plugins", "no-manifest"), field: "", reason: "has no oz0-plugin.yaml" });
    expect(config.errors).toHaveLength(6);
    expect([...config.agents.keys()]).toEqual(["good"]);
    expect(config.plugins.size).toBe(0);
    expect(config.tenants.size).toBe(0);
  });

  it("formats each error as path:line: field: reason", async () => {
    const dir = join(FIXTURES, "broken");
    const config = await loadConfigDir(dir);
    const error = config.errors.find((e) => e.field === "on_loop");
    expect(error?.message).toBe(`${join(dir, "agents", "typo.yaml")}:6: on_loop: expected one of report, wait, stop; got the text "wiat" (did you mean "wait"?)`);
  });

  it("reads a plugin from plugins/<name>/oz0-plugin.yaml, named after its directory", async () => {
    const config = await loadConfigDir(join(FIXTURES, "nested"));
    expect(config.errors).toEqual([]);
    expect(config.plugins.get("acme_docs")?.tools[0]?.id).toBe("acme_docs");
    expect(config.warnings).toEqual([]);
  });

  it("refuses a second definition of the same name, naming the first file", async () => {
    const dir = join(FIXTURES, "duplicate");
    const config = await loadConfigDir(dir);
    expectError(config.errors, { path: join(dir, "agents", "b.yaml"), field: "name", reason: `agent "same" is already defined in ${join(dir, "agents", "a.yaml")}` });
    expect(config.agents.get("same")?.on_loop).toBeUndefined();
  });

  it("reports a directory that does not exist", async () => {
    const config = await loadConfigDir(join(FIXTURES, "missing"));
    expect(config.errors.map((e) => e.reason)).toEqual(["is not a directory; expected one holding agents/, plugins/ and tenants/"]);
  });
});

describe("table records", () => {
  it("turns the loaded config into rows keyed kind/id, in a stable order", async () => {
    const rows = toTableRecords(await loadConfigDir(EXAMPLES));
    expect(rows.map((r) => r.key)).toEqual(["agent/acme-batch", "agent/acme-reviewer", "plugin/acme_docs", "tenant/default"]);
    expect(rows.map((r) => recordKey(r.kind, r.id))).toEqual(rows.map((r) => r.key));
    const tenantRow = rows.find((r) => r.kind === "tenant");
    expect(tenantRow?.value).toMatchObject({ offload: { default: 6_000, ceiling: 20_000 } });
    expect(tenantRow?.source).toBe(join(EXAMPLES, "tenants", "default.yaml"));
  });

  it("OFF-13 refuses to publish tenant settings without a reason", async () => {
    const rows = toTableRecords(await loadConfigDir(EXAMPLES));
    const errors = errorsOf(toConfigRecords(rows, { ts: 1 }));
    expect(errors.map((e) => [e.path, e.field])).toEqual([[join(EXAMPLES, "tenants", "default.yaml"), "reason"]]);
    expect(valueOf(toConfigRecords(rows.filter((r) => r.kind !== "tenant"), { ts: 1 }))).toHaveLength(3);
  });

  it("writes ConfigRecord events whose value is the validated configuration as JSON", async () => {
    const rows = toTableRecords(await loadConfigDir(EXAMPLES));
    const records = valueOf(toConfigRecords(rows, { ts: 1_700_000_000_000, reason: "long pages fill the context" }));
    const reviewer = records.find((r) => r.id === "acme-reviewer");
    expect(reviewer).toMatchObject({ kind: "agent", reason: "long pages fill the context", ts: 1_700_000_000_000, source: join(EXAMPLES, "agents", "acme-reviewer.yaml") });
    expect(JSON.parse(reviewer?.value ?? "null")).toEqual(rows.find((r) => r.id === "acme-reviewer")?.value);
  });
});
