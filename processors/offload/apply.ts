/**
 * The offload step with its one effect: storing the file. The processor that delivers what
 * the model reads (fit-results) calls this after fitting, with an env that reaches the file
 * store. Storing is idempotent by content, so a batch handled again stores nothing new (it
 * renews the tree's retention, which is what storing again means).
 */
import type { McpResult } from "../fit-results/mcp.ts";
import { decideOffload, type OffloadDecision, type OffloadInput } from "./offload.ts";

/** What the offload step needs of the world. */
export interface OffloadEnv {
  /**
   * Stores bytes as a file of the tree (FILE-2) with the result's labels (OFF-9) and returns
   * its ref. `FileStore.store` does this.
   */
  storeFile(owner: { readonly tenant: string; readonly tree: string }, bytes: Buffer, options: { readonly labels: readonly string[] }): Promise<{ readonly ref: string }>;
}

export interface OffloadCall extends OffloadInput {
  readonly tenant: string;
  /** The tree of the call binding. */
  readonly tree: string;
  /** The result's labels, kept with the file. */
  readonly labels?: readonly string[];
}

export type Offloaded = { readonly decision: OffloadDecision; readonly delivered: McpResult | null };

/** Decides, stores the file when the result is offloaded, and returns what the model reads (null: the result as it is). */
export async function offloadResult(call: OffloadCall, env: OffloadEnv): Promise<Offloaded> {
  const decision = decideOffload(call);
  switch (decision.action) {
    case "inline":
    case "invalid":
      return { decision, delivered: null };
    case "fail":
      return { decision, delivered: decision.result };
    case "offload": {
      const { ref } = await env.storeFile({ tenant: call.tenant, tree: call.tree }, decision.file, { labels: call.labels ?? [] });
      if (ref !== decision.stub.offloaded.ref) throw new Error(`the file store named the offloaded result ${ref}, but its stub names ${decision.stub.offloaded.ref}: both must be the SHA-256 of the stored bytes`);
      return { decision, delivered: decision.result };
    }
  }
}
