import { describe, expect, it } from "vitest";
import { budgetFillInFunctions, followsFitConvention, lintPlugin, parsePlugin, type PluginFunction, type PluginTool } from "../../../config/plugin.ts";
import { errorsOf, example, expectError, valueOf } from "./helpers.ts";

const PATH = "plugins/acme_docs/oz0-plugin.yaml";

function fn(name: string, properties: Record<string, unknown>): PluginFunction {
  return { name, input_schema: { type: "object", properties } };
}

function fitTool(functions: PluginFunction[], fit = true): PluginTool {
  return { id: "acme_docs", mcp: ["python", "-m", "acme_docs.server"], results: { fit }, functions };
}

const VIEW_ENUM = { enum: ["stub", "summary", "section", "full"] };

describe("parsePlugin", () => {
  it("reads the example manifest as seed 000 writes it", () => {
    const parsed = parsePlugin(example("plugins/acme_docs.yaml"), "plugins/acme_docs.yaml");
    const manifest = valueOf(parsed);
    expect(manifest.name).toBe("acme_docs");
    expect(manifest.tools).toHaveLength(1);
    const tool = manifest.tools[0]!;
    expect(tool.id).toBe("acme_docs");
    expect(tool.mcp).toEqual(["python", "-m", "acme_docs.server"]);
    expect(tool.results).toEqual({ fit: true });
    expect(tool.functions.map((f) => f.name)).toEqual(["get_page", "quote"]);
    expect(tool.functions[1]?.requires_approval).toBe(true);
    expect(tool.functions[0]?.input_schema.required).toEqual(["path"]);
  });

  it("takes an http(s) URL for mcp, and the plugin's name from its directory", () => {
    const manifest = valueOf(parsePlugin("tools:\n  - id: remote\n    mcp: https://mcp.acme.example/sse\n", PATH));
    expect(manifest).toEqual({ name: "acme_docs", tools: [{ id: "remote", mcp: "https://mcp.acme.example/sse", results: { fit: false }, functions: [] }] });
  });

  it("refuses an mcp that is neither a command list nor an http(s) URL", () => {
    const errors = errorsOf(parsePlugin("tools:\n  - id: a\n    mcp: python -m a\n  - id: b\n    mcp: ftp://b\n  - id: c\n    mcp: []\n", PATH));
    expectError(errors, { path: PATH, field: "tools[0].mcp", line: 3, reason: 'got the text "python -m a", which is neither' });
    expectError(errors, { path: PATH, field: "tools[1].mcp", line: 5, reason: "got a ftp URL" });
    expectError(errors, { path: PATH, field: "tools[2].mcp", line: 7, reason: "got an empty list" });
  });

  it("FIT-17 checks the results block", () => {
    const errors = errorsOf(parsePlugin("tools:\n  - id: a\n    mcp: [a]\n    results: {fit: yes, views: 4}\n", PATH));
    expectError(errors, { path: PATH, field: "tools[0].results.fit", line: 4, reason: 'expected true or false; got the text "yes"' });
    expectError(errors, { path: PATH, field: "tools[0].results.views", line: 4, reason: 'unknown key "views"' });
  });

  it("refuses an input schema that is not a JSON Schema object, naming the keyword", () => {
    const text = [
      "tools:",
      "  - id: a",
      "    mcp: [a]",
      "    functions:",
      "      - name: f",
      "        input_schema:",
      "          type: obj",
      "          properties:",
      "            q: 3",
      "          required: [p]",
      "      - name: g",
    ].join("\n");
    const errors = errorsOf(parsePlugin(text, PATH));
    expectError(errors, { path: PATH, field: "tools[0].functions[0].input_schema.type", line: 7, reason: 'expected object, as an MCP function\'s input schema is; got "obj"' });
    expectError(errors, { path: PATH, field: "tools[0].functions[0].input_schema.properties.q", line: 9, reason: "expected a schema (a mapping); got 3" });
    expectError(errors, { path: PATH, field: "tools[0].functions[0].input_schema.required", line: 10, reason: 'names "p", which is not one of the properties' });
    expectError(errors, { path: PATH, field: "tools[0].functions[1].input_schema", line: 11, reason: "is required" });
  });

  it("refuses a tool without an id or mcp, and a tool id used twice", () => {
    const errors = errorsOf(parsePlugin("tools:\n  - results: {fit: true}\n  - id: a\n    mcp: [a]\n  - id: a\n    mcp: [a]\n", PATH));
    expectError(errors, { path: PATH, field: "tools[0].id", line: 2, reason: "is required" });
    expectError(errors, { path: PATH, field: "tools[0].mcp", line: 2, reason: "is required" });
    expectError(errors, { path: PATH, field: "tools[2]", line: 5, reason: 'the tool id "a" is used twice' });
  });

  it("refuses a manifest without tools", () => {
    expectError(errorsOf(parsePlugin("name: empty\n", PATH)), { path: PATH, field: "tools", line: 1, reason: "is required" });
  });
});

describe("the fit convention", () => {
  it("FIT-15 fills in a budget only for functions with an integer budget beside a view of the four views", () => {
    const manifest = valueOf(parsePlugin(example("plugins/acme_docs.yaml"), "plugins/acme_docs.yaml"));
    expect(budgetFillInFunctions(manifest.tools[0]!)).toEqual(["get_page"]);
  });

  it("FIT-15 never touches a budget with no view beside it, such as an amount of money", () => {
    expect(followsFitConvention(fn("quote", { budget: { type: "number" } }))).toBe(false);
    expect(followsFitConvention(fn("quote", { budget: { type: "integer" } }))).toBe(false);
    expect(followsFitConvention(fn("quote", { budget: { type: "integer" }, view: { enum: ["stub", "full"] } }))).toBe(false);
  });

  it("FIT-15 recognises the plain and the optional (Literal | None) shapes of view and budget", () => {
    expect(followsFitConvention(fn("a", { view: VIEW_ENUM, budget: { type: "integer" } }))).toBe(true);
    expect(followsFitConvention(fn("b", { view: { anyOf: [VIEW_ENUM, { type: "null" }] }, budget: { type: ["integer", "null"] } }))).toBe(true);
    expect(followsFitConvention(fn("c", { view: { enum: ["full", "section", "summary", "stub", null] }, budget: { oneOf: [{ type: "integer" }, { type: "null" }] } }))).toBe(true);
  });

  it("FIT-15 fills in nothing for a tool that does not declare results: {fit: true}", () => {
    expect(budgetFillInFunctions(fitTool([fn("a", { view: VIEW_ENUM, budget: { type: "integer" } })], false))).toEqual([]);
  });

  it("FIT-17 names each function of a fit tool that has a budget without the view", () => {
    const parsed = parsePlugin(example("plugins/acme_docs.yaml"), "plugins/acme_docs.yaml");
    expect(parsed.warnings).toHaveLength(1);
    const warning = parsed.warnings[0]!;
    expect(warning.field).toBe("tools[0].functions[1].input_schema.properties.budget");
    expect(warning.line).toBe(34);
    expect(warning.reason).toContain("quote has a budget that has no view of stub, summary, section, full beside it");
    expect(warning.message).toBe(`plugins/acme_docs.yaml:34: ${warning.field}: ${warning.reason}`);
  });

  it("FIT-17 warns when no function of a fit tool takes a budget", () => {
    const manifest = { name: "p", tools: [fitTool([fn("list", { q: { type: "string" } })])] };
    const warnings = lintPlugin(manifest, PATH);
    expect(warnings.map((w) => [w.field, w.reason])).toEqual([
      ["tools[0].functions", "tool acme_docs declares results: {fit: true}, but none of its functions takes an integer budget beside a view of stub, summary, section, full, so no budget is filled in"],
    ]);
  });

  it("FIT-17 says so when the view is there but the budget is not an integer", () => {
    const manifest = { name: "p", tools: [fitTool([fn("a", { view: VIEW_ENUM, budget: { type: "integer" } }), fn("b", { view: VIEW_ENUM, budget: { type: "number" } })])] };
    expect(lintPlugin(manifest, PATH).map((w) => w.reason)).toEqual([expect.stringContaining("b has a budget that is not an integer")]);
  });

  it("FIT-17 has nothing to check for a tool that lists no functions or does not declare fit", () => {
    expect(lintPlugin({ name: "p", tools: [fitTool([])] }, PATH)).toEqual([]);
    expect(lintPlugin({ name: "p", tools: [fitTool([fn("quote", { budget: { type: "number" } })], false)] }, PATH)).toEqual([]);
  });
});
