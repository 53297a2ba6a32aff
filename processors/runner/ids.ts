import { createHash } from "node:crypto";

/**
 * A deterministic event ID derived from what caused it, so replaying an input yields outputs
 * with the same IDs and a consumer can drop the duplicate.
 */
export function deriveId(...parts: Array<string | number>): string {
  return createHash("sha256").update(parts.join("\u0000")).digest("base64url").slice(0, 22);
}
