/**
 * LOOP-1: what the detector watches of a call and a result. A call is its function and a
 * digest of its arguments as canonical JSON (key order and whitespace do not matter, every
 * value does); a result is a hash of what it said, and whether it said anything.
 */
import { createHash } from "node:crypto";
import { parseArguments } from "../call-arguments.ts";

/** JSON with object keys sorted at every depth and no insignificant whitespace. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}


/** A short digest of a call's arguments (JSON object text); equal for equal objects. */
export function argumentsDigest(argumentsJson: string): string {
  const parsed = parseArguments(argumentsJson);
  return sha256(typeof parsed === "string" ? argumentsJson : canonicalJson(parsed)).slice(0, 16);
}

/** What a call does: plugin, tool and function, as one name. */
export function functionName(call: { plugin: string; tool: string; function: string }): string {
  return `${call.plugin}/${call.tool}/${call.function}`;
}

/** A call as the detector compares it: the function and the digest of its arguments. */
export function callSignature(call: { plugin: string; tool: string; function: string; arguments: string }): string {
  return `${functionName(call)}#${argumentsDigest(call.arguments)}`;
}

/** Splits a signature back into its function and arguments digest. */
export function splitSignature(signature: string): { function: string; args_digest: string } {
  const at = signature.lastIndexOf("#");
  return { function: signature.slice(0, at), args_digest: signature.slice(at + 1) };
}

export interface ResultSummary {
  /** Equal for results that say the same; an error never equals a success with the same text. */
  readonly hash: string;
  readonly empty: boolean;
  readonly error: boolean;
}

const EMPTY_TEXTS = new Set(["", "[]", "{}", "null"]);

function isEmptyMcp(result: unknown): boolean {
  if (result === null || typeof result !== "object" || Array.isArray(result)) return false;
  const r = result as { content?: unknown; structuredContent?: unknown };
  const structured = r.structuredContent;
  const hasStructured =
    structured !== undefined &&
    structured !== null &&
    !(typeof structured === "object" && Object.keys(structured).length === 0);
  if (hasStructured) return false;
  if (!Array.isArray(r.content)) return r.content === undefined;
  return r.content.every((item: unknown) => {
    if (item === null || typeof item !== "object") return true;
    const it = item as { type?: unknown; text?: unknown };
    return it.type === "text" && typeof it.text === "string" && EMPTY_TEXTS.has(it.text.trim());
  });
}

/**
 * Summarises a tool result: inline content (MCP CallToolResult JSON) or a content-addressed
 * ref, which already names its bytes. Empty is no content, no items, or only blank text (or
 * `[]`, `{}`, `null`), with no structured content.
 */
export function summarizeResult(result: { is_error: boolean; content: string | null; content_ref: string | null }): ResultSummary {
  const error = result.is_error;
  const tag = error ? "error" : "ok";
  if (result.content_ref !== null) return { hash: sha256(`${tag}:ref:${result.content_ref}`), empty: false, error };
  if (result.content === null) return { hash: sha256(`${tag}:none`), empty: true, error };
  let parsed: unknown;
  try {
    parsed = JSON.parse(result.content);
  } catch {
    return { hash: sha256(`${tag}:text:${result.content}`), empty: EMPTY_TEXTS.has(result.content.trim()), error };
  }
  let canonical: string;
  try {
    canonical = canonicalJson(parsed);
  } catch (err) {
    // JSON nested deeper than the stack (JSON.parse itself does not recurse): its text is its identity.
    if (!(err instanceof RangeError)) throw err;
    return { hash: sha256(`${tag}:text:${result.content}`), empty: false, error };
  }
  return { hash: sha256(`${tag}:json:${canonical}`), empty: isEmptyMcp(parsed), error };
}
