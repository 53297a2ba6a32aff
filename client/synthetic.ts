/**
 * Synthetic tool results for the load generator and the benchmarks: real text from a corpus,
 * spread over runs and three tenants, with the arguments a model would send.
 */
import type { ToolResult } from "../schemas/types.ts";

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
  };
}
