/**
 * Synthetic tool results for the load generator and the benchmarks: real text from a corpus,
 * spread over runs and three tenants, with the arguments a model would send.
 */
import type { ToolResult } from "../schemas/types.ts";

/** A small deterministic generator (mulberry32), so two runs send the same mix. */
export function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface SyntheticResult {
  /** Names the events of one load or bench run, such as `load-1a2b3c4d`. */
  readonly prefix: string;
  readonly index: number;
  readonly runs: number;
  readonly text: string;
  readonly args: Readonly<Record<string, unknown>>;
  readonly agent: string;
}

export function syntheticResult({ prefix, index, runs, text, args, agent }: SyntheticResult): ToolResult {
  const content = JSON.stringify({ content: [{ type: "text", text }] });
  const run = `${prefix}-run-${index % runs}`;
  return {
    id: `${prefix}-res-${index}`,
    tenant: `tenant-${index % 3}`,
    tree_id: run,
    job_id: run,
    run_id: run,
    call_id: `${prefix}-call-${index}`,
    agent,
    plugin: "acme_docs",
    tool: "acme_docs",
    function: "get_page",
    arguments: JSON.stringify({ path: `doc-${index}.md`, ...args }),
    origin: "model",
    is_error: false,
    content,
    content_ref: null,
    size_bytes: Buffer.byteLength(content),
    ts: Date.now(),
    labels: [],
  };
}
