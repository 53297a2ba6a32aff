/**
 * `oz0 keys create|list|revoke` run as a person runs them, against the real Redis and Kafka:
 * the key printed once and kept only hashed, the listing never showing it, revocation once,
 * and each making and revocation in the audit log naming the key's ID, never the key.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyHash } from "../../client/gateway/keys.ts";
import { redisKeyStore } from "../../client/gateway/redis-store.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import type { AuditEvent } from "../../schemas/types.ts";
import { uid } from "../support/events.ts";
import { collect, endpoints, serde } from "../support/kafka.ts";
import { oz0 } from "../support/oz0.ts";

interface Listed {
  id: string;
  tenant: string;
  agent: string;
  job_id: string;
  tree_id: string;
  run_id: string;
  created_by: string;
  expires_at: number;
  revoked_by: string | null;
  state: string;
}

describe("oz0 keys: the project's API keys made, listed and revoked from the command line, and audited", () => {
  let redis: RedisClient;
  beforeAll(() => {
    redis = redisClient(endpoints());
  });
  afterAll(() => redis?.disconnect());

  it("create prints the key once with its ID, binding and expiry; only its hash is kept; list shows the key's state, never the key; revoke holds once; each audited by ID", async () => {
    const tenant = uid("keys").replace(/-/g, "_");
    const made = await oz0(["keys", "create", "--tenant", tenant, "--agent", "reviewer", "--job", "job-1", "--tree", "tree-1", "--run", "run-1", "--expires", "2h", "--as", "alice", "--json"]);
    expect(made.code, made.err).toBe(0);
    const k = JSON.parse(made.out) as Listed & { key: string; new_job: boolean; created_at: number };
    expect(k).toMatchObject({ tenant, agent: "reviewer", job_id: "job-1", tree_id: "tree-1", run_id: "run-1", created_by: "alice", state: "active", new_job: false });
    expect(k.key).toMatch(/^oz0_/);
    expect(k.expires_at - k.created_at).toBe(2 * 3600_000);
    const record = await redis.hgetall(new Keys().apiKey(k.id));
    expect(record.hash).toBe(keyHash(k.key));
    expect(JSON.stringify(record)).not.toContain(k.key);
    expect(await redisKeyStore(redis, new Keys()).check(k.key, Date.now())).toMatchObject({ ok: true, binding: { id: k.id, job_id: "job-1" } });

    // Without --job, a new job ID is made and named, with what starts it.
    const fresh = await oz0(["keys", "create", "--tenant", tenant, "--agent", "writer", "--as", "alice"]);
    expect(fresh.code, fresh.err).toBe(0);
    expect(fresh.out).toMatch(/^key k-[0-9a-f]{12} made by alice for tenant .*, agent writer: job job-[0-9a-f-]{36} \(tree job-[0-9a-f-]{36}, run job-[0-9a-f-]{36}-run\); expires .* \(in 1d\)\n/);
    expect(fresh.out).toMatch(/has not started: its runtime starts it under that ID \(oz0 run starts a job and makes its key in one\)/);
    const freshKey = /\n(oz0_\S+)\n$/.exec(fresh.out)?.[1];
    expect(freshKey).toBeDefined();

    const list = await oz0(["keys", "list", "--tenant", tenant]);
    expect(list.code, list.err).toBe(0);
    expect(list.out).toMatch(/^ID +TENANT +AGENT +JOB +CREATED +EXPIRES +STATE\n/);
    expect(list.out).toMatch(new RegExp(`${k.id} +${tenant} +reviewer +job-1 +\\S+ +\\S+ +active`));
    expect(list.out).not.toContain(k.key);
    expect(list.out).not.toContain(freshKey);
    const byJob = JSON.parse((await oz0(["keys", "list", "--tenant", tenant, "--job", "job-1", "--json"])).out) as Listed[];
    expect(byJob.map((b) => b.id)).toEqual([k.id]);

    const revoked = await oz0(["keys", "revoke", k.id, "--as", "bob"]);
    expect(revoked.code, revoked.err).toBe(0);
    expect(revoked.out).toContain(`revoked ${k.id} as bob`);
    const again = await oz0(["keys", "revoke", k.id, "--as", "carol"]);
    expect([again.code, again.err]).toEqual([1, expect.stringMatching(new RegExp(`key ${k.id} was revoked already by bob at .*; nothing changed`))]);
    const after = JSON.parse((await oz0(["keys", "list", "--tenant", tenant, "--job", "job-1", "--json"])).out) as Listed[];
    expect(after.map((b) => [b.id, b.state, b.revoked_by])).toEqual([[k.id, "revoked", "bob"]]);
    expect(await redisKeyStore(redis, new Keys()).check(k.key, Date.now())).toMatchObject({ ok: false, reason: "revoked" });

    const s = await serde();
    const entries = await collect<AuditEvent>("oz0.audit", "AuditEvent", s, (e) => e.kind.startsWith("key.") && e.tenant === tenant, 3, 60_000, 2_000);
    expect(entries.map((e) => [e.kind, e.actor, e.facts.agent])).toEqual([
      ["key.created", "alice", "reviewer"],
      ["key.created", "alice", "writer"],
      ["key.revoked", "bob", "reviewer"],
    ]);
    expect(entries[0]).toMatchObject({ job_id: "job-1", tree_id: "tree-1", facts: { key_id: k.id, run_id: "run-1", created_by: "alice" } });
    expect(entries[2]?.facts.key_id).toBe(k.id);
    const text = JSON.stringify(entries);
    expect(text).not.toContain(k.key);
    expect(text).not.toContain(freshKey);
  });

  it("revoke --job revokes every key of one job of the tenant and no other's; unknown IDs and usage errors say so with exits 1 and 2", async () => {
    const tenant = uid("keys").replace(/-/g, "_");
    const ids: string[] = [];
    for (const [job, agent] of [["job-a", "reviewer"], ["job-a", "writer"], ["job-b", "reviewer"]] as const) {
      const r = await oz0(["keys", "create", "--tenant", tenant, "--agent", agent, "--job", job, "--as", "alice", "--json"]);
      expect(r.code, r.err).toBe(0);
      ids.push((JSON.parse(r.out) as Listed).id);
    }
    const job = await oz0(["keys", "revoke", "--job", "job-a", "--tenant", tenant, "--as", "bob", "--json"]);
    expect(job.code, job.err).toBe(0);
    const said = JSON.parse(job.out) as { revoked: Listed[] };
    expect(said.revoked.map((b) => b.id).sort()).toEqual([ids[0], ids[1]].sort());
    const twice = await oz0(["keys", "revoke", "--job", "job-a", "--tenant", tenant]);
    expect([twice.code, twice.err]).toEqual([1, expect.stringMatching(/has no key left to revoke; nothing changed/)]);
    const states = JSON.parse((await oz0(["keys", "list", "--tenant", tenant, "--json"])).out) as Listed[];
    expect(Object.fromEntries(states.map((b) => [b.id, b.state]))).toEqual({ [ids[0] as string]: "revoked", [ids[1] as string]: "revoked", [ids[2] as string]: "active" });
    const s = await serde();
    const entries = await collect<AuditEvent>("oz0.audit", "AuditEvent", s, (e) => e.kind === "key.revoked" && e.tenant === tenant, 2, 60_000, 2_000);
    expect(entries.map((e) => e.facts.key_id).sort()).toEqual([ids[0], ids[1]].sort());

    const unknown = await oz0(["keys", "revoke", "k-000000000000"]);
    expect([unknown.code, unknown.err]).toEqual([1, expect.stringMatching(/no API key k-000000000000/)]);
    for (const [args, why] of [
      [["keys", "revoke", "oz0_notanid"], /is not a key ID.*that is a key itself/],
      [["keys", "revoke", "--job", "job-a"], /a job's keys are named by both/],
      [["keys", "create", "--tenant", tenant], /give the tenant and the agent/],
      [["keys", "create", "--tenant", tenant, "--agent", "a", "--expires", "soon"], /--expires soon: /],
      [["keys", "create", "--tenant", tenant, "--agent", "a", "--expires", "0s"], /give a time above 0/],
    ] as const) {
      const r = await oz0(args);
      expect([r.code, r.err], args.join(" ")).toEqual([2, expect.stringMatching(why)]);
    }
    const help = await oz0(["keys", "create", "--help"]);
    expect([help.code, help.out]).toEqual([0, expect.stringMatching(/^oz0 keys create --tenant T --agent A/)]);
  });
});
