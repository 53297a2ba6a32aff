/**
 * What the load generator plays, deterministic by seed: job trees of several tenants, each a
 * list of steps a runtime takes in order, every step one event on the pipeline's topics.
 *
 * | tree | agent | what it does |
 * | --- | --- | --- |
 * | pager | load-pager | model calls between get_page calls that page through a document, results fitted to a budget, a view or a line range |
 * | reader | load-reader | one result over the offload threshold (stored in MinIO), then oz.read_result calls paging through it |
 * | looper | load-looper | the same call again and again (loops reported, then no progress) |
 * | cycler | load-cycler | two calls in turn (a cycle; on_loop stop ends the job) |
 * | delegator | load-lead | child asks on oz0.jobs (one more than its fan-out, so the last is refused), each child started, working and ended |
 * | spender | load-spender | large model calls under a small budget, until the budget stops the tree |
 * | chatter | load-pager | tool results of a few bytes |
 *
 * Text comes from a corpus of real documents; sizes run from a few bytes to several corpus
 * files joined, over the reader's offload threshold. Event IDs carry `tag`, so two runs never
 * share state; the plan itself depends only on the seed, the event count and the corpus.
 */
import { createHash } from "node:crypto";
import { random } from "../../client/synthetic.ts";
import type { ReadResultArgs } from "../../client/runtime-client.ts";
import type { JobEvent, ModelCall, ToolCall, ToolResult } from "../../schemas/types.ts";

export const TREE_KINDS = ["pager", "reader", "looper", "cycler", "delegator", "spender", "chatter"] as const;
export type TreeKind = (typeof TREE_KINDS)[number];

/** How often each kind of tree is drawn, out of the sum. */
export const TREE_WEIGHTS: Readonly<Record<TreeKind, number>> = { pager: 25, reader: 20, looper: 10, cycler: 8, delegator: 17, spender: 10, chatter: 10 };

export const TENANTS = ["load-acme", "load-globex", "load-initech"] as const;

/** The agents of `bench/load/config/agents`, by tree kind. */
export const AGENT_OF: Readonly<Record<TreeKind, string>> = {
  pager: "load-pager",
  reader: "load-reader",
  looper: "load-looper",
  cycler: "load-cycler",
  delegator: "load-lead",
  spender: "load-spender",
  chatter: "load-pager",
};
export const HELPER_AGENT = "load-helper";
/** load-lead's `limits.tree.fan_out`: a delegator asks for one child more. */
export const LEAD_FAN_OUT = 2;
export const PLUGIN = "load_docs";

export type Step =
  /** A root's start is answered by nothing; a child's start is answered on oz0.admissions. */
  | { readonly kind: "job_started"; readonly event: JobEvent }
  | { readonly kind: "child_ask"; readonly event: JobEvent }
  | { readonly kind: "model_ask"; readonly event: ModelCall }
  | { readonly kind: "model_usage"; readonly event: ModelCall }
  | { readonly kind: "tool_call"; readonly event: ToolCall }
  | { readonly kind: "tool_result"; readonly event: ToolResult }
  /** `of`: the tool result whose offloaded ref is read; `ref` stands in when its answer names none. */
  | { readonly kind: "read_result"; readonly event: ToolCall; readonly of: string; readonly ref: string; readonly args: Omit<ReadResultArgs, "ref"> }
  | { readonly kind: "job_ended"; readonly event: JobEvent };

export type StepKind = Step["kind"];
export const STEP_KINDS: readonly StepKind[] = ["job_started", "child_ask", "model_ask", "model_usage", "tool_call", "tool_result", "read_result", "job_ended"];

export interface Tree {
  readonly kind: TreeKind;
  readonly tenant: string;
  readonly tree_id: string;
  /** In the order a runtime takes them; a child's steps follow its admission. */
  readonly steps: readonly Step[];
}

export interface Plan {
  readonly trees: readonly Tree[];
  /** Events in all (one per step). */
  readonly events: number;
}

export interface MixOptions {
  readonly seed: number;
  /** Trees are added until their steps reach this many events. */
  readonly events: number;
  /** Names this run's events: trees, jobs, requests and event IDs carry it. */
  readonly tag: string;
  /** Real text, one document each. */
  readonly corpus: readonly string[];
}

const MODELS = ["claude-sonnet-4", "claude-haiku-3.5", "claude-opus-4"] as const;
const FIT_ARGS: ReadonlyArray<Record<string, unknown>> = [{}, { budget: 500 }, { budget: 2000 }, { view: "summary" }, { view: "stub" }, { query: "1-40" }, { budget: 4000, view: "full" }, { budget: 1000 }];
const TINY = ["ok", "[]", "{}", "no match", '{"matches":0}', "done", "404 not found", "true"];

/** The ref an offloaded result's text is stored under (content-addressed), for a read when no answer named one. */
export function refOf(text: string): string {
  return `oz0-file:sha256:${createHash("sha256").update(text, "utf8").digest("hex")}`;
}

/** An MCP CallToolResult of one text item, as a tool answers. */
export function toolContent(text: string): string {
  return JSON.stringify({ content: [{ type: "text", text }] });
}

class Builder {
  private readonly rnd: () => number;
  private readonly o: MixOptions;
  private n = 0;
  private readonly contents = new Map<string, string>();

  constructor(o: MixOptions) {
    this.o = o;
    this.rnd = random(o.seed);
  }

  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.rnd() * list.length)] as T;
  }

  chance(): number {
    return this.rnd();
  }

  int(min: number, max: number): number {
    return min + Math.floor(this.rnd() * (max - min + 1));
  }

  kind(): TreeKind {
    const total = TREE_KINDS.reduce((s, k) => s + TREE_WEIGHTS[k], 0);
    let x = this.rnd() * total;
    for (const k of TREE_KINDS) {
      x -= TREE_WEIGHTS[k];
      if (x < 0) return k;
    }
    return "pager";
  }

  id(what: string): string {
    return `load-${this.o.tag}-${what}${this.n++}`;
  }

  doc(): string {
    return this.pick(this.o.corpus);
  }

  /** A result of `text`, one string for each text: a plan's 23,000 small results are 93 documents and 8 tiny answers. */
  content(text: string): string {
    let c = this.contents.get(text);
    if (c === undefined) {
      c = toolContent(text);
      this.contents.set(text, c);
    }
    return c;
  }

  /** Corpus documents to be joined into at least `bytes`: a large result of real text. */
  large(bytes: number): Joined {
    const parts: string[] = [];
    let size = 0;
    while (size < bytes) {
      const d = this.doc();
      parts.push(d);
      size += Buffer.byteLength(d) + 2;
    }
    return { parts };
  }
}

/**
 * A large result's text, joined each time it is read. A plan of 3,000 agents (120,000 events)
 * holds some 2,000 of 48 to 96 KB: kept whole they were 164 MB, and with a copy of its document
 * for each small result the plan was 523 MB of the load's heap (98 MB now), which its garbage
 * collector paused over while the answers it times came in (docs/load.md, "The load's own heap").
 */
interface Joined {
  readonly parts: readonly string[];
}

const joined = (text: string | Joined): string => (typeof text === "string" ? text : text.parts.join("\n\n"));

interface Job {
  readonly tenant: string;
  readonly tree_id: string;
  readonly job_id: string;
  readonly run_id: string;
  readonly agent: string;
  readonly parent: string | null;
  readonly depth: number;
}

function jobEvent(b: Builder, j: Job, kind: JobEvent["kind"], over: Partial<JobEvent> = {}): JobEvent {
  return {
    id: b.id("job"),
    tenant: j.tenant,
    tree_id: j.tree_id,
    job_id: j.job_id,
    parent_job_id: j.parent,
    run_id: kind === "child_ask" ? null : j.run_id,
    agent: j.agent,
    kind,
    started_by: j.parent === null ? "app" : "agent",
    delegation: j.parent === null ? "none" : "delegation",
    depth: j.depth,
    outcome: kind === "ended" ? "succeeded" : null,
    principal: j.parent === null ? "load-app" : null,
    team: null,
    permissions: [],
    files: [],
    chosen_tree_id: false,
    conversation_id: null,
    previous_turn: null,
    ts: 0,
    ...over,
  };
}

function modelPair(b: Builder, j: Job, model: string, input: number, maxOutput: number | null): Step[] {
  const request = b.id("req");
  const base = { tenant: j.tenant, tree_id: j.tree_id, job_id: j.job_id, run_id: j.run_id, request_id: request, model, input_tokens: input, cache_write_tokens: 0, agent: j.agent, ts: 0 };
  return [
    { kind: "model_ask", event: { ...base, id: b.id("mc"), kind: "ask", max_output_tokens: maxOutput, output_tokens: null, cache_read_tokens: 0 } },
    { kind: "model_usage", event: { ...base, id: b.id("mc"), kind: "usage", max_output_tokens: null, output_tokens: b.int(50, maxOutput ?? 2_000), cache_read_tokens: Math.floor(input / 2) } },
  ];
}

function toolPair(b: Builder, j: Job, fn: string, args: Record<string, unknown>, text: string | Joined, step: number): Step[] {
  const call_id = b.id("call");
  const common = { tenant: j.tenant, tree_id: j.tree_id, job_id: j.job_id, run_id: j.run_id, call_id, agent: j.agent, plugin: PLUGIN, tool: PLUGIN, function: fn, arguments: JSON.stringify(args), origin: "model" as const, ts: 0 };
  const call: ToolCall = { ...common, id: b.id("tc"), context_used: 8_000 + step * 1_500, spend_share: null };
  const content = typeof text === "string" ? b.content(text) : toolContent(joined(text));
  const result: ToolResult = { ...common, id: b.id("tr"), is_error: false, content, content_ref: null, size_bytes: Buffer.byteLength(content), labels: [] };
  // Read as any other field (a copy of the event, JSON, Avro), but built when read.
  if (typeof text !== "string") Object.defineProperty(result, "content", { enumerable: true, get: () => toolContent(joined(text)) });
  return [
    { kind: "tool_call", event: call },
    { kind: "tool_result", event: result },
  ];
}

function root(b: Builder, kind: TreeKind, tenant: string): Job {
  const tree = b.id(`${kind}-`);
  return { tenant, tree_id: tree, job_id: tree, run_id: `${tree}-run`, agent: AGENT_OF[kind], parent: null, depth: 0 };
}

function pager(b: Builder, j: Job, tiny: boolean): Step[] {
  const steps: Step[] = [{ kind: "job_started", event: jobEvent(b, j, "started") }];
  const path = `docs/guide-${b.int(1, 400)}.md`;
  const pages = b.int(3, 7);
  for (let p = 1; p <= pages; p++) {
    steps.push(...modelPair(b, j, tiny ? "claude-haiku-3.5" : b.pick(MODELS), b.int(2_000, 20_000), 2_000));
    const text = tiny ? b.pick(TINY) : b.doc();
    const args = tiny ? { path, page: p } : { path, page: p, ...b.pick(FIT_ARGS) };
    steps.push(...toolPair(b, j, tiny ? "search" : "get_page", args, text, p));
  }
  steps.push({ kind: "job_ended", event: jobEvent(b, j, "ended") });
  return steps;
}

function reader(b: Builder, j: Job): Step[] {
  const steps: Step[] = [{ kind: "job_started", event: jobEvent(b, j, "started") }];
  steps.push(...modelPair(b, j, "claude-sonnet-4", b.int(4_000, 12_000), 2_000));
  // Over load-reader's threshold (3,000 tokens), and over the default (10,000 tokens) too.
  const text = b.large(b.int(48_000, 96_000));
  const pair = toolPair(b, j, "get_page", { path: `docs/manual-${b.int(1, 50)}.md` }, text, 1);
  steps.push(...pair);
  const of = pair[1]?.event.id ?? "";
  const ref = refOf(joined(text));
  const reads = b.int(2, 5);
  for (let r = 0; r < reads; r++) {
    steps.push(...modelPair(b, j, "claude-sonnet-4", b.int(6_000, 16_000), 2_000));
    const args: Omit<ReadResultArgs, "ref"> = r === reads - 1 && b.chance() < 0.5 ? { view: "summary" } : { range: `${r * 40 + 1}-${r * 40 + 40}` };
    const call: ToolCall = {
      id: b.id("rr"),
      tenant: j.tenant,
      tree_id: j.tree_id,
      job_id: j.job_id,
      run_id: j.run_id,
      call_id: b.id("call"),
      agent: j.agent,
      plugin: "oz",
      tool: "oz",
      function: "read_result",
      arguments: "{}",
      origin: "model",
      context_used: 10_000 + r * 2_000,
      spend_share: null,
      ts: 0,
    };
    steps.push({ kind: "read_result", event: call, of, ref, args });
  }
  steps.push({ kind: "job_ended", event: jobEvent(b, j, "ended") });
  return steps;
}

function looper(b: Builder, j: Job): Step[] {
  const steps: Step[] = [{ kind: "job_started", event: jobEvent(b, j, "started") }];
  const path = `docs/faq-${b.int(1, 30)}.md`;
  const text = b.doc();
  const calls = b.int(5, 8);
  steps.push(...modelPair(b, j, "claude-haiku-3.5", b.int(2_000, 8_000), 1_000));
  for (let i = 0; i < calls; i++) steps.push(...toolPair(b, j, "get_page", { path }, text, i));
  steps.push({ kind: "job_ended", event: jobEvent(b, j, "ended") });
  return steps;
}

function cycler(b: Builder, j: Job): Step[] {
  const steps: Step[] = [{ kind: "job_started", event: jobEvent(b, j, "started") }];
  const query = b.pick(["retry policy", "rate limits", "token budget", "release notes"]);
  const path = `docs/topic-${b.int(1, 30)}.md`;
  const calls = b.int(6, 9);
  steps.push(...modelPair(b, j, "claude-haiku-3.5", b.int(2_000, 8_000), 1_000));
  for (let i = 0; i < calls; i++) {
    steps.push(...(i % 2 === 0 ? toolPair(b, j, "search", { query }, b.pick(TINY), i) : toolPair(b, j, "get_page", { path, view: "summary" }, b.doc(), i)));
  }
  steps.push({ kind: "job_ended", event: jobEvent(b, j, "ended") });
  return steps;
}

function delegator(b: Builder, j: Job): Step[] {
  const steps: Step[] = [{ kind: "job_started", event: jobEvent(b, j, "started") }];
  steps.push(...modelPair(b, j, "claude-sonnet-4", b.int(4_000, 20_000), 2_000));
  const count = b.int(1, LEAD_FAN_OUT + 1);
  const children: Job[] = Array.from({ length: count }, (_, c) => ({ ...j, job_id: `${j.job_id}-c${c}`, run_id: `${j.job_id}-c${c}-run`, agent: HELPER_AGENT, parent: j.job_id, depth: 1 }));
  // Asked one after the other, before any ends: with `count` over the fan-out, the last is refused.
  for (const c of children) steps.push({ kind: "child_ask", event: jobEvent(b, c, "child_ask", { run_id: j.run_id }) });
  for (const c of children) {
    steps.push({ kind: "job_started", event: jobEvent(b, c, "started") });
    const work = b.int(1, 3);
    for (let w = 0; w < work; w++) {
      steps.push(...modelPair(b, c, "claude-haiku-3.5", b.int(2_000, 10_000), 1_000));
      steps.push(...toolPair(b, c, "get_page", { path: `src/file-${b.int(1, 200)}.ts`, ...b.pick(FIT_ARGS) }, b.doc(), w));
    }
    steps.push({ kind: "job_ended", event: jobEvent(b, c, "ended") });
  }
  steps.push(...modelPair(b, j, "claude-sonnet-4", b.int(4_000, 20_000), 2_000));
  steps.push({ kind: "job_ended", event: jobEvent(b, j, "ended") });
  return steps;
}

function spender(b: Builder, j: Job): Step[] {
  const steps: Step[] = [{ kind: "job_started", event: jobEvent(b, j, "started") }];
  const rounds = b.int(4, 7);
  for (let r = 0; r < rounds; r++) {
    // Worst cases of about $0.15 to $0.25 against load-spender's $0.30.
    steps.push(...modelPair(b, j, "claude-sonnet-4", b.int(30_000, 60_000), 4_000));
    steps.push(...toolPair(b, j, "get_page", { path: `docs/report-${b.int(1, 99)}.md`, budget: 1_000 }, b.doc(), r));
  }
  steps.push({ kind: "job_ended", event: jobEvent(b, j, "ended") });
  return steps;
}

/** The trees a run plays, until their events reach `events`. */
export function makePlan(o: MixOptions): Plan {
  if (o.corpus.length === 0) throw new Error("the load mix needs a corpus of at least one document");
  if (!(o.events > 0)) throw new Error(`the load mix needs a positive event count, got ${o.events}`);
  const b = new Builder(o);
  const trees: Tree[] = [];
  let events = 0;
  while (events < o.events) {
    const kind = b.kind();
    const tenant = b.pick(TENANTS);
    const j = root(b, kind, tenant);
    const steps =
      kind === "pager" || kind === "chatter"
        ? pager(b, j, kind === "chatter")
        : kind === "reader"
          ? reader(b, j)
          : kind === "looper"
            ? looper(b, j)
            : kind === "cycler"
              ? cycler(b, j)
              : kind === "delegator"
                ? delegator(b, j)
                : spender(b, j);
    trees.push({ kind, tenant, tree_id: j.tree_id, steps });
    events += steps.length;
  }
  return { trees, events };
}

/** Steps of a plan by kind. */
export function countSteps(plan: Plan): Record<StepKind, number> {
  const counts = Object.fromEntries(STEP_KINDS.map((k) => [k, 0])) as Record<StepKind, number>;
  for (const t of plan.trees) for (const s of t.steps) counts[s.kind]++;
  return counts;
}

/** Trees of a plan by kind. */
export function countTrees(plan: Plan): Record<TreeKind, number> {
  const counts = Object.fromEntries(TREE_KINDS.map((k) => [k, 0])) as Record<TreeKind, number>;
  for (const t of plan.trees) counts[t.kind]++;
  return counts;
}
