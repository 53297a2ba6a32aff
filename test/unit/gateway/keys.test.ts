import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { checkBinding, KEY_PREFIX, keyHash, keyId, newKey, requestKey, type KeyBinding } from "../../../client/gateway/keys.ts";
import { memoryKeyStore } from "../../../client/gateway/memory-store.ts";
import { isKeyId, KEPT_PAST_EXPIRY_MS } from "../../../client/gateway/store.ts";
import { keyStoreBehaviour } from "../../support/key-store.ts";

describe("the project's API keys: their form, hash, ID and what a check answers", () => {
  it("a new key is oz0_ and 32 random bytes in base64url; no two alike", () => {
    const keys = Array.from({ length: 200 }, () => newKey());
    for (const k of keys) expect(k).toMatch(/^oz0_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(keys[0]?.slice(KEY_PREFIX.length) ?? "", "base64url")).toHaveLength(32);
    expect(new Set(keys).size).toBe(200);
  });

  it("a key's hash is its SHA-256 in hex, and its ID k- and the hash's first 12 characters", () => {
    const key = "oz0_example";
    const sha = createHash("sha256").update(key).digest("hex");
    expect(keyHash(key)).toBe(sha);
    expect(keyId(sha)).toBe(`k-${sha.slice(0, 12)}`);
    expect(isKeyId(keyId(sha))).toBe(true);
    expect(isKeyId("k-XYZ")).toBe(false);
    expect(isKeyId(`k-${sha.slice(0, 13)}`)).toBe(false);
  });

  it("a request's key: x-api-key (Anthropic clients) or Authorization: Bearer (OpenAI clients); anything else carries none", () => {
    expect(requestKey({ authorization: "Bearer oz0_abc" })).toBe("oz0_abc");
    expect(requestKey({ authorization: "bearer   oz0_abc  " })).toBe("oz0_abc");
    expect(requestKey({ "x-api-key": "oz0_def" })).toBe("oz0_def");
    expect(requestKey({ "x-api-key": "oz0_def", authorization: "Bearer oz0_abc" })).toBe("oz0_def");
    expect(requestKey({ authorization: ["Bearer oz0_one", "Bearer oz0_two"] })).toBe("oz0_one");
    expect(requestKey({})).toBeNull();
    expect(requestKey({ authorization: "Basic b3owOmtleQ==" })).toBeNull();
    expect(requestKey({ authorization: "Bearer two words" })).toBeNull();
    expect(requestKey({ authorization: "  " })).toBeNull();
  });

  it("a check answers unknown, revoked (over expired) or expired, each with its words, else the binding", () => {
    const b: KeyBinding = { id: "k-0123456789ab", tenant: "acme", agent: "reviewer", tree_id: "t-1", job_id: "j-1", run_id: "r-1", created_by: "alice", created_at: 1_000, expires_at: 10_000, revoked_at: null, revoked_by: null };
    expect(checkBinding(b, 9_999)).toEqual({ ok: true, binding: b });
    expect(checkBinding(null, 0)).toMatchObject({ ok: false, reason: "unknown" });
    expect(checkBinding(b, 10_000)).toEqual({ ok: false, reason: "expired", message: `The API key k-0123456789ab expired at ${new Date(10_000).toISOString()} (with its job j-1).` });
    const revoked = { ...b, revoked_at: 5_000, revoked_by: "bob" };
    expect(checkBinding(revoked, 6_000)).toEqual({ ok: false, reason: "revoked", message: `The API key k-0123456789ab was revoked by bob at ${new Date(5_000).toISOString()}.` });
    expect(checkBinding(revoked, 20_000)).toMatchObject({ reason: "revoked" });
  });
});

describe("memoryKeyStore: the KeyStore in memory behaves as the Redis one", () => {
  keyStoreBehaviour(() => {
    const store = memoryKeyStore();
    return { store, kept: () => Promise.resolve([...store.kept.entries()].map(([id, r]) => `${id} ${JSON.stringify(r)}`)) };
  });

  it("a record goes a week past its expiry, as Redis lets it go: then the key is unknown and is listed no more", async () => {
    const store = memoryKeyStore();
    const now = Date.now() - KEPT_PAST_EXPIRY_MS - 60_000;
    const { key } = await store.create({ tenant: "gone", agent: "a", tree_id: "t", job_id: "j", run_id: "r", created_by: "alice", expires_at: now + 1_000 }, now);
    expect(await store.check(key, now + 2_000)).toMatchObject({ reason: "expired" });
    expect(await store.check(key, now + 1_000 + KEPT_PAST_EXPIRY_MS)).toMatchObject({ reason: "unknown" });
    expect(await store.list({ tenant: "gone" })).toEqual([]);
  });
});
