/**
 * The fit processor: fits each tool result whose function adopts the fit convention and whose
 * call asked for it (any of view, budget, query, including a budget filled in by FIT-15), and
 * publishes what the model reads, with the fit note in the content's `fit` field and in
 * `_meta["oz0/fit"]` (FIT-13), the `truncated` flag (FIT-12), and a trace entry under "Results
 * fitted to a budget" with the view and the numbers, never the omitted sentence (FIT-14).
 *
 * A function adopts the convention when its tool's manifest (the config table's `plugin` row)
 * says `results: {fit: true}` and its input schema has an integer `budget` beside a `view` enum
 * of the four views, the same test the budget fill-in makes (`convention.ts`). Every other
 * result is answered exactly as the tool answered it (FIT-8), byte for byte: a call with none
 * of the three arguments, a function whose `view`, `budget` or `query` are its own (a search
 * term, an amount of money), a tool the pipeline has no manifest for, and a result that already
 * carries a fit note (`_meta["oz0/fit"]`: the tool fitted itself, and its trace entry says so).
 *
 * After fitting, a result that weighs more than the job's offload threshold is stored whole as
 * a file of the tree and the model reads a stub (OFF-3), whatever its tool; one above 31 MiB is
 * a failed call (OFF-1). The trace shows an offload's size and digest, never its outline
 * (OFF-11). The file keeps the result's labels (OFF-9), so read_result withholds it from an
 * agent without the clearance.
 *
 * Every result the runtime awaits gets an answer: arguments of a conventional function that
 * the convention cannot use (a view that is not one of the four, a budget that is not a
 * positive whole number) are answered as a failed call that says so, rather than dead-lettered.
 */
import type { PluginManifest } from "../../config/plugin.ts";
import type { OffloadThreshold } from "../../config/resolve.ts";
import { fit, META_KEY, wanted } from "../fit/index.ts";
import { offloadResult, type OffloadEnv } from "../offload/index.ts";
import type { ResultDelivered, ToolResult, TraceEntry } from "../../schemas/types.ts";
import { parseArguments } from "../call-arguments.ts";
import { deriveId } from "../runner/ids.ts";
import { defineProcessor, type Emit, type Outcome } from "../runner/processor.ts";
import { extractEmbeddedFiles } from "../files/embedded.ts";
import type { ConfigView } from "../runner/config-table.ts";
import { adoptsFitConvention, manifestOf } from "./convention.ts";
import { fittable, readMcpResult, type McpResult } from "./mcp.ts";

export const FIT_SECTION = "Results fitted to a budget";
const VIEWS = ["stub", "summary", "section", "full"] as const;
type View = (typeof VIEWS)[number];

export const OFFLOAD_SECTION = "Results offloaded";

export interface FitEnv extends OffloadEnv {
  /** The stored bytes of a result published by ref, or null when its tree has no such file. */
  load(result: ToolResult): Promise<Buffer | null>;
  /** The job's offload threshold (OFF-13): the one it started with, kept for the job. */
  threshold(result: ToolResult): OffloadThreshold | Promise<OffloadThreshold>;
  /** The plugin manifests (FIT-8): only a function whose tool's manifest adopts the fit convention is fitted. */
  readonly config: ConfigView;
}

interface FitArgs {
  view?: View;
  budget?: number;
  query?: string;
}

/** The convention's arguments of a call, or why they cannot be used. */
export function fitArguments(args: Record<string, unknown>): FitArgs | { error: string } {
  const out: FitArgs = {};
  const { view, budget, query } = args;
  if (view !== undefined && view !== null) {
    if (typeof view !== "string" || !(VIEWS as readonly string[]).includes(view)) return { error: `view must be one of ${VIEWS.join(", ")}; the call gave ${JSON.stringify(view)}` };
    out.view = view as View;
  }
  if (budget !== undefined && budget !== null) {
    if (typeof budget !== "number" || !Number.isInteger(budget) || budget <= 0) return { error: `budget must be a whole number of tokens above 0; the call gave ${JSON.stringify(budget)}` };
    out.budget = budget;
  }
  if (query !== undefined && query !== null) {
    if (typeof query !== "string") return { error: `query must be text: a heading, a definition's name, a path, <path>#<n> or a line range; the call gave ${JSON.stringify(query)}` };
    if (query !== "") out.query = query;
  }
  return out;
}


function delivered(r: ToolResult, content: string, extra: Partial<ResultDelivered> = {}): ResultDelivered {
  return {
    id: deriveId("fit-results", r.id),
    input_id: r.id,
    processor: "fit-results",
    tenant: r.tenant,
    tree_id: r.tree_id,
    job_id: r.job_id,
    run_id: r.run_id,
    call_id: r.call_id,
    plugin: r.plugin,
    tool: r.tool,
    function: r.function,
    is_error: r.is_error,
    content,
    truncated: false,
    fit: null,
    ts: r.ts,
    ...extra,
  };
}

function failedCall(r: ToolResult, message: string): Emit {
  const content = JSON.stringify({ content: [{ type: "text", text: message }], isError: true });
  return { to: "oz0.results-delivered", key: r.run_id, value: delivered(r, content, { is_error: true }) };
}

export interface FitNote {
  view: string;
  budget?: number | null;
  size: number;
  tokens: number;
  omitted: string;
  reason?: string;
}

function traceEntry(r: ToolResult, note: FitNote): TraceEntry {
  const numbers: Record<string, number> = { size: note.size, tokens: note.tokens };
  if (typeof note.budget === "number") numbers.budget = note.budget;
  const facts: Record<string, string> = { view: note.view, function: `${r.tool}.${r.function}` };
  if (note.reason) facts.reason = note.reason;
  return {
    id: deriveId("fit-results", "trace", r.id),
    processor: "fit-results",
    tenant: r.tenant,
    tree_id: r.tree_id,
    job_id: r.job_id,
    run_id: r.run_id,
    section: FIT_SECTION,
    subject: r.call_id,
    facts,
    numbers,
    ts: r.ts,
  };
}

/** The trace entry of a result its tool fitted itself (FIT-14), when its note has the numbers; else none. */
function selfFittedEntry(r: ToolResult, note: unknown): Emit[] {
  const n = note as Partial<FitNote> | null;
  if (n === null || typeof n !== "object" || typeof n.view !== "string" || typeof n.size !== "number" || typeof n.tokens !== "number") return [];
  const entry = traceEntry(r, { view: n.view, budget: typeof n.budget === "number" ? n.budget : null, size: n.size, tokens: n.tokens, omitted: "" });
  return [{ to: "oz0.trace", key: r.tree_id, value: { ...entry, facts: { ...entry.facts, by: "tool" } } }];
}

/**
 * Fits one result; pure given its text and its tool's manifest (undefined when the pipeline has
 * none). Only a function that adopts the convention is fitted (FIT-8); a result its tool
 * fitted itself goes on as the tool sent it (FIT-13).
 */
export function fitResult(r: ToolResult, text: string, manifest: PluginManifest | undefined): Outcome {
  const args = parseArguments(r.arguments);
  if (typeof args === "string") return { invalid: args };
  const mcp = readMcpResult(text);
  if ("error" in mcp) return { invalid: mcp.error };
  const asSent: Emit = { to: "oz0.results-delivered", key: r.run_id, value: delivered(r, text) };
  // FIT-8: view, budget and query of a function that does not adopt the convention are its own.
  if (!adoptsFitConvention(r, manifest)) return { emits: [asSent] };
  // FIT-13: a fit note is already there, so the tool fitted its answer: never fitted again.
  const own = mcp._meta?.[META_KEY];
  if (own !== undefined) {
    const truncated = (mcp.structuredContent as { truncated?: unknown } | undefined)?.truncated === true;
    const told = { ...asSent, value: delivered(r, text, { truncated, fit: JSON.stringify(own) }) };
    return { emits: [told, ...selfFittedEntry(r, own)] };
  }
  const wantedArgs = fitArguments(args);
  if ("error" in wantedArgs) return { emits: [failedCall(r, `The result was not fitted: ${wantedArgs.error}.`)] };
  const { view, budget, query } = wantedArgs;
  if (!wanted(view, budget, query)) return { emits: [asSent] };
  const f = fit(fittable(mcp), { view, budget, query, name: `${r.tool}.${r.function}` });
  const note = f.meta() as FitNote;
  const answer = { content: f.text, truncated: f.truncated, fit: note };
  const result: McpResult = {
    content: [{ type: "text", text: JSON.stringify(answer) }],
    structuredContent: answer,
    ...(mcp.isError ? { isError: true } : {}),
    _meta: { ...mcp._meta, [META_KEY]: note },
  };
  return {
    emits: [
      { to: "oz0.results-delivered", key: r.run_id, value: delivered(r, JSON.stringify(result), { truncated: f.truncated, fit: JSON.stringify(note) }) },
      { to: "oz0.trace", key: r.tree_id, value: traceEntry(r, note) },
    ],
  };
}

/**
 * What is weighed and kept when a result is offloaded: a fitted result's text itself (with its
 * fit note in `_meta`), not the `{content, truncated, fit}` envelope around it, so the file's
 * lines are the text's and `oz.read_result` reads them by range; any other result as it is,
 * read once here (a result that does not read is left as text, for the offload to say why).
 */
export function offloadable(content: string): string | McpResult {
  const mcp = readMcpResult(content);
  if ("error" in mcp) return content;
  if (mcp._meta?.[META_KEY] === undefined) return mcp;
  const fitted = mcp.structuredContent as { content?: unknown } | undefined;
  if (typeof fitted?.content !== "string") return content;
  return { content: [{ type: "text", text: fitted.content }], ...(mcp.isError ? { isError: true } : {}), _meta: mcp._meta };
}

/** Offloads what the model would read when it is too big (OFF-1, OFF-3, OFF-12). */
async function offloaded(r: ToolResult, outcome: Outcome, env: FitEnv): Promise<Outcome> {
  if ("invalid" in outcome) return outcome;
  const emits = [...outcome.emits];
  const i = emits.findIndex((e) => e.to === "oz0.results-delivered");
  const first = emits[i];
  if (!first) return outcome;
  const value = first.value as ResultDelivered;
  const { decision, delivered: replaced } = await offloadResult(
    // OFF-9: the result's labels are kept with the file, so read_result's clearance check applies to it.
    { result: offloadable(value.content), threshold: await env.threshold(r), origin: r.origin, name: `${r.tool}.${r.function}`, tenant: r.tenant, tree: r.tree_id, labels: r.labels },
    env,
  );
  if (replaced === null) return outcome;
  emits[i] = { ...first, value: { ...value, content: JSON.stringify(replaced), is_error: decision.action === "fail" || value.is_error } };
  if (decision.action === "offload") {
    const o = decision.stub.offloaded;
    emits.push({
      to: "oz0.trace",
      key: r.tree_id,
      value: {
        id: deriveId("fit-results", "offload", r.id),
        processor: "fit-results",
        tenant: r.tenant,
        tree_id: r.tree_id,
        job_id: r.job_id,
        run_id: r.run_id,
        section: OFFLOAD_SECTION,
        subject: r.call_id,
        facts: { ref: o.ref, kind: o.kind, function: `${r.tool}.${r.function}` },
        numbers: { size: o.size, tokens: o.tokens, lines: o.lines },
        ts: r.ts,
      } satisfies TraceEntry,
    });
  }
  return { emits };
}

/** Where the model reads why only the answer is left (LOOP-7), beside the result's own items. */
export const NO_PROGRESS_META = "oz0/no_progress";

/**
 * LOOP-7: the result that crossed the no-progress line (loop-results set its words) tells the
 * model why: the words follow the result's own items, as one more text item, and are in its
 * `_meta` under NO_PROGRESS_META. They are added after fitting and offloading, so they are never
 * cut by a budget nor left in a file.
 */
export function withNoProgress(r: ToolResult, outcome: Outcome): Outcome {
  const words = r.no_progress;
  if (!words || "invalid" in outcome) return outcome;
  return {
    emits: outcome.emits.map((e) => {
      if (e.to !== "oz0.results-delivered") return e;
      const value = e.value as ResultDelivered;
      const mcp = JSON.parse(value.content) as McpResult;
      const told: McpResult = { ...mcp, content: [...mcp.content, { type: "text", text: words }], _meta: { ...mcp._meta, [NO_PROGRESS_META]: words } };
      return { ...e, value: { ...value, content: JSON.stringify(told) } };
    }),
  };
}

/**
 * FILE-1: the files a result embeds (an MCP embedded resource under an `oz0-file:sha256:` URI)
 * are stored as files of the call's tree; the model reads a link with the URI alone. The
 * result's text is left exactly as it was when it embeds none.
 */
async function storeEmbeddedFiles(r: ToolResult, text: string, env: FitEnv): Promise<{ text: string } | { invalid: string }> {
  if (!text.includes("oz0-file:sha256:")) return { text };
  const mcp = readMcpResult(text);
  if ("error" in mcp) return { text };
  const extracted = extractEmbeddedFiles(mcp);
  if ("error" in extracted) return { invalid: extracted.error };
  if (extracted.files.length === 0) return { text };
  for (const f of extracted.files) {
    const { ref } = await env.storeFile({ tenant: r.tenant, tree: r.tree_id }, f.bytes, { labels: r.labels });
    if (ref !== f.ref) throw new Error(`the file store named an embedded file ${ref}, but the result names it ${f.ref}: both must be the SHA-256 of the bytes`);
  }
  return { text: JSON.stringify(extracted.result) };
}

export const fitResultsProcessor = defineProcessor<ToolResult, FitEnv>({
  name: "fit-results",
  // After the loop detector: loop-results passes every result on, with the no-progress words on the one that crossed the line.
  input: "oz0.tool-results.watched",
  outputs: ["oz0.results-delivered", "oz0.trace"],
  validate(r) {
    const reasons: string[] = [];
    for (const field of ["id", "tenant", "tree_id", "job_id", "run_id", "call_id"] as const) {
      if (!r[field]) reasons.push(`${field} is empty: the runtime must set it on every event`);
    }
    if ((r.content === null) === (r.content_ref === null)) reasons.push("a result carries exactly one of content and content_ref");
    if (r.size_bytes < 0) reasons.push(`size_bytes is ${r.size_bytes}: a size cannot be negative`);
    if (r.labels.some((l) => l === "")) reasons.push("a label is empty: each label names what the result holds, such as pii");
    return reasons;
  },
  async process(records, env) {
    const out: Outcome[] = [];
    for (const { value: r } of records) {
      const text = r.content ?? (await env.load(r))?.toString("utf8");
      if (text === undefined) {
        out.push({ invalid: `content_ref ${r.content_ref} is not a file of tree ${r.tree_id} of tenant ${r.tenant}: store the result before publishing its ref` });
        continue;
      }
      const files = await storeEmbeddedFiles(r, text, env);
      out.push("invalid" in files ? files : withNoProgress(r, await offloaded(r, fitResult(r, files.text, manifestOf(env.config, r.plugin)), env)));
    }
    return out;
  },
});
