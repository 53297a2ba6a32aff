/**
 * The pure half of the MCP gateway (`oz0 mcp`, `client/mcp/gateway.ts`): how an MCP request
 * of the agent becomes a ToolCall, how the server's CallToolResult becomes a ToolResult, and
 * how the pipeline's answers become what the agent reads. No I/O here.
 */
import { randomUUID } from "node:crypto";
import type { Decision, ResultDelivered, ToolCall, ToolResult } from "../../schemas/types.ts";
import type { CallContext } from "../runtime-client.ts";
import { READ_RESULT_INPUT_SCHEMA, READ_RESULT_NAME } from "../read-result.ts";

/** A CallToolResult as MCP carries it: content items, structured content, isError, _meta. */
export interface ToolAnswer {
  content: Array<Record<string, unknown>>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

/** A tool as `tools/list` lists it. */
export interface ListedTool {
  name: string;
  description?: string;
  inputSchema: { type: "object"; [key: string]: unknown };
  outputSchema?: unknown;
  [key: string]: unknown;
}

/** What the events of a session name: the plugin (the manifest's name) and the tool (its id). */
export interface Target {
  readonly plugin: string;
  readonly tool: string;
}

/** The key of `_meta` on a refusal or a stop: the pipeline's verdict and why, for clients that show it. */
export const DECISION_META_KEY = "oz0/decision";

/** `oz.read_result` as the gateway lists it (OFF-6, OFF-7). */
export const READ_RESULT_TOOL: ListedTool = {
  name: READ_RESULT_NAME,
  description:
    "Reads parts of a tool result that was too big to return whole and was stored instead: pass the ref its stub names, " +
    "and a line range (120-180), a section (a heading or a key), a query, or a view with a budget of tokens.",
  inputSchema: READ_RESULT_INPUT_SCHEMA,
};

/**
 * The server's tools as they are, input schemas untouched, with `oz.read_result` after them.
 * Output schemas are left out: a result the pipeline fits or offloads carries the fit's
 * structured content (`{content, truncated, fit}` or the stub), which the server's output
 * schema does not describe, and a client that checks it would reject the call.
 *
 * When the run is finish-only (LOOP-7, LIM-8's soft wall) the server's tools are withdrawn and
 * only `oz.read_result` stays: it reads back what the run already holds, never calls the
 * server, and the answer may need it.
 */
export function listedTools(server: readonly ListedTool[], finishOnly = false): ListedTool[] {
  if (finishOnly) return [READ_RESULT_TOOL];
  const tools = server.filter((t) => t.name !== READ_RESULT_NAME).map(({ outputSchema: _o, ...t }) => t);
  return [...tools, READ_RESULT_TOOL];
}

/** Where a delivered result carries LOOP-7's words (processors/fit-results/processor.ts). */
export const NO_PROGRESS_META_KEY = "oz0/no_progress";

/** The reason codes and limits of a decision that leaves only the answer (LOOP-7, LIM-8's soft wall). */
export const FINISH_ONLY_REASONS: readonly string[] = ["NoProgress", "SoftWall"];
export const FINISH_ONLY_LIMITS: readonly string[] = ["loops.no_progress", "spend.soft_wall"];

/** A run where only the answer is left: the words the agent reads, and what the decision said. */
export interface FinishOnly {
  readonly words: string;
  readonly reason_code: string | null;
  readonly limit: string | null;
  /** A soft wall holds for the whole tree; no progress, for the run. */
  readonly scope: "tree" | "run";
}

/**
 * Whether a decision leaves only the answer: a `refuse` or a `report` whose reason code or limit
 * is no progress or the soft wall, or a refusal whose words say only the answer is left.
 */
export function finishOnlyOf(d: Decision): FinishOnly | null {
  if (d.verdict !== "refuse" && d.verdict !== "report") return null;
  const named = (d.reason_code !== null && FINISH_ONLY_REASONS.includes(d.reason_code)) || (d.limit !== null && FINISH_ONLY_LIMITS.includes(d.limit));
  const said = d.verdict === "refuse" && /only the answer is left/i.test(d.message);
  if (!named && !said) return null;
  const tree = d.limit === "spend.soft_wall" || d.reason_code === "SoftWall";
  const words = d.message !== "" ? d.message : "Only the answer is left: every tool is withdrawn; answer with what you have.";
  return { words, reason_code: d.reason_code, limit: d.limit, scope: tree ? "tree" : "run" };
}

/** LOOP-7: the no-progress words a delivered result carries in `_meta`, if any. */
export function noProgressOf(answer: ToolAnswer): FinishOnly | null {
  const words = answer._meta?.[NO_PROGRESS_META_KEY];
  return typeof words === "string" && words !== "" ? { words, reason_code: "NoProgress", limit: "loops.no_progress", scope: "run" } : null;
}

/** A call made anyway in a finish-only run: refused with the same words, the server never called. */
export function finishOnlyAnswer(f: FinishOnly): ToolAnswer {
  return failedAnswer(f.words, { [DECISION_META_KEY]: { verdict: "refuse", reason_code: f.reason_code, limit: f.limit, processor: "oz0-mcp" } });
}

/** Where a server's result names its own labels (OFF-9): a list of label names. */
export const LABELS_META_KEY = "oz0/labels";

/**
 * OFF-9: a result's labels, the union of the tool's manifest (`labels:`) and the result's
 * `_meta["oz0/labels"]`, each once, in that order. A `_meta` value that is not a list of label
 * names is an error: the result's labels cannot be known, so it must not be read as unlabelled.
 */
export function resultLabels(manifest: readonly string[], answer: ToolAnswer): { labels: string[] } | { error: string } {
  const own = answer._meta?.[LABELS_META_KEY];
  const labels = [...new Set(manifest)];
  if (own === undefined || own === null) return { labels };
  if (!Array.isArray(own)) return { error: `_meta["${LABELS_META_KEY}"] is ${JSON.stringify(own)}; expected a list of label names such as ["pii"]` };
  for (const l of own) {
    if (typeof l !== "string" || l.trim() === "") return { error: `_meta["${LABELS_META_KEY}"] holds ${JSON.stringify(l)}; expected a list of label names such as ["pii"]` };
    if (!labels.includes(l)) labels.push(l);
  }
  return { labels };
}

/** What the agent reads (and the pipeline is told) when a result's labels cannot be known: the result is withheld. */
export function unlabelledAnswer(name: string, error: string): ToolAnswer {
  return failedAnswer(`The result of ${name} is withheld: its labels cannot be known (OFF-9): ${error}. The tool must name its labels as a list of names.`);
}

/**
 * A call's arguments as the events carry them: the request's arguments with its `_meta` inside
 * (the convention of `processors/files/arguments.ts`); the MCP bookkeeping of the request
 * (`progressToken`) is the gateway's own and stays out.
 */
export function callArguments(args: Record<string, unknown> | undefined, meta: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = { ...(args ?? {}) };
  const { progressToken: _p, ...rest } = meta ?? {};
  if (Object.keys(rest).length > 0) out._meta = rest;
  else if (out._meta === undefined) delete out._meta;
  return out;
}

/** The decided arguments split back into the MCP request's arguments and its `_meta`. */
export function requestOf(args: Record<string, unknown>): { arguments: Record<string, unknown>; _meta?: Record<string, unknown> } {
  const { _meta, ...rest } = args;
  const meta = _meta !== null && typeof _meta === "object" && !Array.isArray(_meta) ? (_meta as Record<string, unknown>) : undefined;
  return meta && Object.keys(meta).length > 0 ? { arguments: rest, _meta: meta } : { arguments: rest };
}

/** A call of the server's function `name`, as published to oz0.tool-calls.requested. */
export function toolCallEvent(ctx: CallContext, target: Target, name: string, args: Record<string, unknown>, now = Date.now()): ToolCall {
  return {
    id: randomUUID(),
    tenant: ctx.tenant,
    tree_id: ctx.tree_id,
    job_id: ctx.job_id,
    run_id: ctx.run_id,
    call_id: randomUUID(),
    agent: ctx.agent,
    plugin: target.plugin,
    tool: target.tool,
    function: name,
    arguments: JSON.stringify(args),
    origin: ctx.origin ?? "model",
    context_used: ctx.context_used ?? null,
    spend_share: ctx.spend_share ?? null,
    ts: now,
  };
}

/** The server's answer to a decided call, inline or by ref (stored first), as published to oz0.tool-results; `size` is the answer's JSON in bytes. */
export function toolResultEvent(call: ToolCall, answer: ToolAnswer, body: ({ readonly content: string } | { readonly ref: string }) & { readonly size: number }, labels: readonly string[] = [], now = Date.now()): ToolResult {
  const inline = "content" in body;
  return {
    id: randomUUID(),
    tenant: call.tenant,
    tree_id: call.tree_id,
    job_id: call.job_id,
    run_id: call.run_id,
    call_id: call.call_id,
    agent: call.agent,
    plugin: call.plugin,
    tool: call.tool,
    function: call.function,
    arguments: call.arguments,
    origin: call.origin,
    is_error: answer.isError === true,
    content: inline ? body.content : null,
    content_ref: inline ? null : body.ref,
    size_bytes: body.size,
    labels: [...labels],
    ts: now,
  };
}

/** A failed call whose text is `text`: what the agent reads when the server is not called or failed. */
export function failedAnswer(text: string, meta?: Record<string, unknown>): ToolAnswer {
  return { content: [{ type: "text", text }], isError: true, ...(meta ? { _meta: meta } : {}) };
}

/** `stop` and `refuse`: the pipeline's words as a tool error; the server is never called. */
export function refusedAnswer(d: Decision): ToolAnswer {
  const text = d.message !== "" ? d.message : `The guard rails did not let this call go ahead (${d.verdict}${d.reason_code ? `, ${d.reason_code}` : ""}).`;
  return failedAnswer(text, { [DECISION_META_KEY]: { verdict: d.verdict, reason_code: d.reason_code, limit: d.limit, processor: d.processor } });
}

/** What the model reads for a delivered result: the pipeline's CallToolResult, failed when the pipeline says so. */
export function deliveredAnswer(d: ResultDelivered): ToolAnswer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(d.content);
  } catch {
    return failedAnswer(`The guard rails delivered a result that is not JSON (result ${d.input_id}); this is a fault of the pipeline: see its logs.`);
  }
  const answer = parsed !== null && typeof parsed === "object" && Array.isArray((parsed as ToolAnswer).content) ? (parsed as ToolAnswer) : { content: [{ type: "text", text: d.content }] };
  return d.is_error ? { ...answer, isError: true } : answer;
}

/** An error the server answered with (a protocol error, a crash), as the failed result the pipeline is told of. */
export function serverErrorAnswer(name: string, err: unknown): ToolAnswer {
  const message = err instanceof Error ? err.message : String(err);
  return failedAnswer(`The tool ${name} failed: ${message}`);
}

/** When a `wait` ends at the latest: its deadline (the decision's `numbers.deadline`), else `fallbackMs` from now. */
export function waitUntil(d: Decision, now: number, fallbackMs: number): number {
  const deadline = d.numbers.deadline;
  return typeof deadline === "number" && Number.isFinite(deadline) && deadline > 0 ? deadline : now + fallbackMs;
}

/** The approval a `wait` names in its evidence, if any. */
export function approvalOf(d: Decision): string | null {
  if (d.evidence === null) return null;
  try {
    const e = JSON.parse(d.evidence) as { approval?: { id?: unknown } };
    return typeof e.approval?.id === "string" ? e.approval.id : null;
  } catch {
    return null;
  }
}

/** The progress message of a call that waits for a person, with how to answer it. */
export function waitingMessage(d: Decision): string {
  const approval = approvalOf(d);
  const how = approval ? ` Answer with: oz0 approval approve ${d.job_id} ${approval} (or deny).` : "";
  return `${d.message}${how}`;
}

/** The text of a session with no answer from the pipeline in time: the call was not made. */
export function noAnswerText(name: string, err: unknown): string {
  const why = err instanceof Error ? err.message : String(err);
  return `The call of ${name} was not made: the guard rails did not decide it. ${why}`;
}
