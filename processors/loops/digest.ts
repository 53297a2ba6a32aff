/**
 * LOOP-1: what the detector watches of a call and a result. A call is its function and a
 * digest of its arguments as canonical JSON (key order and whitespace do not matter, every
 * value does); a result is a hash of what it said, and whether it said anything.
 */
import { hash } from "node:crypto";
import { parseArguments } from "../call-arguments.ts";

/** JSON with object keys sorted at every depth and no insignificant whitespace. */
export function canonicalJson(value: unknown): string {
  // Most arguments are written with their keys in order already: JSON.stringify then writes
  // the same text, natively.
  return inCanonicalOrder(value) ? JSON.stringify(value) : canonicalSlow(value);
}

/**
 * Whether JSON.stringify of the value is its canonical JSON: every object's keys (in the order
 * JSON.stringify walks them) strictly ascending, no undefined member to drop, and no toJSON
 * to call. Plain parsed JSON only; anything else takes the general path.
 */
function inCanonicalOrder(value: unknown): boolean {
  if (value === null || typeof value !== "object") return typeof value !== "undefined" && typeof value !== "function" && typeof value !== "symbol" && typeof value !== "bigint";
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) if (!inCanonicalOrder(item)) return false;
    return true;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype || "toJSON" in value) return false;
  let previous: string | undefined;
  for (const key of Object.keys(value)) {
    if (previous !== undefined && !(previous < key)) return false;
    previous = key;
    if (!inCanonicalOrder((value as Record<string, unknown>)[key])) return false;
  }
  return true;
}

function canonicalSlow(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalSlow).join(",")}]`;
  const record = value as Record<string, unknown>;
  // Sorted by UTF-16 code units, as `<` compares strings; keys of undefined members left out.
  const keys = Object.keys(record).sort();
  let out = "{";
  for (const key of keys) {
    const member = record[key];
    if (member === undefined) continue;
    out += `${out.length === 1 ? "" : ","}${JSON.stringify(key)}:${canonicalSlow(member)}`;
  }
  return `${out}}`;
}

function sha256(text: string): string {
  return hash("sha256", text, "hex");
}

/**
 * A short digest of a call's arguments (JSON object text); equal for equal objects. `parsed`
 * is what `parseArguments` made of the same text, when the caller has it already.
 */
export function argumentsDigest(argumentsJson: string, parsed: Record<string, unknown> | string = parseArguments(argumentsJson)): string {
  return sha256(typeof parsed === "string" ? argumentsJson : canonicalJson(parsed)).slice(0, 16);
}

/** What a call does: plugin, tool and function, as one name. */
export function functionName(call: { plugin: string; tool: string; function: string }): string {
  return `${call.plugin}/${call.tool}/${call.function}`;
}

/** A call as the detector compares it: the function and the digest of its arguments. */
export function callSignature(call: { plugin: string; tool: string; function: string; arguments: string }, parsed?: Record<string, unknown> | string): string {
  return `${functionName(call)}#${argumentsDigest(call.arguments, parsed)}`;
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
