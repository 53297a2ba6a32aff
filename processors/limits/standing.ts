/**
 * Endings bind (LIM-1, LIM-2, LIM-3, LIM-8, LOOP-5, LOOP-6, FILE-5, TOOL-2): how a job stands
 * when one of its inputs arrives, read by every processor that admits something of the job (a
 * model ask, a tool call, a child start, a file read).
 *
 * A job that ended, or whose start was refused, gets every later ask, call, child start and
 * read refused with its ending's reason: a runtime that keeps going gets nothing. Its ending is
 * kept in its tree's limits hash (`job:<id>:end`, the first one wins) by the processor whose
 * decision ended it, with the ID of the input that ended it, so a replay of that input is
 * decided as it was the first time. A job's own `ended` event (`job:<id>:ended`) ends it too. Its
 * timeout (`limits.timeout`, `run --timeout`) is checked against each input's time, and a tree
 * past its soft wall (LIM-8) leaves only the answer: tool calls are refused with its words.
 *
 * Pure: this reads the hash's fields (`standingFields`, store.ts) and decides what they mean;
 * the port that reads and keeps them is `StandingStore` (store.ts), in Redis (redis-store.ts:
 * one HMGET per job, one script per ending) and in memory (memory-store.ts).
 */
import type { AgentDefinition } from "../../config/agent.ts";
import type { Decision } from "../../schemas/types.ts";
import type { ConfigView } from "../runner/config-table.ts";
import type { Emit } from "../runner/processor.ts";
import { duration } from "./decisions.ts";
import { jobTimeout } from "./job-timeout.ts";
import type { StandingStore } from "./store.ts";
import { NO_LIMIT } from "./tree-settings.ts";

/** How a job ended: the reason code and limit of the decision that ended it, and its words. */
export interface Ending {
  readonly code: string;
  readonly limit: string | null;
  readonly message: string;
  /** The input whose decision ended the job: its replay is decided as the first time. */
  readonly by: string;
  /** The processor that decided it ("" when not known). */
  readonly processor?: string;
}

/** What a job's inputs meet: its ending, or (for tool calls) the soft wall's words, or nothing. */
export interface Standing {
  readonly ending: Ending | null;
  /** LIM-8: the tree passed its soft wall: only the answer is left. */
  readonly finishOnly: string | null;
}

export const NO_STANDING: Standing = { ending: null, finishOnly: null };

/** The words every later input of an ended job reads. */
export function endedWords(jobId: string, ending: Pick<Ending, "code" | "message">): string {
  return `Job ${jobId} has ended (${ending.code}): nothing more runs in it. ${ending.message}`.trim();
}

function parseEnding(raw: string): Ending | null {
  try {
    const e = JSON.parse(raw) as Partial<Ending>;
    if (typeof e.code !== "string" || typeof e.message !== "string") return null;
    return { code: e.code, limit: typeof e.limit === "string" ? e.limit : null, message: e.message, by: typeof e.by === "string" ? e.by : "", processor: typeof e.processor === "string" ? e.processor : "" };
  } catch {
    return null;
  }
}

/** The soft wall's line, in micro-dollars, as spend.ts crosses it. */
function softWallLine(budget: number, partsPerMillion: number): bigint {
  return (BigInt(budget) * BigInt(partsPerMillion) + 999_999n) / 1_000_000n;
}

/**
 * A job's standing at `now` (the input's time), from the fields `standingFields` (store.ts) names, pure.
 * `agentOf` gives the definition of the job's agent (its limits.timeout), or of `fallbackAgent`
 * when the tree does not know the job's agent.
 */
export function standingOf(
  values: ReadonlyArray<string | null | undefined>,
  now: number,
  agentOf: (name: string) => AgentDefinition | undefined,
  fallbackAgent: string,
  /** Whether the job's timeout is checked here: the limits scripts check it themselves, with the tree's own answer. */
  options: { readonly timeout?: boolean } = {},
): Standing {
  const [end, ended, agent, at, tmo, sess, budget, wall, spent] = values;
  if (end) {
    const ending = parseEnding(end);
    if (ending) return { ending, finishOnly: null };
  }
  if (ended === "1") {
    return { ending: { code: "JobEnded", limit: null, message: "The job's runtime reported its end.", by: "" }, finishOnly: null };
  }
  const start = at === null || at === undefined ? -1 : Number(at);
  if (start >= 0 && options.timeout !== false) {
    const t = jobTimeout(agentOf(agent || fallbackAgent), { jobStart: start, jobTimeout: tmo === null || tmo === undefined ? -1 : Number(tmo), jobSession: sess === "1" });
    if (t.ms !== null && t.deadline !== NO_LIMIT && now > t.deadline) {
      const raise = t.limit === "run --timeout" ? "Start it again with a longer --timeout to allow more." : "Raise limits.timeout of the agent to allow more.";
      return { ending: { code: "AgentTimeout", limit: t.limit, message: `The job ran past its ${duration(t.ms)} (${t.limit}): it ends with AgentTimeout. ${raise}`, by: "" }, finishOnly: null };
    }
  }
  const b = budget === null || budget === undefined ? NO_LIMIT : Number(budget);
  const w = wall === null || wall === undefined ? 0 : Number(wall);
  if (b !== NO_LIMIT && b > 0 && w > 0 && BigInt(Math.floor(Number(spent ?? 0))) >= softWallLine(b, w)) {
    return { ending: null, finishOnly: `The job tree has spent ${w / 10_000}% of its budget (spend.soft_wall): only the answer is left; report what you have.` };
  }
  return NO_STANDING;
}

/** The ending an input meets, unless it is the input that ended the job (its replay). */
export function endingFor(standing: Standing, inputId: string): Ending | null {
  const e = standing.ending;
  return e !== null && e.by !== inputId ? e : null;
}

/** An ending to keep: the job it ends and why. */
export interface EndingRecord {
  readonly tenant: string;
  readonly tree: string;
  readonly job: string;
  readonly ending: Ending;
}

/** Reason codes of a refusal that ends the job although its verdict is `refuse`. */
const ENDING_REFUSALS = new Set([
  "oz0_tree_limit",
  "TreeLimitExceeded",
  "UsageLimitExceeded",
  "AgentTimeout",
  "DelegationNotAllowed",
  // FILE-4, FILE-5: a start refused by the file rules (processors/files-jobs/rules.ts).
  "tree_holds_files",
  "tree_is_turn",
  "content_permission",
]);

/**
 * The endings a processor's decisions make, pure: a `stop` ends the job it is addressed to; a
 * child's refusal or stop (a decision whose subject is another job of the tree, on
 * `oz0.admissions`) ends the child, whose start was refused; a model call's `oz0_tree_limit`
 * ends the job (it fails with TreeLimitExceeded). A wait, an allow and a report end nothing, nor
 * does a child's ask refused for `fan_out`, which may be asked again once another child ends.
 */
export function endingsOf(emits: readonly Emit[], childSubjects: boolean): EndingRecord[] {
  const out: EndingRecord[] = [];
  for (const e of emits) {
    if (e.to !== "oz0.admissions" && e.to !== "oz0.call-decisions") continue;
    const d = e.value as Decision;
    if (d.verdict !== "stop" && d.verdict !== "refuse") continue;
    const child = childSubjects && e.to === "oz0.admissions" && d.subject !== d.job_id;
    if (!child && d.verdict === "refuse" && !ENDING_REFUSALS.has(d.reason_code ?? "")) continue;
    // Running children at once (fan_out) is a passing limit: the ask may be made again once one ends.
    if (child && d.verdict === "refuse" && d.limit === "limits.tree.fan_out") continue;
    const job = child ? d.subject : d.job_id;
    if (!job) continue;
    out.push({ tenant: d.tenant, tree: d.tree_id, job, ending: { code: d.reason_code ?? "Refused", limit: d.limit, message: d.message, by: d.input_id, processor: d.processor } });
  }
  return out;
}

/** The standing of each of a batch's inputs, by its job (read once per job of the batch). */
export async function standingsOf<T extends { tenant: string; tree_id: string; job_id: string; agent?: string | null; ts: number }>(
  store: StandingStore,
  config: ConfigView,
  inputs: readonly T[],
  options: { readonly timeout?: boolean } = {},
): Promise<Map<T, Standing>> {
  const jobs = new Map<string, { tenant: string; tree: string; job: string }>();
  const keyOf = (x: T) => `${x.tenant}\u0000${x.tree_id}\u0000${x.job_id}`;
  for (const x of inputs) if (x.job_id && x.tree_id && x.tenant && !jobs.has(keyOf(x))) jobs.set(keyOf(x), { tenant: x.tenant, tree: x.tree_id, job: x.job_id });
  const list = [...jobs.entries()];
  const values = await store.read(list.map(([, j]) => j));
  const byJob = new Map(list.map(([k], i) => [k, values[i] ?? []]));
  const agentOf = (name: string) => (name ? (config.get("agent", name) as AgentDefinition | undefined) : undefined);
  const out = new Map<T, Standing>();
  for (const x of inputs) {
    const v = byJob.get(keyOf(x));
    out.set(x, v ? standingOf(v, x.ts, agentOf, x.agent ?? "", options) : NO_STANDING);
  }
  return out;
}
