import { describe, expect, it } from "vitest";
import { answerKey } from "../../bin/oz0-mcp.ts";
import { memoryKeyStore } from "../../client/gateway/memory-store.ts";

describe("oz0 mcp --listen --keys: what a request's key is answered", () => {
  const bound = { tenant: "acme", agent: "reviewer", tree_id: "tree-1", job_id: "job-1", run_id: "run-1", created_by: "alice" };

  it("LIM-1 a key in force answers its binding: the session's tenant, agent, job, tree and run are the key's", async () => {
    const store = memoryKeyStore();
    const now = Date.now();
    const { key, binding } = await store.create({ ...bound, expires_at: now + 60_000 }, now);
    expect(await answerKey(store, { authorization: `Bearer ${key}` }, {}, now)).toEqual({ ok: true, binding });
    expect(await answerKey(store, { authorization: `Bearer ${key}` }, { tenant: "acme", agent: "reviewer" }, now)).toEqual({ ok: true, binding });
  });

  it("no key, an unknown, expired or revoked one is answered 401 naming why; a key of a tenant or agent the listener does not serve 403; never with the key", async () => {
    const store = memoryKeyStore();
    const now = Date.now();
    const { key, binding } = await store.create({ ...bound, expires_at: now + 60_000 }, now);
    const other = await store.create({ ...bound, expires_at: now + 60_000 }, now);
    await store.revoke(other.binding.id, "bob", now);
    const cases: Array<[Parameters<typeof answerKey>[1], number, string, RegExp]> = [
      [{}, 401, "missing_key", /send Authorization: Bearer oz0_/],
      [{ authorization: "Bearer sk-someone-elses" }, 401, "unknown_key", /not known to oz0/],
      [{ authorization: `Bearer ${other.key}` }, 401, "revoked_key", new RegExp(`${other.binding.id} was revoked by bob`)],
    ];
    for (const [headers, status, code, words] of cases) {
      const a = await answerKey(store, headers, {}, now);
      expect(a).toMatchObject({ ok: false, status, body: { error: { code } } });
      if (!a.ok) expect(a.body.error.message).toMatch(words);
    }
    const expired = await answerKey(store, { authorization: `Bearer ${key}` }, {}, now + 60_000);
    expect(expired).toMatchObject({ ok: false, status: 401, body: { error: { code: "expired_key" } } });
    const elsewhere = await answerKey(store, { authorization: `Bearer ${key}` }, { tenant: "globex" }, now);
    expect(elsewhere).toMatchObject({ ok: false, status: 403, body: { error: { code: "key_not_served", message: `The API key ${binding.id} is bound to tenant acme, agent reviewer; this endpoint serves tenant globex only.` } } });
    expect(await answerKey(store, { authorization: `Bearer ${key}` }, { agent: "writer" }, now)).toMatchObject({ status: 403 });
    for (const a of [expired, elsewhere]) expect(JSON.stringify(a)).not.toContain(key);
  });
});
