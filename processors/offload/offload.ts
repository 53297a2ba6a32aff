/**
 * The offload step, pure (OFF-1, OFF-3..OFF-5, OFF-12): given what the model would read of a
 * tool result, the job's threshold and the call's origin, decide whether the model reads it
 * inline, a stub of it kept as a file of the job's tree, or a failed call because it is too
 * big to keep. No I/O: the caller stores `file` (see ./apply.ts).
 */
import type { OffloadThreshold } from "../../config/resolve.ts";
import type { CallOrigin } from "../../schemas/types.ts";
import { refOf } from "../../store/objects.ts";
import { weigh } from "../fit/index.ts";
import { OUTLINE_CAP, outlineResult } from "../fit/outline.ts";
import type { Kind } from "../fit/types.ts";
import { readMcpResult, type McpResult } from "../fit-results/mcp.ts";

/** A result whose text plus structured content is above this, as UTF-8 JSON, is not used (OFF-1). */
export const MAX_RESULT_JSON_BYTES = 31 * 1024 * 1024;
/** Where the stub's numbers go in the delivered result's `_meta`. */
export const OFFLOAD_META_KEY = "oz0/offload";

/** OFF-12: a model's calls and an ACP session's calls of the tenant's tools; never a flow step's, a harness's own tools', a remote agent's or a person's. */
const OFFLOADED_ORIGINS: ReadonlySet<CallOrigin> = new Set<CallOrigin>(["model", "acp"]);

export interface OffloadInput {
  /** What the model would read: the MCP CallToolResult (after fitting), parsed or as the JSON the runtime publishes. */
  readonly result: McpResult | string;
  /** The job's threshold (`resolveOffloadThreshold`, kept from the job's start). */
  readonly threshold: OffloadThreshold;
  readonly origin: CallOrigin;
  /** `<tool>.<function>`: named in notes; its extension, if any, tells the kind. */
  readonly name: string;
}

/** The stub the model reads instead of an offloaded result (OFF-3). */
export interface OffloadStub {
  readonly offloaded: {
    readonly ref: string;
    readonly kind: Kind;
    /** Bytes of the stored file (the text, UTF-8). */
    readonly size: number;
    /** weigh(text): what was compared with the threshold. */
    readonly tokens: number;
    /** Lines of the text in its read form (OFF-5). */
    readonly lines: number;
  };
  readonly outline: string;
  readonly note: string;
}

export type OffloadDecision =
  /** The model reads the result as it is. */
  | { readonly action: "inline"; readonly why: "origin" | "off" | "within_threshold" }
  /** OFF-1: the model reads this failed call; nothing is stored and the call is not made again. */
  | { readonly action: "fail"; readonly result: McpResult; readonly bytes: number }
  /** OFF-3: store `file` (whose ref is `stub.offloaded.ref`) for the tree; the model reads `result`. */
  | { readonly action: "offload"; readonly file: Buffer; readonly stub: OffloadStub; readonly result: McpResult }
  /** The result is not an MCP CallToolResult. */
  | { readonly action: "invalid"; readonly reason: string };

/**
 * The text a result is weighed, stored and read back by: its text items joined, else its
 * structured content as JSON (MCP has a tool that returns structured content repeat it as text).
 */
export function resultText(result: McpResult): string {
  const texts = result.content.filter((c) => c.type === "text" && typeof c.text === "string").map((c) => c.text as string);
  if (texts.length > 0) return texts.join("\n");
  return result.structuredContent === undefined ? "" : JSON.stringify(result.structuredContent);
}

/** UTF-8 bytes of the result's text plus structured content as JSON (OFF-1). */
export function resultJsonBytes(result: McpResult): number {
  const text = result.content.filter((c) => c.type === "text" && typeof c.text === "string").map((c) => c.text as string);
  return Buffer.byteLength(JSON.stringify({ text, structuredContent: result.structuredContent ?? null }), "utf8");
}

/** OFF-1..OFF-5, OFF-12: what the model reads of this result. Same input, same decision. */
export function decideOffload(input: OffloadInput): OffloadDecision {
  let result: McpResult;
  if (typeof input.result === "string") {
    const parsed = readMcpResult(input.result);
    if ("error" in parsed) return { action: "invalid", reason: parsed.error };
    result = parsed;
  } else {
    result = input.result;
  }
  if (!OFFLOADED_ORIGINS.has(input.origin)) return { action: "inline", why: "origin" };
  const bytes = resultJsonBytes(result);
  if (bytes > MAX_RESULT_JSON_BYTES) return { action: "fail", result: tooBig(input.name, bytes), bytes };
  if (input.threshold === "off") return { action: "inline", why: "off" };
  const text = resultText(result);
  const tokens = weigh(text);
  if (tokens <= input.threshold) return { action: "inline", why: "within_threshold" };
  const stub = stubOf(text, tokens, input.threshold, input.name);
  return {
    action: "offload",
    file: Buffer.from(text, "utf8"),
    stub,
    result: {
      content: [{ type: "text", text: JSON.stringify(stub) }],
      structuredContent: stub,
      ...(result.isError ? { isError: true } : {}),
      _meta: { ...result._meta, [OFFLOAD_META_KEY]: stub.offloaded },
    },
  };
}

/** The stub of a text that weighs `tokens` (OFF-3, OFF-4). */
export function stubOf(text: string, tokens: number, threshold: number, name: string): OffloadStub {
  // OFF-4: the summary when it fits a quarter of the threshold, else the headings alone; never above 1,000 tokens.
  const bound = Math.min(OUTLINE_CAP, Math.floor(threshold / 4));
  const o = outlineResult(text, bound, name);
  const file = Buffer.from(text, "utf8");
  const ref = refOf(file);
  return {
    offloaded: { ref, kind: o.kind, size: file.length, tokens, lines: o.lines },
    outline: o.outline,
    note:
      `The result of ${name} (${tokens} tokens, ${o.lines} lines) is more than the ${threshold} tokens this agent reads inline, ` +
      `so it was kept as a file of this job and left out here; above is its outline${o.form === "stub" ? " (headings only)" : ""}. ` +
      `Read the parts you need with oz.read_result("${ref}", view?, section?, range?, query?, budget?): ` +
      `section is a heading, a top-level key or an item such as [3]; range is lines such as 120-180.`,
  };
}

function tooBig(name: string, bytes: number): McpResult {
  const mib = (bytes / (1024 * 1024)).toFixed(1);
  return {
    content: [
      {
        type: "text",
        text:
          `The call to ${name} was made, but its result (${mib} MiB of text and structured content) is more than the 31 MiB a result may hold, ` +
          `so it is not used. The call is not made again. Ask for less: a narrower query, fewer items, a page or a range.`,
      },
    ],
    isError: true,
  };
}
