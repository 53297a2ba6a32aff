/**
 * A plugin's manifest, `oz0-plugin.yaml` (seed 000): its tools, how each is reached over MCP,
 * whether its results follow the fit convention, and its functions with their input schemas.
 * Also the two things the fit convention reads from it: which functions get a budget filled in
 * (FIT-15) and the manifest lint (FIT-17).
 */
import { configWarning, type ConfigWarning, type Parsed } from "./errors.ts";
import { readBoolean, readId, readIdList, readText, required, withoutUndefined } from "./fields.ts";
import { readName } from "./names.ts";
import { YamlFile, type Value } from "./yaml-file.ts";

/** A JSON Schema object, kept as written. */
export type JsonSchema = { readonly [keyword: string]: unknown };

export interface PluginFunction {
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the arguments: `type: object` with its `properties`. */
  readonly input_schema: JsonSchema;
  /** The function waits for a person before it runs. @default false */
  readonly requires_approval?: boolean;
}

export interface PluginTool {
  readonly id: string;
  /** How the tool's MCP server is reached: a command to start (argv) or an http(s) URL. */
  readonly mcp: readonly string[] | string;
  /** `fit: true` declares the fit convention, so the runtime fills in a missing budget (FIT-15). */
  readonly results: { readonly fit: boolean };
  /** The functions, as the server lists them. @default [] (nothing to check) */
  readonly functions: readonly PluginFunction[];
  /** The tool's risk class, as the cluster's admins name them (`read_only`, `writes`, `destructive`), shown in the loop report (LOOP-9). @default none */
  readonly risk?: string;
  /** OFF-9: labels every result of the tool carries (such as `pii`), checked against an agent's `clearance` when read back. @default none */
  readonly labels?: readonly string[];
}

export interface PluginManifest {
  readonly name: string;
  readonly tools: readonly PluginTool[];
}

/** FIT-1: the views of the fit convention. */
export const VIEWS = ["stub", "summary", "section", "full"] as const;
export type View = (typeof VIEWS)[number];

const MANIFEST_KEYS = ["name", "tools"] as const;
const TOOL_KEYS = ["id", "mcp", "results", "functions", "risk", "labels"] as const;
const FUNCTION_KEYS = ["name", "description", "input_schema", "requires_approval"] as const;

/** Parses `plugins/<name>/oz0-plugin.yaml` or `plugins/<name>.yaml`, with the manifest lint's warnings. */
export function parsePlugin(yamlText: string, path: string): Parsed<PluginManifest> {
  const file = new YamlFile(path, yamlText);
  if (!file.syntaxOk) return file.failed();
  const root = file.root();
  if (root.absent) {
    root.fail("the file is empty; a plugin manifest is a mapping with name and tools");
    return file.failed();
  }
  const fields = root.mapping(MANIFEST_KEYS, { id: "tools[n]", mcp: "tools[n]", results: "tools[n]", functions: "tools[n]" });
  if (fields === undefined) return file.failed();

  const toolValues = required(fields.get("tools"), (v) => v.list("tools"), "the plugin's tools, a list of {id, mcp, results, functions}") ?? [];
  const tools: PluginTool[] = [];
  for (const v of toolValues) {
    const tool = readTool(v);
    if (tool === undefined) continue;
    if (tools.some((t) => t.id === tool.id)) v.fail(`the tool id "${tool.id}" is used twice`);
    else tools.push(tool);
  }
  const manifest: PluginManifest = { name: readName(fields.get("name"), path), tools };
  if (file.errors.length > 0) return file.failed();
  return file.finish(manifest, lintPlugin(manifest, path, (field) => file.lineOfField(field)));
}

function readTool(v: Value): PluginTool | undefined {
  if (v.absent) return v.fail("expected a tool: a mapping with id, mcp, results and functions; got nothing");
  const fields = v.mapping(TOOL_KEYS, { fit: "results", name: "functions[n]", input_schema: "functions[n]" });
  if (fields === undefined) return undefined;
  const id = required(fields.get("id"), (x) => readId(x, "a tool id"), "the tool's id, such as acme_docs");
  const mcp = required(fields.get("mcp"), readMcp, 'how to reach the MCP server: a command such as ["python", "-m", "acme_docs.server"] or an http(s) URL');
  const results = fields.get("results").mapping(["fit"], { view: "functions[n].input_schema.properties" });
  const fit = results === undefined ? undefined : readBoolean(results.get("fit"));
  const functions: PluginFunction[] = [];
  for (const f of fields.get("functions").list("functions") ?? []) {
    const fn = readFunction(f);
    if (fn === undefined) continue;
    if (functions.some((g) => g.name === fn.name)) f.fail(`the function name "${fn.name}" is used twice`);
    else functions.push(fn);
  }
  const risk = readId(fields.get("risk"), "the tool's risk class, such as read_only, writes or destructive");
  const labelsField = fields.get("labels");
  const labels = labelsField.absent ? undefined : readIdList(labelsField, "labels of the tool's results, such as pii");
  if (id === undefined || mcp === undefined) return undefined;
  return withoutUndefined({ id, mcp, results: { fit: fit ?? false }, functions, risk, labels });
}

function readMcp(v: Value): readonly string[] | string | undefined {
  const expected = 'expected a command as a list, such as ["python", "-m", "acme_docs.server"], or an http(s) URL';
  const raw = v.scalar;
  if (typeof raw === "string") {
    if (!URL.canParse(raw)) return v.fail(`${expected}; got the text "${raw}", which is neither`);
    const protocol = new URL(raw).protocol;
    if (protocol !== "http:" && protocol !== "https:") return v.fail(`${expected}; got a ${protocol.replace(":", "")} URL`);
    return raw;
  }
  if (!v.isList) return v.fail(`${expected}; got ${v.describe()}`);
  const items = v.list("command words") ?? [];
  if (items.length === 0) return v.fail(`${expected}; got an empty list`);
  const argv: string[] = [];
  for (const item of items) {
    const word = typeof item.scalar === "string" ? item.scalar : typeof item.scalar === "number" ? String(item.scalar) : undefined;
    if (word === undefined || word === "") item.fail(`expected a word of the command; got ${item.describe()}`);
    else argv.push(word);
  }
  return argv;
}

function readFunction(v: Value): PluginFunction | undefined {
  if (v.absent) return v.fail("expected a function: a mapping with name and input_schema; got nothing");
  const fields = v.mapping(FUNCTION_KEYS, { inputSchema: "input_schema", properties: "input_schema" });
  if (fields === undefined) return undefined;
  const name = required(fields.get("name"), (x) => readId(x, "a function name"), "the function's name, such as get_page");
  const schema = required(fields.get("input_schema"), readInputSchema, "the JSON Schema of its arguments, type: object with properties");
  const fn = withoutUndefined({
    name,
    description: readText(fields.get("description"), "a description"),
    input_schema: schema,
    requires_approval: readBoolean(fields.get("requires_approval")),
  });
  return name === undefined || schema === undefined ? undefined : (fn as PluginFunction);
}

/** A JSON Schema object: `type: object`, `properties` a mapping of schemas, `required` naming properties. */
function readInputSchema(v: Value): JsonSchema | undefined {
  if (!v.isMapping) return v.fail(`expected a JSON Schema object (type: object, properties: ...); got ${v.describe()}`);
  const errorsBefore = v.file.errors.length;
  const schema = v.toJS() as JsonSchema;
  if (schema.type !== "object") v.child("type").fail(`expected object, as an MCP function's input schema is; got ${describeJson(schema.type)}`);
  const properties = schema.properties;
  if (properties !== undefined && !isObject(properties)) {
    v.child("properties").fail(`expected a mapping of property names to schemas; got ${describeJson(properties)}`);
  }
  if (isObject(properties)) {
    for (const [name, property] of Object.entries(properties)) {
      const at = v.child("properties").child(name); // also notes the line, for the lint
      if (!isObject(property) && typeof property !== "boolean") at.fail(`expected a schema (a mapping); got ${describeJson(property)}`);
    }
  }
  const requiredNames = schema.required;
  if (requiredNames !== undefined) {
    if (!Array.isArray(requiredNames) || !requiredNames.every((n) => typeof n === "string")) {
      v.child("required").fail(`expected a list of property names; got ${describeJson(requiredNames)}`);
    } else {
      for (const n of requiredNames) {
        if (!isObject(properties) || !Object.hasOwn(properties, n)) v.child("required").fail(`names "${n}", which is not one of the properties`);
      }
    }
  }
  return v.file.errors.length === errorsBefore ? schema : undefined;
}

function isObject(x: unknown): x is Record<string, unknown> {
  return x !== null && typeof x === "object" && !Array.isArray(x);
}

function describeJson(x: unknown): string {
  return x === undefined ? "nothing" : JSON.stringify(x);
}

// ---- the fit convention ----------------------------------------------------------------------

/** The alternatives of a schema (`anyOf`/`oneOf`, as `int | None` gives), leaving out `null`. */
function alternatives(schema: unknown): Record<string, unknown>[] {
  if (!isObject(schema)) return [];
  const alts = schema.anyOf ?? schema.oneOf;
  const all = Array.isArray(alts) ? alts.flatMap(alternatives) : [schema];
  return all.filter((s) => s.type !== "null");
}

function isIntegerSchema(schema: unknown): boolean {
  const alts = alternatives(schema);
  const only = alts[0];
  if (alts.length !== 1 || only === undefined) return false;
  const type = only.type;
  if (type === "integer") return true;
  return Array.isArray(type) && type.includes("integer") && type.every((t) => t === "integer" || t === "null");
}

/** An enum of exactly the four views (`null` aside), as a Literal type gives. */
function isViewEnum(schema: unknown): boolean {
  const alts = alternatives(schema);
  const values = alts[0]?.enum;
  if (alts.length !== 1 || !Array.isArray(values)) return false;
  const views = new Set(values.filter((x) => x !== null));
  return views.size === VIEWS.length && VIEWS.every((view) => views.has(view));
}

function propertiesOf(fn: PluginFunction): Record<string, unknown> {
  const properties = fn.input_schema.properties;
  return isObject(properties) ? properties : {};
}

/** FIT-15: an integer `budget` property beside a `view` enum of the four views. */
export function followsFitConvention(fn: PluginFunction): boolean {
  const properties = propertiesOf(fn);
  return isIntegerSchema(properties.budget) && isViewEnum(properties.view);
}

/**
 * FIT-15: the functions of a tool whose budget the runtime fills in when a model leaves it out:
 * only for a tool that declares `results: {fit: true}`, and only functions that follow the
 * convention. A `budget` without the view (an amount of money, say) is never touched.
 */
export function budgetFillInFunctions(tool: PluginTool): string[] {
  if (!tool.results.fit) return [];
  return tool.functions.filter(followsFitConvention).map((fn) => fn.name);
}

/**
 * FIT-17, the manifest lint: for each tool that declares `results: {fit: true}` and lists its
 * functions, warns when no function takes a budget the convention's way, and names each
 * function that has a `budget` without it.
 */
export function lintPlugin(manifest: PluginManifest, path: string, lineOf: (field: string) => number | undefined = () => undefined): ConfigWarning[] {
  const warnings: ConfigWarning[] = [];
  manifest.tools.forEach((tool, t) => {
    if (!tool.results.fit || tool.functions.length === 0) return;
    if (!tool.functions.some(followsFitConvention)) {
      const field = `tools[${t}].functions`;
      warnings.push(
        configWarning({
          path,
          field,
          line: lineOf(field),
          reason: `tool ${tool.id} declares results: {fit: true}, but none of its functions takes an integer budget beside a view of ${VIEWS.join(", ")}, so no budget is filled in`,
        }),
      );
    }
    tool.functions.forEach((fn, f) => {
      const properties = propertiesOf(fn);
      if (!("budget" in properties) || followsFitConvention(fn)) return;
      const missing = isViewEnum(properties.view) ? "is not an integer" : `has no view of ${VIEWS.join(", ")} beside it`;
      const field = `tools[${t}].functions[${f}].input_schema.properties.budget`;
      warnings.push(
        configWarning({
          path,
          field,
          line: lineOf(field),
          reason: `${fn.name} has a budget that ${missing}, so the runtime never fills it in (right for an amount of money)`,
        }),
      );
    });
  });
  return warnings;
}
