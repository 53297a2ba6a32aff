/**
 * The read-result processor (OFF-6..OFF-9): answers each call of oz.read_result on
 * `oz0.tool-calls` (after the budget fill-in) with what the model reads, on
 * `oz0.results-delivered` as fit-results answers a tool result, and a trace entry under
 * "Results read back". Every other call is not its own: it emits nothing for it.
 *
 * - OFF-7: a call in a job whose agents list no plugin tool is answered "not offered".
 * - OFF-8: the reader is the call binding's tenant and tree, never an argument; another tree's
 *   or tenant's ref and a ref never stored get the one same "not found" answer.
 * - OFF-9: a result with a label above the agent's clearance is withheld, without content;
 *   one read joins its labels into the job.
 * - OFF-6: section, range, query, view and budget are the fit library's; the answer carries the
 *   fit note in its content's `fit` field and in `_meta["oz0/fit"]`. What is read back is never
 *   offloaded again: the budget bounds it, and the fit library's caps bound it without one.
 *
 * The model's mistakes in the arguments are failed calls that say what to change; a call the
 * runtime published wrong (empty IDs, arguments that are not a JSON object) is dead-lettered.
 */
import type { AgentDefinition } from "../../config/agent.ts";
import type { ResultDelivered, ToolCall, TraceEntry } from "../../schemas/types.ts";
import { FileNotFound } from "../../store/file-errors.ts";
import { parseArguments } from "../call-arguments.ts";
import { fitRead, META_KEY, readForFit, type Doc } from "../fit/index.ts";
import type { FitNote } from "../fit/types.ts";
import type { McpResult } from "../fit-results/mcp.ts";
import type { ConfigView } from "../runner/config-table.ts";
import { deriveId } from "../runner/ids.ts";
import { defineProcessor, type Emit, type Outcome } from "../runner/processor.ts";
import { readArguments, type ReadArguments } from "./arguments.ts";
import { aboveClearanceWords, labelsAboveClearance, offersReadResult } from "./offered.ts";
import { isReadResult, READ_RESULT_NAME } from "./tool.ts";
import { endedWords, endingFor, NO_STANDING, standingsOf, type Standing } from "../limits/standing.ts";
import type { StandingStore } from "../limits/store.ts";

export const READ_SECTION = "Results read back";
const PROCESSOR = "read-result";

/** What one read needs of the world. */
export interface ReadResultEnv {
  /** Agent definitions (OFF-7, OFF-9). */
  readonly config: ConfigView;
  /**
   * The stored result, read for fitting, and its labels when the reader's tree may read the
   * ref, else null (FILE-2: never stored, another tree's or another tenant's alike).
   * `readResultEnv` reads it with `FileStore.read` (FileNotFound as null) and keeps what it read
   * for the next read of the same ref, which then asks the store for the reader's grant alone.
   */
  readFile(reader: { readonly tenant: string; readonly tree: string }, ref: string): Promise<ReadFile | null>;
  /** Joins labels into the job (OFF-9) and returns how many it holds now; idempotent. */
  joinLabels(job: { readonly tenant: string; readonly tree: string; readonly job: string }, labels: readonly string[]): Promise<number>;
  /** Endings bind: a job that ended reads nothing more (processors/limits/standing.ts). Left out, nothing is checked. */
  readonly standing?: StandingStore;
}

/** A stored result as a read answers from it. */
export interface ReadFile {
  /** Its size in bytes. */
  readonly size: number;
  readonly labels: readonly string[];
  /** Its text read for fitting (`readFile` below); the same ref reads into the same document. */
  readonly doc: Doc;
}

/** A stored result's bytes read for fitting, as every read of it reads them. */
export function readFileDoc(bytes: Buffer): Doc {
  return readForFit(bytes.toString("utf8"));
}

/** How a read ended, as the trace names it. */
export type ReadOutcome = "read" | "not_offered" | "bad_arguments" | "not_found" | "withheld" | "job_ended";

function delivered(call: ToolCall, result: McpResult, extra: Partial<ResultDelivered> = {}): Emit {
  const value: ResultDelivered = {
    id: deriveId(PROCESSOR, call.id),
    input_id: call.id,
    processor: PROCESSOR,
    tenant: call.tenant,
    tree_id: call.tree_id,
    job_id: call.job_id,
    run_id: call.run_id,
    call_id: call.call_id,
    plugin: call.plugin,
    tool: call.tool,
    function: call.function,
    is_error: result.isError === true,
    content: JSON.stringify(result),
    truncated: false,
    fit: null,
    ts: call.ts,
    ...extra,
  };
  return { to: "oz0.results-delivered", key: call.run_id, value };
}

function failed(call: ToolCall, message: string): Emit {
  return delivered(call, { content: [{ type: "text", text: message }], isError: true });
}

/** The trace entry of one read: its outcome and numbers, never the part's name, the omitted sentence or the labels. */
function traceEntry(call: ToolCall, outcome: ReadOutcome, ref: string | null, numbers: Record<string, number> = {}, facts: Record<string, string> = {}): Emit {
  const value: TraceEntry = {
    id: deriveId(PROCESSOR, "trace", call.id),
    processor: PROCESSOR,
    tenant: call.tenant,
    tree_id: call.tree_id,
    job_id: call.job_id,
    run_id: call.run_id,
    section: READ_SECTION,
    subject: call.call_id,
    facts: { outcome, function: READ_RESULT_NAME, ...(ref !== null ? { ref } : {}), ...facts },
    numbers,
    ts: call.ts,
  };
  return { to: "oz0.trace", key: call.tree_id, value };
}

/** The answer for a stored result the reader may read: fitted, with its note (OFF-6). */
export function readBack(call: ToolCall, args: ReadArguments, doc: Doc): { emits: Emit[]; note: FitNote } {
  const f = fitRead(doc, { view: args.view, budget: args.budget, query: args.query });
  const note = f.meta();
  const answer = { content: f.text, truncated: f.truncated, fit: note };
  const result: McpResult = { content: [{ type: "text", text: JSON.stringify(answer) }], structuredContent: answer, _meta: { [META_KEY]: note } };
  return { emits: [delivered(call, result, { truncated: f.truncated, fit: JSON.stringify(note) })], note };
}

/** Answers one call of oz.read_result. */
export async function readResult(call: ToolCall, env: ReadResultEnv, standing: Standing = NO_STANDING): Promise<Outcome> {
  const args = parseArguments(call.arguments);
  if (typeof args === "string") return { invalid: args };
  const ended = endingFor(standing, call.id);
  if (ended) return { emits: [failed(call, endedWords(call.job_id, ended)), traceEntry(call, "job_ended", null, {}, { reason: ended.code })] };
  const lookup = (name: string) => env.config.get("agent", name) as AgentDefinition | undefined;
  if (!offersReadResult(call.agent, lookup)) {
    const message = `oz.read_result is not offered in this job: none of its agents lists a plugin tool, so none of its results was kept as a file to read back.`;
    return { emits: [failed(call, message), traceEntry(call, "not_offered", null)] };
  }
  const wanted = readArguments(args);
  if ("error" in wanted) return { emits: [failed(call, `The result was not read: ${wanted.error}.`), traceEntry(call, "bad_arguments", null)] };
  const { ref } = wanted;
  // OFF-8: the tenant and tree of the call binding; what the arguments say of either is never read.
  const file = await env.readFile({ tenant: call.tenant, tree: call.tree_id }, ref);
  if (file === null) return { emits: [failed(call, `${new FileNotFound(ref).message}.`), traceEntry(call, "not_found", ref)] };
  const above = labelsAboveClearance(file.labels, lookup(call.agent));
  if (above.length > 0) {
    const message = `The result ${ref} is withheld by clearance: ${aboveClearanceWords(above.length, call.agent)}, so it is not read into this job.`;
    return { emits: [failed(call, message), traceEntry(call, "withheld", ref, { bytes: file.size, labels: file.labels.length })] };
  }
  const joined = file.labels.length > 0 ? await env.joinLabels({ tenant: call.tenant, tree: call.tree_id, job: call.job_id }, file.labels) : null;
  const { emits, note } = readBack(call, wanted, file.doc);
  const numbers: Record<string, number> = { bytes: file.size, size: note.size, tokens: note.tokens, labels: file.labels.length };
  if (note.budget !== null) numbers.budget = note.budget;
  if (joined !== null) numbers.job_labels = joined;
  const facts: Record<string, string> = { view: note.view, ...(wanted.by ? { by: wanted.by } : {}), ...(note.reason ? { reason: note.reason } : {}) };
  return { emits: [...emits, traceEntry(call, "read", ref, numbers, facts)] };
}

export const readResultProcessor = defineProcessor<ToolCall, ReadResultEnv>({
  name: PROCESSOR,
  input: "oz0.tool-calls",
  outputs: ["oz0.results-delivered", "oz0.trace"],
  validate(call) {
    // Every other call belongs to other processors, which judge it themselves.
    if (!isReadResult(call)) return [];
    const reasons: string[] = [];
    for (const field of ["id", "tenant", "tree_id", "job_id", "run_id", "call_id"] as const) {
      if (!call[field]) reasons.push(`${field} is empty`);
    }
    return reasons;
  },
  async process(records, env) {
    const out: Outcome[] = [];
    const reads = records.map((r) => r.value).filter(isReadResult);
    const standings = env.standing && reads.length > 0 ? await standingsOf(env.standing, env.config, reads) : new Map<ToolCall, Standing>();
    for (const { value: call } of records) out.push(isReadResult(call) ? await readResult(call, env, standings.get(call)) : { emits: [] });
    return out;
  },
});
