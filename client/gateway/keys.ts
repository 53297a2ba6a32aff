/**
 * The project's own API keys: what binds a request of the model gateway (and of `oz0 mcp
 * --listen`) to a tenant, an agent and a job. A key is bound by the project when it is made
 * (`oz0 run`, `oz0 keys create`), never by what a request says. Only its SHA-256 is stored;
 * the key itself is shown once, to whoever made it.
 *
 * This file is the pure part: the key's form, its hash, what a check answers. Where keys are
 * kept is `KeyStore` (`store.ts`), in Redis (`redis-store.ts`) or in memory (`memory-store.ts`).
 */
import { createHash, randomBytes } from "node:crypto";

/** Every key starts so, so a key pasted in the wrong place is recognised (and secret scanners can match it). */
export const KEY_PREFIX = "oz0_";

/** What a key is bound to. Never holds the key, only its ID (shown in lists and the audit log). */
export interface KeyBinding {
  /** The key's ID: `k-` and 12 hex characters of its hash. Safe to show and to log. */
  readonly id: string;
  readonly tenant: string;
  readonly agent: string;
  readonly tree_id: string;
  readonly job_id: string;
  readonly run_id: string;
  /** Who made it (a person's name, `oz0 run`'s --as, or an app). */
  readonly created_by: string;
  readonly created_at: number;
  /** When it stops working (ms since the epoch): its job's end at the latest. */
  readonly expires_at: number;
  /** When it was revoked, and by whom; null while it is not. */
  readonly revoked_at: number | null;
  readonly revoked_by: string | null;
}

/** What checking a key answers: its binding, or why it does not work (each answered 401). */
export type KeyCheck =
  | { readonly ok: true; readonly binding: KeyBinding }
  | { readonly ok: false; readonly reason: "unknown" | "expired" | "revoked"; readonly message: string };

export type NewKey = Pick<KeyBinding, "tenant" | "agent" | "tree_id" | "job_id" | "run_id" | "created_by" | "expires_at">;

/** A new key: the prefix and 32 random bytes, base64url (43 characters). */
export function newKey(): string {
  return `${KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
}

/** The key's SHA-256, hex: what the store keeps and looks up by. */
export function keyHash(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** The key's ID, from its hash: safe to show, to log and to revoke by. */
export function keyId(hash: string): string {
  return `k-${hash.slice(0, 12)}`;
}

/** The key a request carries: `Authorization: Bearer <key>` (OpenAI clients) or `x-api-key: <key>` (Anthropic clients). */
export function requestKey(headers: { readonly authorization?: string | string[]; readonly "x-api-key"?: string | string[] }): string | null {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const api = one(headers["x-api-key"])?.trim();
  if (api) return api;
  const auth = one(headers.authorization)?.trim();
  if (!auth) return null;
  const m = /^Bearer\s+(\S+)$/i.exec(auth);
  return m?.[1] ?? null;
}

/** What a check answers for a binding found by hash, at `now`. */
export function checkBinding(binding: KeyBinding | null, now: number): KeyCheck {
  if (binding === null) return { ok: false, reason: "unknown", message: "The API key is not known to oz0. Use the key oz0 run or oz0 keys create gave." };
  if (binding.revoked_at !== null)
    return { ok: false, reason: "revoked", message: `The API key ${binding.id} was revoked${binding.revoked_by ? ` by ${binding.revoked_by}` : ""} at ${new Date(binding.revoked_at).toISOString()}.` };
  if (now >= binding.expires_at) return { ok: false, reason: "expired", message: `The API key ${binding.id} expired at ${new Date(binding.expires_at).toISOString()} (with its job ${binding.job_id}).` };
  return { ok: true, binding };
}
