/**
 * What every KeyStore (client/gateway/store.ts) must do, as one suite: the memory store runs it
 * in the unit tests, the Redis store on the real Redis in the integration tests.
 */
import { randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import { KEY_PREFIX, keyHash, keyId, newKey, type NewKey } from "../../client/gateway/keys.ts";
import type { KeyStore } from "../../client/gateway/store.ts";

export interface KeyStoreSubject {
  readonly store: KeyStore;
  /** Every string the store keeps, so a test can see that the key itself is not among them. */
  readonly kept: () => Promise<string[]>;
}

const HOUR = 3600_000;

export function keyStoreBehaviour(make: () => Promise<KeyStoreSubject> | KeyStoreSubject): void {
  const bound = (tenant: string, job: string, over: Partial<NewKey> = {}): NewKey => ({ tenant, agent: "reviewer", tree_id: job, job_id: job, run_id: `${job}-run`, created_by: "alice", expires_at: Date.now() + HOUR, ...over });
  const ids = () => ({ tenant: `keys-${randomUUID().slice(0, 8)}`, job: `job-${randomUUID().slice(0, 8)}` });

  it("a key is made once, bound to its tenant, agent, tree, job and run by the project; only its SHA-256 is kept, and a check answers its binding", async () => {
    const { store, kept } = await make();
    const { tenant, job } = ids();
    const now = Date.now();
    const { key, binding } = await store.create(bound(tenant, job, { tree_id: `tree-${job}`, run_id: "run-1", expires_at: now + HOUR }), now);
    expect(key).toMatch(/^oz0_[A-Za-z0-9_-]{43}$/);
    expect(binding).toEqual({ id: keyId(keyHash(key)), tenant, agent: "reviewer", tree_id: `tree-${job}`, job_id: job, run_id: "run-1", created_by: "alice", created_at: now, expires_at: now + HOUR, revoked_at: null, revoked_by: null });
    const stored = (await kept()).join("\n");
    expect(stored).toContain(keyHash(key));
    expect(stored).not.toContain(key);
    expect(stored).not.toContain(key.slice(KEY_PREFIX.length));
    expect(await store.check(key, now + 1000)).toEqual({ ok: true, binding });
  });

  it("a key nobody made, a string that is no oz0 key, and a key whose hash shares nothing stored are unknown", async () => {
    const { store } = await make();
    for (const k of [newKey(), "sk-proj-abc", "", `${KEY_PREFIX}`]) {
      const c = await store.check(k, Date.now());
      expect(c).toMatchObject({ ok: false, reason: "unknown" });
      if (!c.ok) expect(c.message).toMatch(/not known to oz0/);
    }
  });

  it("a key past its expiry answers expired (its record is kept a week past it), never its binding", async () => {
    const { store } = await make();
    const { tenant, job } = ids();
    const now = Date.now();
    const { key, binding } = await store.create(bound(tenant, job, { expires_at: now + 60_000 }), now);
    expect((await store.check(key, now + 59_999)).ok).toBe(true);
    for (const at of [now + 60_000, now + 24 * HOUR]) {
      const c = await store.check(key, at);
      expect(c).toMatchObject({ ok: false, reason: "expired" });
      if (!c.ok) expect(c.message).toContain(`${binding.id} expired at ${new Date(now + 60_000).toISOString()} (with its job ${job})`);
    }
  });

  it("a key is revoked by its ID once: the first time and who hold, a check answers revoked naming who, and an unknown or malformed ID revokes nothing", async () => {
    const { store } = await make();
    const { tenant, job } = ids();
    const now = Date.now();
    const { key, binding } = await store.create(bound(tenant, job), now);
    const revoked = await store.revoke(binding.id, "bob", now + 10);
    expect(revoked).toEqual({ ...binding, revoked_at: now + 10, revoked_by: "bob" });
    expect(await store.revoke(binding.id, "carol", now + 20)).toEqual(revoked);
    const c = await store.check(key, now + 30);
    expect(c).toMatchObject({ ok: false, reason: "revoked" });
    if (!c.ok) expect(c.message).toBe(`The API key ${binding.id} was revoked by bob at ${new Date(now + 10).toISOString()}.`);
    expect(await store.revoke(keyId(keyHash(newKey())), "bob", now)).toBeNull();
    expect(await store.revoke("not-a-key-id", "bob", now)).toBeNull();
    expect((await store.list({ tenant })).map((b) => [b.id, b.revoked_by])).toEqual([[binding.id, "bob"]]);
  });

  it("keys are listed per tenant and per job, newest first, never with the key; another tenant's are not", async () => {
    const { store } = await make();
    const { tenant, job } = ids();
    const other = `${tenant}-other`;
    const now = Date.now();
    const a = await store.create(bound(tenant, job), now);
    const b = await store.create(bound(tenant, `${job}-2`), now + 1);
    const c = await store.create(bound(tenant, job, { agent: "writer" }), now + 2);
    const o = await store.create(bound(other, job), now + 3);
    expect((await store.list({ tenant })).map((k) => k.id)).toEqual([c.binding.id, b.binding.id, a.binding.id]);
    expect((await store.list({ tenant, job_id: job })).map((k) => k.id)).toEqual([c.binding.id, a.binding.id]);
    expect((await store.list({ tenant: other })).map((k) => k.id)).toEqual([o.binding.id]);
    const all = (await store.list({})).map((k) => k.id);
    expect(all).toEqual(expect.arrayContaining([a.binding.id, b.binding.id, c.binding.id, o.binding.id]));
    expect(all.indexOf(o.binding.id)).toBeLessThan(all.indexOf(a.binding.id));
    expect(JSON.stringify(await store.list({ tenant }))).not.toContain(a.key);
  });

  it("revokeJob revokes every key of one job of one tenant, once: another job's and another tenant's same job ID keep working", async () => {
    const { store } = await make();
    const { tenant, job } = ids();
    const now = Date.now();
    const one = await store.create(bound(tenant, job), now);
    const two = await store.create(bound(tenant, job, { run_id: "another-run" }), now);
    const otherJob = await store.create(bound(tenant, `${job}-2`), now);
    const otherTenant = await store.create(bound(`${tenant}-other`, job), now);
    expect(await store.revokeJob(tenant, job, "oz0 run", now + 5)).toBe(2);
    expect(await store.revokeJob(tenant, job, "oz0 run", now + 6)).toBe(0);
    for (const k of [one, two]) expect(await store.check(k.key, now + 7)).toMatchObject({ ok: false, reason: "revoked" });
    for (const k of [otherJob, otherTenant]) expect((await store.check(k.key, now + 7)).ok).toBe(true);
    expect((await store.list({ tenant, job_id: job })).map((b) => [b.revoked_at, b.revoked_by])).toEqual([
      [now + 5, "oz0 run"],
      [now + 5, "oz0 run"],
    ]);
    expect(await store.revokeJob(tenant, "no-such-job", "oz0 run", now)).toBe(0);
  });

  it("a key is not made bound to nothing or already expired: the error names the field", async () => {
    const { store } = await make();
    const { tenant, job } = ids();
    const now = Date.now();
    await expect(store.create(bound("", job), now)).rejects.toThrow(/bound to a tenant: it is empty/);
    await expect(store.create(bound(tenant, job, { job_id: " " }), now)).rejects.toThrow(/bound to a job_id: it is empty/);
    await expect(store.create(bound(tenant, job, { expires_at: now }), now)).rejects.toThrow(/expires_at .* must be later than now/);
    expect(await store.list({ tenant })).toEqual([]);
  });
}
