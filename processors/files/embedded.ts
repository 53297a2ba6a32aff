/**
 * FILE-1, the result side: a tool returns a file for another tool as an MCP embedded resource
 * whose URI is `oz0-file:sha256:<hex>` (`{type: "resource", resource: {uri, mimeType?, text |
 * blob}}`). Its bytes are stored as a file of the call's tree and the model reads a link with
 * the URI alone (`{type: "resource_link", uri, name, mimeType?, size}`), so the bytes never pass
 * through a model or the job's history. Pure: the caller stores `files`.
 */
import { createHash } from "node:crypto";
import { REF_PREFIX } from "../../store/objects.ts";
import type { McpContentItem, McpResult } from "../fit-results/mcp.ts";

const REF = /^oz0-file:sha256:([0-9a-f]{64})$/;

export interface EmbeddedFile {
  readonly ref: string;
  readonly bytes: Buffer;
  readonly mimeType?: string;
}

export type Extracted =
  /** `result` is what the model reads (the same object when nothing was embedded); `files` are to be stored. */
  | { readonly result: McpResult; readonly files: readonly EmbeddedFile[] }
  | { readonly error: string };

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** The bytes an embedded resource carries, or null when it carries none (a URI alone). */
function bytesOf(resource: Record<string, unknown>): Buffer | null {
  if (typeof resource.blob === "string") return Buffer.from(resource.blob, "base64");
  if (typeof resource.text === "string") return Buffer.from(resource.text, "utf8");
  return null;
}

/**
 * The files a result embeds under `oz0-file:sha256:` URIs, and the result with each replaced by
 * a link. A URI that does not name the SHA-256 of its bytes is an error: the tool must name
 * the file by its digest, or another file could be claimed under its name.
 */
export function extractEmbeddedFiles(result: McpResult): Extracted {
  const files: EmbeddedFile[] = [];
  let changed = false;
  const content: McpContentItem[] = [];
  for (const item of result.content) {
    const resource = item.type === "resource" && isObject(item.resource) ? item.resource : null;
    const uri = resource && typeof resource.uri === "string" ? resource.uri : "";
    const m = REF.exec(uri);
    const bytes = resource && m ? bytesOf(resource) : null;
    if (!resource || !m || bytes === null) {
      content.push(item);
      continue;
    }
    const hex = createHash("sha256").update(bytes).digest("hex");
    if (hex !== m[1]) {
      return { error: `the embedded resource ${uri} holds ${bytes.length} bytes whose SHA-256 is ${hex}: a file's URI is ${REF_PREFIX}<the SHA-256 of its bytes>; name it by its digest` };
    }
    const mimeType = typeof resource.mimeType === "string" ? resource.mimeType : undefined;
    files.push({ ref: uri, bytes, ...(mimeType ? { mimeType } : {}) });
    const name = typeof resource.name === "string" && resource.name !== "" ? resource.name : `file ${hex.slice(0, 12)}`;
    content.push({ type: "resource_link", uri, name, ...(mimeType ? { mimeType } : {}), size: bytes.length });
    changed = true;
  }
  return changed ? { result: { ...result, content }, files } : { result, files };
}
