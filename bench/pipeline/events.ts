/**
 * Realistic inputs for the pipeline benchmark, deterministic by seed: tool calls of many runs
 * (paging, repeats and cycles) for the loop detector, asks and usage reports of many trees for
 * the limits, and tool results of real text (`test/fixtures/tokens`) for fit-results.
 */
import { readdir, readFile } from "node:fs/promises";
import type { AgentDefinition } from "../../config/agent.ts";
import type { PluginManifest } from "../../config/plugin.ts";
import type { SchemaName } from "../../schemas/catalog.ts";
import type { ModelCall, ToolCall, ToolResult } from "../../schemas/types.ts";
import { random, syntheticResult } from "../../client/synthetic.ts";

/** One input event with its key, and whether the processor must answer it (an output names it by `input_id`). */
export interface BenchEvent<T> {
  readonly key: string;
  readonly value: T;
  readonly answered: boolean;
}

export interface EventKind<T extends { id: string; ts: number }> {
  /** The real input topic (its schema and partition count are the benchmark's). */
  readonly topic: "oz0.tool-calls" | "oz0.model-calls" | "oz0.tool-results";
  readonly schema: SchemaName;
  /** `count` events, in the order runtimes would publish them; ids carry `tag`. */
  make(count: number, tag: string, seed: number): BenchEvent<T>[];
}

const agent = (name: string, over: Partial<AgentDefinition> = {}): AgentDefinition => ({ name, tools: [], limits: { tree: {} }, delegation: { allow: [] }, loops: {}, spend: {}, ...over });

/** Agents the generated events name: a pager (on_loop default: wait), a looper that reports, a cycler that stops; a boss with a budget. */
export const BENCH_AGENTS: AgentDefinition[] = [
  agent("bench-pager"),
  agent("bench-looper", { on_loop: "report" }),
  agent("bench-cycler", { on_loop: "stop" }),
  agent("bench-boss", { limits: { tree: {}, max_cost_usd: 0.5, max_output_tokens: 2_000 } }),
  agent("bench-worker", { limits: { tree: {} } }),
];

/**
 * The docs plugin the generated tool results name (`syntheticResult`: acme_docs, get_page), as
 * the example manifest declares it: its get_page adopts the fit convention, so fit-results fits
 * its results (FIT-8: a tool without a manifest would get them as sent).
 */
export const BENCH_PLUGIN: PluginManifest = {
  name: "acme_docs",
  tools: [
    {
      id: "acme_docs",
      mcp: ["acme-docs"],
      results: { fit: true },
      functions: [
        {
          name: "get_page",
          input_schema: {
            type: "object",
            properties: { path: { type: "string" }, view: { enum: ["stub", "summary", "section", "full"] }, budget: { type: "integer" }, query: { type: "string" } },
            required: ["path"],
          },
        },
      ],
    },
  ],
};

/** The configuration rows the benchmark's processors read: its agents and its docs plugin. */
export const BENCH_CONFIG_ROWS: Array<{ kind: "agent" | "plugin"; id: string; value: unknown }> = [
  ...BENCH_AGENTS.map((a) => ({ kind: "agent" as const, id: a.name, value: a })),
  { kind: "plugin", id: BENCH_PLUGIN.name, value: BENCH_PLUGIN },
];

/** Round-robin over per-run sequences, as many runtimes publishing at once would interleave. */
function interleave<T>(lists: T[][], count: number): T[] {
  const out: T[] = [];
  for (let i = 0; out.length < count; i++) {
    let any = false;
    for (const list of lists) {
      const v = list[i];
      if (v !== undefined) {
        out.push(v);
        any = true;
        if (out.length === count) break;
      }
    }
    if (!any) break;
  }
  return out;
}

/**
 * Tool calls of runs of about 20 calls each: a third page through a document (no loop), a
 * third repeat one call (a loop every few calls, reported), a sixth alternate two calls (a
 * cycle, then the job stops), the rest mix calls and end with the answer.
 */
export const toolCalls: EventKind<ToolCall> = {
  topic: "oz0.tool-calls",
  schema: "ToolCall",
  make(count, tag, seed) {
    const rnd = random(seed);
    const perRun = 20;
    const runs = Math.max(1, Math.ceil(count / perRun));
    const lists: BenchEvent<ToolCall>[][] = [];
    let n = 0;
    for (let r = 0; r < runs; r++) {
      const run = `bench-${tag}-run-${r}`;
      const shape = rnd();
      const mode = shape < 0.33 ? "paging" : shape < 0.66 ? "repeat" : shape < 0.83 ? "cycle" : "mixed";
      const agentName = mode === "paging" ? "bench-pager" : mode === "repeat" ? "bench-looper" : mode === "cycle" ? "bench-cycler" : "bench-pager";
      const list: BenchEvent<ToolCall>[] = [];
      for (let i = 0; i < perRun; i++) {
        let fn = "get_page";
        let args: Record<string, unknown>;
        let plugin = "acme_docs";
        if (mode === "paging") args = { path: `docs/guide-${r}.md`, page: i + 1, budget: 2_000 };
        else if (mode === "repeat") args = { path: `docs/faq-${r % 7}.md` };
        else if (mode === "cycle") {
          fn = i % 2 === 0 ? "search" : "get_page";
          args = i % 2 === 0 ? { query: "retry policy" } : { path: "docs/retry.md" };
        } else {
          fn = ["search", "get_page", "list"][Math.floor(rnd() * 3)] ?? "list";
          args = { path: `src/file-${Math.floor(rnd() * 50)}.ts`, view: "summary" };
          if (i === perRun - 1) {
            plugin = "oz0";
            fn = "answer";
            args = { text: "done" };
          }
        }
        list.push({
          key: run,
          answered: true,
          value: {
            id: `bench-${tag}-call-${n++}`,
            tenant: `tenant-${r % 3}`,
            tree_id: run,
            job_id: run,
            run_id: run,
            call_id: `call-${tag}-${r}-${i}`,
            agent: agentName,
            plugin,
            tool: plugin,
            function: fn,
            arguments: JSON.stringify(args),
            origin: "model",
            context_used: 20_000 + i * 1_500,
            spend_share: null,
            ts: Date.now(),
          },
        });
      }
      lists.push(list);
    }
    return interleave(lists, count);
  },
};

/**
 * Model calls of trees of about 16 events: ask, usage, ask, usage, ... and an ask last, so
 * once every ask is answered every usage before it was settled too. Half the trees run under
 * a $0.50 budget (some asks are stopped), half without one.
 */
export const modelCalls: EventKind<ModelCall> = {
  topic: "oz0.model-calls",
  schema: "ModelCall",
  make(count, tag, seed) {
    const rnd = random(seed);
    const perTree = 17;
    const trees = Math.max(1, Math.ceil(count / perTree));
    const lists: BenchEvent<ModelCall>[][] = [];
    let n = 0;
    const models = ["claude-sonnet-4", "claude-haiku-3.5", "claude-opus-4"];
    for (let t = 0; t < trees; t++) {
      const tree = `bench-${tag}-tree-${t}`;
      const boss = t % 2 === 0;
      const model = models[t % models.length] ?? "claude-sonnet-4";
      const list: BenchEvent<ModelCall>[] = [];
      for (let i = 0; i < perTree; i++) {
        const ask = i % 2 === 0;
        const request = `req-${tag}-${t}-${Math.floor(i / 2)}`;
        const input = 2_000 + Math.floor(rnd() * 30_000);
        list.push({
          key: tree,
          answered: ask,
          value: {
            id: `bench-${tag}-mc-${n++}`,
            tenant: `tenant-${t % 3}`,
            tree_id: tree,
            job_id: tree,
            run_id: `${tree}-run`,
            request_id: request,
            kind: ask ? "ask" : "usage",
            model,
            input_tokens: input,
            max_output_tokens: ask ? 4_000 : null,
            output_tokens: ask ? null : 100 + Math.floor(rnd() * 1_500),
            cache_read_tokens: ask ? 0 : Math.floor(input / 2),
            cache_write_tokens: 0,
            agent: boss ? "bench-boss" : "bench-worker",
            ts: Date.now(),
          },
        });
      }
      lists.push(list);
    }
    return interleave(lists, count);
  },
};

let corpusCache: string[] | undefined;

export async function loadCorpus(): Promise<string[]> {
  if (corpusCache) return corpusCache;
  const dir = new URL("../../test/fixtures/tokens/", import.meta.url);
  const files = (await readdir(dir)).filter((f) => f.endsWith(".txt")).sort();
  corpusCache = await Promise.all(files.map((f) => readFile(new URL(f, dir), "utf8")));
  if (corpusCache.length === 0) throw new Error("no corpus in test/fixtures/tokens");
  return corpusCache;
}

/** Tool results of real text; a quarter ask for no fitting, the rest for a budget, a view or a line range (the mix of `npm run load`). */
export function toolResults(corpus: readonly string[]): EventKind<ToolResult> {
  const argsMix: Array<Record<string, unknown>> = [{}, { budget: 500 }, { budget: 2000 }, { view: "summary" }, { view: "stub" }, { query: "1-40" }, { budget: 4000, view: "full" }, { budget: 1000 }];
  return {
    topic: "oz0.tool-results",
    schema: "ToolResult",
    make(count, tag, seed) {
      const rnd = random(seed);
      const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)] as T;
      const runs = Math.max(1, Math.ceil(count / 10));
      return Array.from({ length: count }, (_, index) => {
        const value = syntheticResult({ prefix: `bench-${tag}`, index, runs, text: pick(corpus), args: pick(argsMix), agent: "bench-pager" });
        return { key: value.run_id, answered: true, value };
      });
    },
  };
}
