/**
 * The trace store's objects of format 3 (one per tenant per batch, each job's records apart)
 * and their index in Redis, on the real MinIO and Redis (a Redis Cluster with
 * OZ0_TEST_REDIS=cluster): the sink's write, reading a job's trace, a tree's hold and erasure,
 * a tenant's erasure and the retention sweep taking one job's or one tree's records out of an
 * object other jobs share. No pipeline: the sink's processor and the stores are driven directly.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "minio";
import { sweepTenantTraces } from "../../processors/retention/traces.ts";
import type { InputRecord } from "../../processors/runner/processor.ts";
import { traceSinkAdmissions, traceSinkJobs } from "../../processors/trace-sink/processor.ts";
import type { Decision, JobEvent } from "../../schemas/types.ts";
import { FileStore } from "../../store/files.ts";
import { minioClient, objectPuts, readBytes } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { batchName, batchPrefix, jobPrefix, parseBatch, partName, type BatchRange, type TracePart } from "../../store/trace-parts.ts";
import { TraceStore } from "../../store/trace-store.ts";
import { eraseTenantTraces, eraseTree, heldCopyName, heldTracePrefix, holdTree, type TreeDataDeps } from "../../store/tree-data.ts";
import { TreeHolds } from "../../store/tree-holds.ts";
import { jobEvent, uid } from "../support/events.ts";
import { endpoints } from "../support/kafka.ts";

const TRACE_BUCKET = "oz0-trace-batches-test";
const FILE_BUCKET = "oz0-trace-batches-files-test";
const DAY = 86_400_000;

const keys = new Keys();
let client: Client;
let redis: RedisClient;
let traces: TraceStore;
let d: TreeDataDeps;

function decision(tenant: string, tree: string, job: string, over: Partial<Decision> = {}): Decision {
  return {
    id: uid("dec"),
    input_id: uid("in"),
    processor: "limits-jobs",
    tenant,
    tree_id: tree,
    job_id: job,
    run_id: null,
    subject: uid("child"),
    verdict: "refuse",
    reason_code: "TreeLimitExceeded",
    limit: "limits.tree.fan_out",
    numbers: { fan_out: 5 },
    message: "raise limits.tree.fan_out",
    evidence: null,
    ts: Date.now(),
    ...over,
  };
}

/** A batch of one partition of a topic no other test uses, from offset 10. */
function batchOf<T>(topic: string, values: readonly T[]): { records: InputRecord<T>[]; range: BatchRange } {
  const partition = 1_000 + Math.floor(Math.random() * 1_000_000);
  const records = values.map((value, i) => ({ topic, partition, offset: String(10 + i), key: null, value, timestamp: "0" }));
  return { records, range: { topic, partition, first: "10", last: String(10 + values.length - 1) } };
}

async function names(prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of client.listObjectsV2(TRACE_BUCKET, prefix, true)) if ((o as { name?: string }).name) out.push((o as { name: string }).name);
  return out.sort();
}

async function text(bucket: string, name: string): Promise<string> {
  return (await readBytes(await client.getObject(bucket, name))).toString("utf8");
}

async function exists(name: string): Promise<boolean> {
  return client.statObject(TRACE_BUCKET, name).then(
    () => true,
    () => false,
  );
}

/** An object's last-modified time. */
async function modified(name: string): Promise<number> {
  return (await client.statObject(TRACE_BUCKET, name)).lastModified.getTime();
}

beforeAll(async () => {
  client = minioClient(endpoints());
  redis = redisClient(endpoints());
  traces = new TraceStore({ client, bucket: TRACE_BUCKET, retentionDays: 1, index: { redis, keys } });
  await traces.ensureBucket();
  const files = new FileStore({ client, bucket: FILE_BUCKET, keys: PayloadKeys.fromMaster(Buffer.alloc(32, 7)) });
  await files.ensureBucket();
  d = { files, traces, redis, keys, holds: new TreeHolds(redis, keys) };
});

afterAll(() => {
  redis?.disconnect();
});

describe("the trace store's objects of format 3 and their index", () => {
  it("SYS-5 a batch of three jobs of two tenants is two objects (two puts, however many jobs), each job's trace reads back whole, and a replay of the batch changes nothing", async () => {
    const [t1, t2] = [uid("tenant"), uid("tenant")];
    const [j1, j2, j3] = [uid("job"), uid("job"), uid("job")];
    const events: JobEvent[] = [
      jobEvent(j1, "started", { tenant: t1 }),
      jobEvent(j2, "started", { tenant: t1 }),
      jobEvent(j3, "started", { tenant: t2 }),
      jobEvent(j1, "ended", { tenant: t1, outcome: "completed" }),
      jobEvent(j3, "ended", { tenant: t2, outcome: "completed" }),
      jobEvent(j2, "ended", { tenant: t1, outcome: "failed" }),
    ];
    const { records, range } = batchOf("oz0.jobs", events);
    const before = objectPuts();
    await traceSinkJobs.process(records, traces);
    expect(objectPuts() - before).toBe(2);
    const objects = [batchName(t1, range), batchName(t2, range)];
    expect([...(await names(batchPrefix(t1))), ...(await names(batchPrefix(t2)))]).toEqual(objects);
    // Each job's records apart in its tenant's object.
    const stored = parseBatch(await text(TRACE_BUCKET, objects[0] ?? ""), objects[0] ?? "");
    expect(stored.jobs.map((j) => [j.job_id, j.jobs.map((e) => e.kind)])).toEqual([
      [j1, ["started", "ended"]],
      [j2, ["started", "ended"]],
    ]);
    // Indexed by tenant and job, expiring a day past the trace retention (1 day here).
    expect(await traces.indexedObjects(t1, j1)).toEqual([objects[0]]);
    expect(await traces.indexedObjects(t1, j2)).toEqual([objects[0]]);
    expect(await traces.indexedObjects(t2, j3)).toEqual([objects[1]]);
    expect(await traces.indexedObjects(t2, j1)).toEqual([]);
    const ttl = await redis.ttl(keys.traceJob(t1, j1));
    expect(ttl).toBeGreaterThan(DAY / 1000);
    expect(ttl).toBeLessThanOrEqual((2 * DAY) / 1000);

    const read = async () => ({
      j1: await traces.read(j1, t1),
      j2: await traces.read(j2, t1),
      j3: await traces.read(j3, t2),
      j3AnyTenant: await traces.read(j3),
    });
    const first = await read();
    const ids = (t: { readonly jobs?: readonly JobEvent[] }) => (t.jobs ?? []).map((e) => e.id).sort();
    expect(ids(first.j1)).toEqual([events[0]?.id, events[3]?.id].sort());
    expect(ids(first.j2)).toEqual([events[1]?.id, events[5]?.id].sort());
    expect(ids(first.j3)).toEqual([events[2]?.id, events[4]?.id].sort());
    expect(first.j3AnyTenant).toEqual(first.j3);
    const bytes = await Promise.all(objects.map((n) => text(TRACE_BUCKET, n)));

    // The replay: the same batch again writes the same two objects and the same index.
    await traceSinkJobs.process(records, traces);
    expect([...(await names(batchPrefix(t1))), ...(await names(batchPrefix(t2)))]).toEqual(objects);
    expect(await Promise.all(objects.map((n) => text(TRACE_BUCKET, n)))).toEqual(bytes);
    expect(await traces.indexedObjects(t1, j1)).toEqual([objects[0]]);
    expect(await read()).toEqual(first);
  });

  it("SYS-5 parts of format 2 written before still read, merged with the objects of format 3, each record once; an indexed object that is gone is skipped", async () => {
    const tenant = uid("tenant");
    const job = uid("job");
    const [old, both, fresh] = [decision(tenant, job, job), decision(tenant, job, job), decision(tenant, job, job)];
    const range: BatchRange = { topic: "oz0.admissions", partition: 7, first: "1", last: "2" };
    const part: TracePart = { v: 2, tenant, job_id: job, entries: [], decisions: [old, both], jobs: [] };
    const body = Buffer.from(JSON.stringify(part));
    await client.putObject(TRACE_BUCKET, partName(tenant, job, range), body, body.length);
    const { records, range: newer } = batchOf("oz0.admissions", [both, fresh]);
    await traceSinkAdmissions.process(records, traces);
    expect((await traces.read(job, tenant)).decisions.map((x) => x.id).sort()).toEqual([old.id, both.id, fresh.id].sort());
    expect((await traces.read(job)).decisions).toHaveLength(3);

    await client.removeObject(TRACE_BUCKET, batchName(tenant, newer));
    expect(await traces.indexedObjects(tenant, job)).toEqual([batchName(tenant, newer)]);
    expect((await traces.read(job, tenant)).decisions.map((x) => x.id).sort()).toEqual([old.id, both.id].sort());
  });

  it("OFF-10 a tree's hold copies only its jobs' records out of a shared object; its erasure takes them out of the object, which keeps another tree's job's records, and removes their index", async () => {
    const tenant = uid("tenant");
    const [root, child, other] = [uid("tree"), uid("job"), uid("tree")];
    await redis.hset(keys.limits(tenant, root), { [`job:${root}:agent`]: "a", [`job:${child}:agent`]: "b" });
    const shared = [decision(tenant, root, root), decision(tenant, root, child), decision(tenant, other, other), decision(tenant, root, child)];
    const { records, range } = batchOf("oz0.admissions", shared);
    await traceSinkAdmissions.process(records, traces);
    // A batch of the tree alone: its object goes whole.
    const { records: alone, range: aloneRange } = batchOf("oz0.admissions", [decision(tenant, root, root)]);
    await traceSinkAdmissions.process(alone, traces);
    const [sharedName, aloneName] = [batchName(tenant, range), batchName(tenant, aloneRange)];

    const held = await holdTree(d, tenant, root, { reason: "matter 7", by: "dana", at: Date.now() });
    expect(held.inventory.traceParts).toEqual([sharedName, aloneName].sort());
    const prefix = heldTracePrefix(tenant, root);
    const copies = (await (async () => {
      const out: string[] = [];
      for await (const o of client.listObjectsV2(FILE_BUCKET, prefix, true)) if ((o as { name?: string }).name) out.push((o as { name: string }).name);
      return out;
    })()).sort();
    expect(copies).toEqual([`${prefix}${heldCopyName(sharedName, root)}`, `${prefix}${heldCopyName(sharedName, child)}`, `${prefix}${heldCopyName(aloneName, root)}`].sort());
    expect(heldCopyName(sharedName, child)).toBe(partName(tenant, child, range));
    for (const c of copies) expect(await text(FILE_BUCKET, c)).not.toContain(other);
    expect(await d.holds.clear(tenant, root)).not.toBeNull();

    const erased = await eraseTree(d, tenant, root);
    expect(erased.outcome).toBe("erased");
    expect(await exists(aloneName)).toBe(false);
    const left = parseBatch(await text(TRACE_BUCKET, sharedName), sharedName);
    expect(left.jobs.map((j) => j.job_id)).toEqual([other]);
    expect((await traces.read(root, tenant)).decisions).toEqual([]);
    expect((await traces.read(child, tenant)).decisions).toEqual([]);
    expect((await traces.read(other, tenant)).decisions.map((x) => x.id)).toEqual([shared[2]?.id]);
    expect([await redis.exists(keys.traceJob(tenant, root)), await redis.exists(keys.traceJob(tenant, child)), await redis.exists(keys.traceJob(tenant, other))]).toEqual([0, 0, 1]);
  });

  it("OFF-10 a held tree's records in a shared object survive its retention: the object is written again with them only (renewed, its jobs indexed again); the others go, and once the hold is gone so does it", async () => {
    const tenant = uid("tenant");
    const [heldTree, heldChild, free] = [uid("tree"), uid("job"), uid("tree")];
    const shared = [decision(tenant, heldTree, heldTree), decision(tenant, free, free), decision(tenant, heldTree, heldChild)];
    const { records, range } = batchOf("oz0.admissions", shared);
    await traceSinkAdmissions.process(records, traces);
    const { records: freeOnly, range: freeRange } = batchOf("oz0.admissions", [decision(tenant, free, free)]);
    await traceSinkAdmissions.process(freeOnly, traces);
    const [sharedName, freeName] = [batchName(tenant, range), batchName(tenant, freeRange)];
    const written = await modified(sharedName);
    await redis.expire(keys.traceJob(tenant, heldChild), 60);

    const now = Date.now() + 2 * DAY;
    const sweep = (heldTrees: ReadonlySet<string>, dryRun = false) => sweepTenantTraces({ client, bucket: TRACE_BUCKET, tenant, now, retentionMs: DAY, heldTrees, store: traces, dryRun });
    const dry = await sweep(new Set([heldTree]), true);
    expect([dry.removed, dry.held]).toEqual([1, [sharedName]]);
    expect(parseBatch(await text(TRACE_BUCKET, sharedName), sharedName).jobs).toHaveLength(3);

    const report = await sweep(new Set([heldTree]));
    expect(report.removed).toBe(1);
    expect(report.held).toEqual([sharedName]);
    expect(report.jobs).toEqual([free]);
    expect(await exists(freeName)).toBe(false);
    const kept = parseBatch(await text(TRACE_BUCKET, sharedName), sharedName);
    expect(kept.jobs.map((j) => j.job_id)).toEqual([heldTree, heldChild]);
    expect(await modified(sharedName)).toBeGreaterThanOrEqual(written);
    expect(await redis.ttl(keys.traceJob(tenant, heldChild))).toBeGreaterThan(DAY / 1000);
    expect((await traces.read(heldChild, tenant)).decisions.map((x) => x.id)).toEqual([shared[2]?.id]);
    expect((await traces.read(heldTree, tenant)).decisions.map((x) => x.id)).toEqual([shared[0]?.id]);
    expect((await traces.read(free, tenant)).decisions).toEqual([]);

    // The same sweep again: it holds only held records now, kept as it is.
    const again = await sweep(new Set([heldTree]));
    expect([again.removed, again.held]).toEqual([0, [sharedName]]);
    // The hold cleared: past its retention, it goes.
    const released = await sweep(new Set());
    expect([released.removed, released.held]).toEqual([1, []]);
    expect(await names(batchPrefix(tenant))).toEqual([]);
  });

  it("OFF-10 a tenant's erasure keeps a held tree's records of a shared object (written again with them only) and its jobs' index; everything else and the rest of its index go", async () => {
    const tenant = uid("tenant");
    const [heldTree, free] = [uid("tree"), uid("tree")];
    const { records, range } = batchOf("oz0.admissions", [decision(tenant, heldTree, heldTree), decision(tenant, free, free)]);
    await traceSinkAdmissions.process(records, traces);
    const { records: freeOnly } = batchOf("oz0.admissions", [decision(tenant, free, free)]);
    await traceSinkAdmissions.process(freeOnly, traces);
    const report = await eraseTenantTraces(traces, tenant, { trees: [heldTree], keepTracePrefixes: [jobPrefix(tenant, heldTree)], keepJobs: [heldTree] });
    expect([report.erased, report.kept]).toEqual([1, 1]);
    expect(await names(batchPrefix(tenant))).toEqual([batchName(tenant, range)]);
    expect((await traces.read(heldTree, tenant)).decisions).toHaveLength(1);
    expect((await traces.read(free, tenant)).decisions).toEqual([]);
    expect([await redis.exists(keys.traceJob(tenant, heldTree)), await redis.exists(keys.traceJob(tenant, free))]).toEqual([1, 0]);

    // Without a held tree: the prefix and the whole index.
    expect(await traces.eraseTenant(tenant)).toMatchObject({ erased: 1 });
    expect(await names(batchPrefix(tenant))).toEqual([]);
    expect(await redis.exists(keys.traceJob(tenant, heldTree))).toBe(0);
  });
});
