/**
 * Retention that runs (FILE-6, OFF-10) on the real MinIO (the file bucket with object lock) and
 * Redis: the sweep driven directly with an injected clock, on buckets and a Redis key prefix of
 * the test's own, and `oz0 retention status` as a person runs it.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Client } from "minio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../processors/runner/log.ts";
import { renderMetrics } from "../../processors/ops/metrics.ts";
import { redisRetentionStore } from "../../processors/retention/redis-store.ts";
import { startRetentionTimer } from "../../processors/retention/timer.ts";
import { sweepRound, type RetentionDeps, type TenantSweep } from "../../processors/retention/sweep.ts";
import { TraceStore } from "../../store/trace-store.ts";
import { partsByJob, tenantPrefix } from "../../store/trace-parts.ts";
import type { AuditEvent } from "../../schemas/types.ts";
import { fileNames, FileStore, RETENTION_MS } from "../../store/files.ts";
import { minioClient, parseRef } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { runScript } from "../../store/redis/scripts.ts";
import { TreeHolds } from "../../store/tree-holds.ts";
import { jobEvent, uid } from "../support/events.ts";
import { collect, endpoints, kafka, serde } from "../support/kafka.ts";
import { oz0 } from "../support/oz0.ts";

const DAY = 24 * 60 * 60 * 1000;

async function exists(client: Client, bucket: string, name: string): Promise<boolean> {
  return client.statObject(bucket, name).then(
    () => true,
    () => false,
  );
}

async function traceNames(client: Client, bucket: string, tenant: string): Promise<string[]> {
  const out: string[] = [];
  for await (const item of client.listObjectsV2(bucket, tenantPrefix(tenant), true)) if ((item as { name?: string }).name) out.push((item as { name: string }).name);
  return out.sort();
}

async function emptyBucket(client: Client, bucket: string): Promise<void> {
  for await (const item of client.listObjects(bucket, "", true, { IncludeVersion: true })) {
    const o = item as { name?: string; versionId?: string };
    if (!o.name) continue;
    const opts = o.versionId ? { versionId: o.versionId } : {};
    await (client.setObjectLegalHold(bucket, o.name, { status: "OFF", ...opts }) as unknown as Promise<void>).catch(() => undefined);
    await client.removeObject(bucket, o.name, opts).catch(() => undefined);
  }
  await client.removeBucket(bucket).catch(() => undefined);
}

const byTenant = (rs: readonly TenantSweep[]): Map<string, TenantSweep> => new Map(rs.map((r) => [r.tenant, r]));

describe("retention that runs (FILE-6, OFF-10)", () => {
  const fileBucket = uid("oz0-ret-files").toLowerCase();
  const traceBucket = uid("oz0-ret-traces").toLowerCase();
  const keys = new Keys(uid("ret").replace(/-/g, "_"));
  const t0 = Date.now();
  let clock = t0;
  let client: Client;
  let files: FileStore;
  let traces: TraceStore;
  let redis: RedisClient;
  let holds: TreeHolds;
  let audit: AuditEvent[];

  const deps = (traceRetentionMs: number, over: Partial<RetentionDeps> = {}): RetentionDeps => ({
    files,
    traces,
    traceRetentionMs,
    state: redisRetentionStore(redis, keys),
    heldTrees: (tenant) => holds.heldTrees(tenant),
    publish: (entries) => {
      audit.push(...entries);
      return Promise.resolve();
    },
    ...over,
  });

  beforeAll(async () => {
    client = minioClient(endpoints());
    files = new FileStore({ client, bucket: fileBucket, keys: PayloadKeys.fromMaster(Buffer.alloc(32, 9)), now: () => clock });
    await files.ensureBucket();
    redis = redisClient(endpoints());
    traces = new TraceStore({ client, bucket: traceBucket, retentionDays: 1, index: { redis, keys } });
    await traces.ensureBucket();
    holds = new TreeHolds(redis, keys);
  });

  afterAll(async () => {
    await emptyBucket(client, fileBucket);
    await emptyBucket(client, traceBucket);
    const left = await redis.keys(`${keys.prefix}:*`);
    if (left.length > 0) await redis.del(...left);
    redis.disconnect();
  });

  it("FILE-6 OFF-10 a sweep removes exactly the expired files and trace parts of several tenants, keeps a legal-held file and a held tree's, removes nothing more when run again, and records and audits each tenant", async () => {
    audit = [];
    const [a, b] = [uid("ret-a"), uid("ret-b")];
    const [treeA, treeB, heldTree] = [uid("tree"), uid("tree"), uid("tree")];
    clock = t0;
    const oldA = await files.store({ tenant: a, tree: treeA }, Buffer.from(`old file of ${a}`));
    const legalHeld = await files.store({ tenant: a, tree: treeA }, Buffer.from(`held file of ${a}`));
    await files.setLegalHold(a, legalHeld.ref, true);
    const oldB = await files.store({ tenant: b, tree: treeB }, Buffer.from(`old file of ${b}`));
    const ofHeldTree = await files.store({ tenant: b, tree: heldTree }, Buffer.from(`file of a held tree of ${b}`));
    await holds.set(b, heldTree, { reason: "litigation", by: "dana", at: t0 });
    // Trace parts written now, then (after the cut) parts written later.
    await traces.write({ topic: "oz0.jobs", partition: 0, first: "1", last: "2" }, partsByJob([{ job: jobEvent(treeA, "started", { tenant: a }) }, { job: jobEvent(treeB, "started", { tenant: b }) }, { job: jobEvent(heldTree, "started", { tenant: b }) }]));
    await sleep(1500);
    const cut = Date.now();
    await sleep(1500);
    await traces.write({ topic: "oz0.jobs", partition: 0, first: "3", last: "4" }, partsByJob([{ job: jobEvent(treeA, "ended", { tenant: a }) }, { job: jobEvent(treeB, "ended", { tenant: b }) }]));
    clock = t0 + 60 * DAY;
    const freshA = await files.store({ tenant: a, tree: treeA }, Buffer.from(`fresh file of ${a}`));
    const freshB = await files.store({ tenant: b, tree: treeB }, Buffer.from(`fresh file of ${b}`));
    const now = t0 + RETENTION_MS;
    // Trace parts written up to the cut are past retention at `now`; later ones are not.
    const traceRetentionMs = now - cut;
    const partsBefore = { a: await traceNames(client, traceBucket, a), b: await traceNames(client, traceBucket, b) };
    // One object per tenant per batch: b's first holds treeB's records and the held tree's.
    expect([partsBefore.a.length, partsBefore.b.length]).toEqual([2, 2]);

    const first = byTenant(await sweepRound(deps(traceRetentionMs), { instance: "pipe-1", now, tenants: [a, b] }));
    expect(first.get(a)).toMatchObject({ outcome: "swept", removed: { files: 1, grants: 1, traces: 1 }, held: { files: 1, traces: 0 }, refs: { filesRemoved: [oldA.ref], filesHeld: [legalHeld.ref] }, errors: [] });
    // b's expired object holds the held tree's records: written again with those only (renewed), treeB's gone from it.
    expect(first.get(b)).toMatchObject({ outcome: "swept", removed: { files: 1, grants: 1, traces: 0 }, held: { files: 1, traces: 1 }, refs: { filesRemoved: [oldB.ref], filesHeld: [ofHeldTree.ref], traceJobsRemoved: [treeB] }, errors: [] });
    expect((await traces.read(treeB, b)).jobs?.map((j) => j.kind)).toEqual(["ended"]);
    expect((await traces.read(heldTree, b)).jobs?.map((j) => j.kind)).toEqual(["started"]);

    const data = (tenant: string, ref: string): string => fileNames.data(tenant, parseRef(ref));
    expect(await exists(client, fileBucket, data(a, oldA.ref))).toBe(false);
    expect(await exists(client, fileBucket, data(b, oldB.ref))).toBe(false);
    expect(await files.grantOf({ tenant: a, tree: treeA }, oldA.ref)).toBeNull();
    for (const [tenant, ref] of [[a, legalHeld.ref], [b, ofHeldTree.ref], [a, freshA.ref], [b, freshB.ref]] as const) expect(await exists(client, fileBucket, data(tenant, ref)), ref).toBe(true);
    expect(await files.grantOf({ tenant: b, tree: heldTree }, ofHeldTree.ref)).not.toBeNull();
    const partsAfter = { a: await traceNames(client, traceBucket, a), b: await traceNames(client, traceBucket, b) };
    expect(partsAfter.a).toHaveLength(1);
    expect(partsAfter.a[0]).toMatch(/-00000000000000000004\.json$/);
    // b: its later object and the early one, now holding the held tree's records only, stay.
    expect(partsAfter.b).toHaveLength(2);
    expect(partsAfter.b.filter((n) => n.endsWith("-00000000000000000002.json"))).toHaveLength(1);

    // Recorded per tenant, audited per tenant with counts and refs, never content.
    const records = await redisRetentionStore(redis, keys).last();
    expect(records.map((r) => [r.tenant, r.instance, r.at, r.removed.files, r.held.files]).sort()).toEqual([[a, "pipe-1", now, 1, 1], [b, "pipe-1", now, 1, 1]].sort());
    expect(audit.map((e) => e.tenant).sort()).toEqual([a, b].sort());
    const entryA = audit.find((e) => e.tenant === a);
    expect(entryA).toMatchObject({ kind: "retention.swept", actor: "retention", facts: { instance: "pipe-1", files_removed: oldA.ref, files_held: legalHeld.ref }, numbers: { files_removed: 1, grants_removed: 1, trace_parts_removed: 1, files_held: 1 } });
    expect(JSON.stringify(audit)).not.toMatch(/old file of|held file of|file of a held tree/);

    // Idempotent: the same sweep again removes nothing more.
    audit = [];
    const again = byTenant(await sweepRound(deps(traceRetentionMs), { instance: "pipe-2", now, tenants: [a, b] }));
    for (const t of [a, b]) expect(again.get(t)?.removed).toEqual({ files: 0, grants: 0, traces: 0 });
    expect(again.get(a)?.held).toEqual({ files: 1, traces: 0 });
    // b's early object was renewed when written again: not past its retention now.
    expect(again.get(b)?.held).toEqual({ files: 1, traces: 0 });
    expect(await traceNames(client, traceBucket, b)).toEqual(partsAfter.b);

    // Holds cleared: the next sweep removes what they kept.
    await files.setLegalHold(a, legalHeld.ref, false);
    await holds.clear(b, heldTree);
    const released = byTenant(await sweepRound(deps(traceRetentionMs), { instance: "pipe-1", now, tenants: [a, b] }));
    expect(released.get(a)).toMatchObject({ removed: { files: 1, grants: 1, traces: 0 }, held: { files: 0, traces: 0 } });
    expect(released.get(b)).toMatchObject({ removed: { files: 1, grants: 1, traces: 0 }, held: { files: 0, traces: 0 } });
    expect(await exists(client, fileBucket, data(b, ofHeldTree.ref))).toBe(false);
  });

  it("OFF-10 two sweepers at once sweep each tenant once (a lock per tenant); a tenant locked by another instance is skipped and said so; a lock is released only by its holder", async () => {
    audit = [];
    const tenants = [uid("lock-a"), uid("lock-b"), uid("lock-c")].sort();
    clock = t0;
    for (const t of tenants) await files.store({ tenant: t, tree: uid("tree") }, Buffer.from(`expiring file of ${t}`));
    const now = t0 + RETENTION_MS;
    const [one, two] = await Promise.all([
      sweepRound(deps(0), { instance: "pipe-1", now, tenants, minGapMs: 60 * 60 * 1000 }),
      sweepRound(deps(0), { instance: "pipe-2", now, tenants, minGapMs: 60 * 60 * 1000 }),
    ]);
    for (const t of tenants) {
      const outcomes = [one, two].map((r) => byTenant(r).get(t));
      expect(outcomes.filter((o) => o?.outcome === "swept"), t).toHaveLength(1);
      expect(outcomes.filter((o) => o?.outcome === "locked" || o?.outcome === "recent"), t).toHaveLength(1);
      expect(outcomes.reduce((n, o) => n + (o?.removed.files ?? 0), 0), t).toBe(1);
    }
    expect(audit.map((e) => e.tenant).sort()).toEqual(tenants);

    // Another instance holds the lock: skipped, naming it.
    const state = redisRetentionStore(redis, keys);
    const [t] = tenants as [string];
    const taken = await state.lock(t, "pipe-9", 60_000);
    if (!("lock" in taken)) throw new Error(`the lock was not free: ${taken.heldBy}`);
    const skipped = await sweepRound(deps(0), { instance: "pipe-1", now: now + DAY, tenants: [t] });
    expect(skipped[0]).toMatchObject({ tenant: t, outcome: "locked", by: "pipe-9" });
    // Compare-and-delete: another value does not release it; its holder does.
    expect(await runScript(redis, "retentionUnlock", [keys.retentionLock(t)], ["pipe-1\nnot-its-token"])).toBe(0);
    expect(await redis.get(keys.retentionLock(t))).toBe(taken.lock.value);
    expect(await taken.lock.extend(30_000)).toBe(true);
    await taken.lock.release();
    expect(await redis.get(keys.retentionLock(t))).toBeNull();
  });

  it("FILE-6 an agent's keep-for period does not lengthen a file's retention: only the tree's last store counts, whatever else its grant says, and reads do not renew it", async () => {
    const tenant = uid("keep");
    const tree = uid("tree");
    clock = t0;
    const stored = await files.store({ tenant, tree }, Buffer.from(`kept for a year, says the agent ${uid("x")}`));
    // A grant that also claims a keep-for period of a year, as a writer that honoured an agent's might have left it.
    const name = fileNames.grant(tenant, parseRef(stored.ref), tree);
    const grant = { ...(await files.grantOf({ tenant, tree }, stored.ref)), keep_for: "365d", keep_until: t0 + 365 * DAY };
    const body = Buffer.from(JSON.stringify(grant));
    await client.putObject(fileBucket, name, body, body.length);
    clock = t0 + RETENTION_MS - DAY;
    expect((await files.read({ tenant, tree }, stored.ref)).expiresAt).toBe(t0 + RETENTION_MS);
    const before = await sweepRound(deps(0), { instance: "pipe-1", now: clock, tenants: [tenant] });
    expect(before[0]?.removed).toEqual({ files: 0, grants: 0, traces: 0 });
    const at = await sweepRound(deps(0), { instance: "pipe-1", now: t0 + RETENTION_MS, tenants: [tenant] });
    expect(at[0]?.removed).toEqual({ files: 1, grants: 1, traces: 0 });
    expect(await exists(client, fileBucket, fileNames.data(tenant, parseRef(stored.ref)))).toBe(false);
  });

  it("OFF-10 oz0 retention status shows each tenant's last sweep and what is due now, from a dry run that removes nothing", async () => {
    // The command reads the default Redis prefix and real time: a tenant of the test's own, files stored 91 days ago.
    const tenant = uid("status");
    const tree = uid("tree");
    const past = new FileStore({ client, bucket: fileBucket, keys: PayloadKeys.fromMaster(Buffer.alloc(32, 9)), now: () => Date.now() - 91 * DAY });
    const old = await past.store({ tenant, tree }, Buffer.from(`old ${uid("x")}`));
    await files.store({ tenant, tree }, Buffer.from(`new ${uid("x")}`));
    const env = { OZ0_BUCKET: fileBucket, OZ0_TRACE_BUCKET: traceBucket };

    const due = await oz0(["retention", "status", "--tenant", tenant, "--json"], env);
    expect(due.code, due.err).toBe(0);
    expect(JSON.parse(due.out)).toMatchObject({ retention: { files_days: 90, traces_days: 30 }, tenants: [{ tenant, last: null, due: { files: 1, grants: 1, traces: 0, held: { files: 0, traces: 0 } } }] });
    expect(await exists(client, fileBucket, fileNames.data(tenant, parseRef(old.ref)))).toBe(true);

    const defaultKeys = new Keys();
    try {
      const swept = await sweepRound(deps(30 * DAY, { state: redisRetentionStore(redis, defaultKeys), publish: undefined }), { instance: "status-test", now: Date.now(), tenants: [tenant] });
      expect(swept[0]?.removed).toEqual({ files: 1, grants: 1, traces: 0 });
      const text = await oz0(["retention", "status", "--tenant", tenant], env);
      expect(text.code, text.err).toBe(0);
      expect(text.out).toMatch(new RegExp(`tenant ${tenant}\\n  last sweep: \\S+ \\(\\S+ ago\\) by status-test, [\\d.]+ s\\n    removed 1 file, 1 grant, 0 trace parts; held back 0 files, 0 trace parts\\n  due now: nothing\\n`));
      const usage = await oz0(["retention", "status", "extra"], env);
      expect([usage.code, usage.err]).toEqual([2, expect.stringMatching(/takes no arguments/)]);
    } finally {
      await redis.hdel(defaultKeys.retentionLast(), tenant);
    }
  });

  it("OFF-10 the pipeline's retention timer sweeps soon after its start, publishes retention.swept on oz0.audit and counts it in its metrics", async () => {
    const tenant = uid("timer");
    const past = new FileStore({ client, bucket: fileBucket, keys: PayloadKeys.fromMaster(Buffer.alloc(32, 9)), now: () => Date.now() - 91 * DAY });
    const old = await past.store({ tenant, tree: uid("tree") }, Buffer.from(`old ${uid("x")}`));
    const instance = uid("pipe");
    const s = await serde();
    const timer = await startRetentionTimer({ ...deps(30 * DAY), kafka: kafka(), serde: s, log: createLogger({ component: "test" }, () => {}), schedule: { everyMs: 60 * 60 * 1000, firstMs: 200 }, instance });
    try {
      const [entry] = await collect<AuditEvent>("oz0.audit", "AuditEvent", s, (e) => e.kind === "retention.swept" && e.tenant === tenant, 1, 60_000);
      expect(entry).toMatchObject({ actor: "retention", facts: { instance, files_removed: old.ref }, numbers: { files_removed: 1, grants_removed: 1 } });
      // The round ends once every tenant of the buckets is swept.
      let text = await renderMetrics(timer.metrics());
      for (let i = 0; i < 300 && /oz0_retention_last_sweep_timestamp_seconds 0\n/.test(text); i++) {
        await sleep(100);
        text = await renderMetrics(timer.metrics());
      }
      expect(Number(/oz0_retention_removed_total\{kind="file"\} (\d+)/.exec(text)?.[1])).toBeGreaterThanOrEqual(1);
      expect(Number(/oz0_retention_last_sweep_timestamp_seconds (\d+)/.exec(text)?.[1])).toBeGreaterThan(0);
      expect((await redisRetentionStore(redis, keys).last(tenant))[0]).toMatchObject({ instance, removed: { files: 1, grants: 1 } });
    } finally {
      await timer.stop();
    }
  });
});
