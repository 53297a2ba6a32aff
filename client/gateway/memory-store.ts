import { checkBinding, KEY_PREFIX, keyHash, keyId, newKey, type KeyBinding, type KeyCheck } from "./keys.ts";
import { bindingOf, KEPT_PAST_EXPIRY_MS, newestFirst, newKeyProblem, sameHash, withRevocation, type KeyStore } from "./store.ts";

/** The same in memory, for unit tests and the test driver. */
export function memoryKeyStore(): KeyStore & { readonly kept: ReadonlyMap<string, { readonly hash: string; readonly binding: KeyBinding }> } {
  const kept = new Map<string, { hash: string; binding: KeyBinding }>();
  // A record goes a week past its expiry, as Redis lets it go.
  const live = (now: number) => [...kept.values()].filter((r) => r.binding.expires_at + KEPT_PAST_EXPIRY_MS > now);
  const revokeOne = (id: string, by: string, now: number): { now: boolean; binding: KeyBinding } | null => {
    const r = kept.get(id);
    if (!r || r.binding.expires_at + KEPT_PAST_EXPIRY_MS <= now) return null;
    if (r.binding.revoked_at !== null) return { now: false, binding: r.binding };
    r.binding = withRevocation(r.binding, { at: now, by });
    return { now: true, binding: r.binding };
  };
  return {
    kept,
    create: (b, now) => {
      const problem = newKeyProblem(b, now);
      if (problem) return Promise.reject(new Error(problem));
      for (;;) {
        const key = newKey();
        const hash = keyHash(key);
        const id = keyId(hash);
        if (kept.has(id)) continue;
        const binding = bindingOf(id, b, now);
        kept.set(id, { hash, binding });
        return Promise.resolve({ key, binding });
      }
    },
    check: (key, now) => {
      if (!key.startsWith(KEY_PREFIX)) return Promise.resolve(checkBinding(null, now));
      const hash = keyHash(key);
      const r = kept.get(keyId(hash));
      const found = r && r.binding.expires_at + KEPT_PAST_EXPIRY_MS > now && sameHash(r.hash, hash) ? r.binding : null;
      return Promise.resolve<KeyCheck>(checkBinding(found, now));
    },
    list: (filter) =>
      Promise.resolve(
        live(Date.now())
          .map((r) => r.binding)
          .filter((b) => (filter.tenant === undefined || b.tenant === filter.tenant) && (filter.job_id === undefined || b.job_id === filter.job_id))
          .sort(newestFirst),
      ),
    revoke: (id, by, now) => Promise.resolve(revokeOne(id, by, now)?.binding ?? null),
    revokeJob: (tenant, jobId, by, now) => {
      let revoked = 0;
      for (const r of live(now)) if (r.binding.tenant === tenant && r.binding.job_id === jobId && revokeOne(r.binding.id, by, now)?.now) revoked++;
      return Promise.resolve(revoked);
    },
  };
}
