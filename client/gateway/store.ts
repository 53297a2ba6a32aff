/**
 * Where the project's API keys are kept (their form: keys.ts), as a port: the model gateway and
 * `oz0 mcp --listen --keys` check a request's key here, `oz0 run` and `oz0 keys create` make
 * them, `oz0 keys list|revoke` and a job's end list and revoke them.
 *
 * Only a key's SHA-256 is kept, never the key. In Redis a key's record is a hash named by its ID
 * (the ID is the hash's first 12 hex characters, so a check finds the record from the key it is
 * given and compares the whole hash), with an index of every key, one per tenant and one per
 * job, all in the `{keys}` slot (store/redis/keys.ts), so making a key and indexing it is one
 * script (apiKeyCreate) and revoking it another (apiKeyRevoke), each idempotent. A record is kept
 * a week past its expiry, so an expired key is answered "expired", not "unknown"; then it goes,
 * and its index entries with it.
 *
 * Redis (`redis-store.ts`, `redisKeyStore`) and memory (`memory-store.ts`, `memoryKeyStore`, for
 * unit tests) behave the same.
 */
import { timingSafeEqual } from "node:crypto";
import type { KeyBinding, KeyCheck, NewKey } from "./keys.ts";

/** Where keys are kept. */
export interface KeyStore {
  /** Makes a key bound to `b`: the key (shown once) and its binding. */
  create(b: NewKey, now: number): Promise<{ readonly key: string; readonly binding: KeyBinding }>;
  /** The binding of `key`, or why it does not work. */
  check(key: string, now: number): Promise<KeyCheck>;
  /** The keys of a tenant (or of all), newest first; with `job`, only that job's. */
  list(filter: { readonly tenant?: string; readonly job_id?: string }): Promise<KeyBinding[]>;
  /** Revokes the key with this ID; null when there is none. Revoking twice keeps the first time and who. */
  revoke(id: string, by: string, now: number): Promise<KeyBinding | null>;
  /** Revokes every key of one job (its end): how many were revoked now. */
  revokeJob(tenant: string, jobId: string, by: string, now: number): Promise<number>;
}

/** A key's record is kept this long past its expiry, so it answers "expired" rather than "unknown". */
export const KEPT_PAST_EXPIRY_MS = 7 * 24 * 3600 * 1000;

/** A key's ID as keyId makes it: `k-` and 12 hex characters. */
const KEY_ID = /^k-[0-9a-f]{12}$/;

export const isKeyId = (id: string): boolean => KEY_ID.test(id);

/** What a new key's binding must hold; each problem named, or null. */
export function newKeyProblem(b: NewKey, now: number): string | null {
  for (const field of ["tenant", "agent", "tree_id", "job_id", "run_id", "created_by"] as const) {
    const v = b[field] as unknown;
    if (typeof v !== "string" || v.trim() === "") return `a key is bound to a ${field}: it is empty`;
  }
  if (!Number.isFinite(b.expires_at) || b.expires_at <= now) return `a key's expires_at (${String(b.expires_at)}) must be later than now (${now})`;
  return null;
}

/** The binding a new key is made with. */
export function bindingOf(id: string, b: NewKey, now: number): KeyBinding {
  return { id, tenant: b.tenant, agent: b.agent, tree_id: b.tree_id, job_id: b.job_id, run_id: b.run_id, created_by: b.created_by, created_at: now, expires_at: b.expires_at, revoked_at: null, revoked_by: null };
}

export interface Revocation {
  readonly at: number;
  readonly by: string;
}

export const withRevocation = (b: KeyBinding, r: Revocation | null): KeyBinding => (r ? { ...b, revoked_at: r.at, revoked_by: r.by } : b);

/** Newest first; the ID breaks ties, so a list reads the same every time. */
export const newestFirst = (a: KeyBinding, b: KeyBinding): number => b.created_at - a.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  return x.length === y.length && timingSafeEqual(x, y);
}
