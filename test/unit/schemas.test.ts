import { describe, expect, it } from "vitest";
import { allSchemas, SCHEMA_NAMES, schemaFilesOnDisk, schemaViolations } from "../../schemas/catalog.ts";
import { backwardProblem, compatibilityProblems } from "../../schemas/compatibility.ts";
import { schema } from "../../schemas/catalog.ts";
import { toolCall } from "../support/events.ts";

describe("SYS-1 event schemas", () => {
  it("SYS-1 lists every .avsc file in the catalog, under its record-name subject", () => {
    expect([...SCHEMA_NAMES].sort()).toEqual(schemaFilesOnDisk());
    for (const s of allSchemas()) expect(s.subject).toBe(`oz0.${s.name}`);
  });

  it("SYS-1 every schema in use is BACKWARD compatible with every version it has had", () => {
    for (const name of SCHEMA_NAMES) expect(compatibilityProblems(name), name).toEqual([]);
  });

  it("SYS-1 a schema change that breaks compatibility fails the check", () => {
    const current = schema("ToolCall").json as { fields: Array<{ name: string }> };
    const broken = { ...current, fields: [...current.fields, { name: "priority", type: "int" }] };
    const problems = compatibilityProblems("ToolCall", broken as never);
    expect(problems.join("\n")).toMatch(/cannot read events written with version 1/);
  });

  it("SYS-1 a field added with a default is compatible", () => {
    const current = schema("ToolCall").json as { fields: unknown[] };
    const added = { ...current, fields: [...current.fields, { name: "priority", type: "int", default: 0 }] };
    expect(backwardProblem(added as never, current as never)).toBeUndefined();
  });

  it("SYS-1 a changed schema must be released as a new version before it is used", () => {
    const current = schema("ModelCall").json as { fields: unknown[] };
    const added = { ...current, fields: [...current.fields, { name: "tier", type: "string", default: "" }] };
    expect(compatibilityProblems("ModelCall", added as never).join("\n")).toMatch(/differs from its newest released version \d+/);
  });

  it("names the field and value of an event that does not fit its schema", () => {
    expect(schemaViolations("ToolCall", toolCall())).toEqual([]);
    const bad = { ...toolCall(), origin: "martian", ts: "yesterday" };
    const problems = schemaViolations("ToolCall", bad);
    expect(problems.some((p) => p.startsWith("origin:"))).toBe(true);
    expect(problems.some((p) => p.startsWith("ts:"))).toBe(true);
  });
});
