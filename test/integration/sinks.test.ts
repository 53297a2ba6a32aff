import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setGroupOffsets } from "../../topology/group-offsets.ts";
import type { Producer } from "kafkajs";
import type { Client } from "minio";
import { formatTrace } from "../../client/trace-format.ts";
import { auditSinkAdmissions, auditSinkAudit, auditSinkCallDecisions, auditSinkConfig, auditSinkLoopApprovals } from "../../processors/audit-sink/processor.ts";
import { loopCounts, selectEntries } from "../../processors/audit-sink/query.ts";
import { AuditLog } from "../../processors/audit-sink/store.ts";
import { fitResult, FIT_SECTION, OFFLOAD_SECTION } from "../../processors/fit-results/processor.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { InputRecord, Processor } from "../../processors/runner/processor.ts";
import { startProcessor, type RunningProcessor } from "../../processors/runner/runner.ts";
import { KafkaTransport } from "../../processors/runner/transport.ts";
import { traceSinkAdmissions, traceSinkCallDecisions, traceSinkEntries, traceSinkJobs } from "../../processors/trace-sink/processor.ts";
import { TraceStore } from "../../store/trace-store.ts";
import { batchPrefix, tenantPrefix } from "../../store/trace-parts.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { AuditEvent, ConfigRecord, Decision, ToolResult, TraceEntry } from "../../schemas/types.ts";
import { minioClient } from "../../store/objects.ts";
import type { TopicName } from "../../topology/topics.ts";
import { endpoints, kafka, serde, startOnKafka } from "../support/kafka.ts";
import { jobEvent, uid } from "../support/events.ts";
import { fittedManifest } from "../support/manifests.ts";
import { eventually } from "../support/promises.ts";

const PAGE = ["# Guide", "", "The guide starts here.", ...Array.from({ length: 200 }, (_, i) => `## Part ${i}\n\nPart ${i} is about topic ${i} and goes on for a while.`)].join("\n");

/** Test buckets: the audit one locks each object in COMPLIANCE mode for a day, so runs add to it and never clean it. */
const TRACE_BUCKET = "oz0-traces-test";
const AUDIT_BUCKET = "oz0-audit-test";

function decision(over: Partial<Decision>): Decision {
  return {
    id: uid("dec"),
    input_id: uid("in"),
    processor: "limits-jobs",
    tenant: "acme",
    tree_id: "tree",
    job_id: "job",
    run_id: "run-1",
    subject: "subject",
    verdict: "allow",
    reason_code: null,
    limit: null,
    numbers: {},
    message: "",
    evidence: null,
    ts: Date.now(),
    ...over,
  };
}


function auditEvent(over: Partial<AuditEvent>): AuditEvent {
  return { id: uid("audit"), kind: "job.files_handed", tenant: null, tree_id: null, job_id: null, actor: null, reason: null, facts: {}, numbers: {}, ts: Date.now(), ...over };
}

async function topicEnds(topics: readonly string[]): Promise<Map<string, Array<{ partition: number; offset: string }>>> {
  const admin = kafka().admin();
  await admin.connect();
  try {
    const out = new Map<string, Array<{ partition: number; offset: string }>>();
    for (const t of topics) out.set(t, (await admin.fetchTopicOffsets(t)).map((p) => ({ partition: p.partition, offset: p.high })));
    return out;
  } finally {
    await admin.disconnect();
  }
}

/** Runs a processor under a new group whose offsets are `from`: a replay of everything published since. */
async function startFrom<In, Env>(p: Processor<In, Env>, env: Env, s: Serde, from: Map<string, Array<{ partition: number; offset: string }>>): Promise<{ running: RunningProcessor; group: string }> {
  const group = uid(`replay-${p.name}`);
  const k = kafka();
  const admin = k.admin();
  await admin.connect();
  try {
    await setGroupOffsets(k, admin, group, [{ topic: p.input, partitions: from.get(p.input) ?? [] }]);
  } finally {
    await admin.disconnect();
  }
  const log = createLogger({ test: p.name }, () => {});
  // As the pipeline runs a sink: offsets committed after its writes, without a transaction.
  const transport = new KafkaTransport({ kafka: kafka(group), groupId: group, topics: [p.input], log, exactlyOnce: false });
  return { running: await startProcessor(p, env, { transport, serde: s, log }), group };
}

/** True once the group committed past each given offset: it handled those records. */
async function handledPast(group: string, topic: string, last: ReadonlyMap<number, bigint>): Promise<boolean> {
  const admin = kafka().admin();
  await admin.connect();
  try {
    const committed = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    const done = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset === "-1" ? "0" : p.offset)]));
    return [...last].every(([partition, offset]) => (done.get(partition) ?? 0n) > offset);
  } finally {
    await admin.disconnect();
  }
}

async function names(client: Client, bucket: string, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const item of client.listObjectsV2(bucket, prefix, true)) {
    const name = (item as { name?: string }).name;
    if (name) out.push(name);
  }
  return out.sort();
}

function codeOf(err: unknown): string {
  return err && typeof err === "object" && "code" in err ? String(err.code) : String(err);
}

describe("the trace and audit sinks on the real broker and MinIO", () => {
  let s: Serde;
  let producer: Producer;
  let client: Client;
  let traces: TraceStore;
  let redis: RedisClient;
  let audit: AuditLog;
  const running: RunningProcessor[] = [];

  const traceTopics: readonly TopicName[] = ["oz0.trace", "oz0.call-decisions", "oz0.admissions", "oz0.jobs"];
  const auditTopics: readonly TopicName[] = ["oz0.audit", "oz0.call-decisions", "oz0.loop-approvals", "oz0.admissions", "oz0.config"];
  let before: Map<string, Array<{ partition: number; offset: string }>>;
  const job = uid("job");
  const tenant = uid("tenant");

  /** The partitions this file's records went to, by topic, with the last offset: the replay reads only those again. */
  const written = new Map<string, Map<number, bigint>>();
  const sendRaw = async (topic: TopicName, key: string, value: Buffer | null) => {
    for (const m of await producer.send({ topic, messages: [{ key, value }] })) {
      const last = written.get(m.topicName) ?? new Map<number, bigint>();
      const offset = BigInt(m.baseOffset ?? "0");
      written.set(m.topicName, last.set(m.partition, offset > (last.get(m.partition) ?? -1n) ? offset : (last.get(m.partition) ?? offset)));
    }
  };
  const send = (topic: TopicName, key: string, schemaName: Parameters<Serde["encode"]>[0], value: unknown) => sendRaw(topic, key, s.encode(schemaName, value));

  beforeAll(async () => {
    s = await serde();
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    client = minioClient(endpoints());
    redis = redisClient(endpoints());
    traces = new TraceStore({ client, bucket: TRACE_BUCKET, retentionDays: 1, index: { redis, keys: new Keys() } });
    audit = new AuditLog({ client, bucket: AUDIT_BUCKET, mode: "COMPLIANCE", retentionDays: 1 });
    await traces.ensureBucket();
    await audit.ensureBucket();
    before = await topicEnds([...new Set([...traceTopics, ...auditTopics])]);
    // Each on a group of its own, all at once: a start waits for its group's join.
    running.push(
      ...(await Promise.all([
        ...[traceSinkEntries, traceSinkCallDecisions, traceSinkAdmissions, traceSinkJobs].map((p) => startOnKafka<unknown, TraceStore>(p, traces, s)),
        ...[auditSinkAudit, auditSinkCallDecisions, auditSinkLoopApprovals, auditSinkAdmissions, auditSinkConfig].map((p) => startOnKafka<unknown, AuditLog>(p, audit, s)),
      ])),
    );
  });

  afterAll(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await producer?.disconnect();
    redis?.disconnect();
  });

  it("SYS-5 FIT-14 OFF-11 a job's trace is read back through the trace command's function once the sink consumed it: fitted steps without the omitted sentence, offloads by size and digest, loop findings, admissions, refusals and how the job ended", async () => {
    const result: ToolResult = {
      id: uid("res"),
      tenant: "acme",
      tree_id: job,
      job_id: job,
      run_id: "run-1",
      call_id: uid("call"),
      agent: "acme-reviewer",
      plugin: "acme_docs",
      tool: "acme_docs",
      function: "get_page",
      arguments: JSON.stringify({ path: "guide.md", view: "summary", budget: 400 }),
      origin: "model",
      is_error: false,
      content: JSON.stringify({ content: [{ type: "text", text: PAGE }] }),
      content_ref: null,
      size_bytes: PAGE.length,
      ts: Date.now(),
      labels: [],
    };
    const fitted = fitResult(result, result.content ?? "", fittedManifest("acme_docs"));
    if (!("emits" in fitted)) throw new Error(`the fit failed: ${fitted.invalid}`);
    const fitEntry = fitted.emits.find((e) => e.to === "oz0.trace")?.value as TraceEntry;
    const omitted = (fitted.emits.find((e) => e.to === "oz0.results-delivered")?.value as { fit: string }).fit;
    const omittedSentence = (JSON.parse(omitted) as { omitted: string }).omitted;
    expect(omittedSentence.length).toBeGreaterThan(10);
    const base = { processor: "fit-results", tenant: "acme", tree_id: job, job_id: job, run_id: "run-1", ts: Date.now() };
    const ref = `oz0-file:sha256:${"c".repeat(64)}`;
    const offload: TraceEntry = { ...base, id: uid("t"), section: OFFLOAD_SECTION, subject: "call-2", facts: { ref, kind: "markdown", function: "acme_docs.get_page" }, numbers: { size: 81234, tokens: 20000, lines: 400 } };
    const finding: TraceEntry = { ...base, id: uid("t"), processor: "loop-calls", section: "Loop findings", subject: "call-3", facts: { finding: "possible_loop", function: "acme_docs.search" }, numbers: { count: 3, threshold: 3 } };

    await send("oz0.jobs", job, "JobEvent", jobEvent(job, "started"));
    for (const e of [fitEntry, offload, finding]) await send("oz0.trace", job, "TraceEntry", e);
    await send("oz0.call-decisions", "run-1", "Decision", decision({ processor: "loop-calls", tree_id: job, job_id: job, subject: "call-3", verdict: "report", reason_code: "possible_loop", limit: "loops.repeats", message: "acme_docs.search was called 3 times with the same arguments: a loop." }));
    await send("oz0.admissions", job, "Decision", decision({ processor: "limits-model-calls", tree_id: job, job_id: job, subject: "req-1", verdict: "allow" }));
    await send("oz0.admissions", job, "Decision", decision({ tree_id: job, job_id: job, subject: "child-1", verdict: "refuse", reason_code: "TreeLimitExceeded", limit: "limits.tree.fan_out", message: "raise limits.tree.fan_out" }));
    await send("oz0.jobs", job, "JobEvent", jobEvent(job, "ended", { outcome: "completed" }));

    const trace = await eventually("the sink kept the job's 3 entries, 3 decisions and 2 job events", () => traces.read(job, "acme"), (t) => t.entries.length === 3 && t.decisions.length === 3 && (t.jobs?.length ?? 0) === 2, 90_000);
    const text = formatTrace(trace);
    expect(text).toContain(`${FIT_SECTION} (1)`);
    expect(text).toContain(`budget 400, function acme_docs.get_page, reason ${fitEntry.facts.reason}, size ${fitEntry.numbers.size}, tokens ${fitEntry.numbers.tokens}, view ${fitEntry.facts.view}`);
    expect(text).not.toContain(omittedSentence);
    expect(text).toContain(`${OFFLOAD_SECTION} (1)`);
    expect(text).toContain(`ref ${ref}, size 81234`);
    expect(text).toContain("finding possible_loop");
    expect(text).toContain("loop-calls report call-3 (possible_loop loops.repeats)");
    expect(text).toContain("limits-model-calls allow req-1");
    expect(text).toContain("limits-jobs refuse child-1 (TreeLimitExceeded limits.tree.fan_out): raise limits.tree.fan_out");
    expect(text).toMatch(/How the job ended\n {2}completed at .* \(started by app at /);
  });

  it("SYS-5 refusals, approvals with their outcomes, tenant changes with their reasons and oz0.audit's entries land in the audit log", async () => {
    const approval = uid("approval");
    await send("oz0.admissions", "tree-a", "Decision", decision({ tenant, processor: "limits-model-calls", verdict: "refuse", reason_code: "BudgetExceeded", limit: "tenant.monthly_budget_usd", message: "The tenant's monthly budget is spent." }));
    await send("oz0.admissions", "tree-a", "Decision", decision({ tenant, verdict: "allow" }));
    await send("oz0.call-decisions", "run-1", "Decision", decision({ tenant, processor: "loop-calls", verdict: "wait", reason_code: "LoopDetected", evidence: JSON.stringify({ approval: { id: approval, deadline: 1 } }) }));
    await send("oz0.loop-approvals", "run-1", "Decision", decision({ tenant, processor: "alice@acme", subject: approval, verdict: "allow", message: "the search is expected to repeat here" }));
    await send("oz0.call-decisions", "run-1", "Decision", decision({ tenant, processor: "loop-approvals", verdict: "allow", reason_code: "LoopApproved", message: `A person approved the loop (approval ${approval}): the counters start again and the call is made.` }));
    const settings: ConfigRecord = { kind: "tenant", id: tenant, value: JSON.stringify({ id: tenant, offload: { default: 6000 } }), source: `tenants/${tenant}.yaml`, reason: "larger inline results for reviews", ts: Date.now() };
    await send("oz0.config", `tenant/${tenant}`, "ConfigRecord", settings);
    // `publish --prune` removes the row with a tombstone.
    await sendRaw("oz0.config", `tenant/${tenant}`, null);
    for (const tool of ["search", "search", "fetch"]) await send("oz0.audit", tenant, "AuditEvent", auditEvent({ kind: "loop.acted", tenant, actor: "loop-calls", facts: { plugin: "acme_docs", tool } }));
    await send("oz0.audit", tenant, "AuditEvent", auditEvent({ kind: "job.files_handed", tenant, actor: "alice@acme", facts: { refs: `oz0-file:sha256:${"d".repeat(64)}` } }));

    const want = ["admission.refused", "approval.requested", "approval.answered", "approval.decided", "tenant.changed", "tenant.removed", "loop.acted", "job.files_handed"];
    const mine = async () => selectEntries((await audit.read()).entries, { tenant });
    const entries = await eventually("the audit log holds the tenant's 10 entries", mine, (es) => es.length >= 10 && want.every((k) => es.some((e) => e.kind === k)), 90_000);
    expect(entries).toHaveLength(10);
    expect(entries.find((e) => e.kind === "admission.refused")).toMatchObject({ actor: "limits-model-calls", reason: "The tenant's monthly budget is spent.", facts: { reason_code: "BudgetExceeded", limit: "tenant.monthly_budget_usd" } });
    expect(entries.find((e) => e.kind === "approval.answered")).toMatchObject({ actor: "alice@acme", reason: "the search is expected to repeat here", facts: { approval, answer: "approve" } });
    expect(entries.find((e) => e.kind === "approval.decided")).toMatchObject({ facts: { approval, outcome: "approved" } });
    expect(entries.find((e) => e.kind === "tenant.changed")).toMatchObject({ reason: "larger inline results for reviews", facts: { source: settings.source, settings: settings.value } });
    expect(loopCounts(entries).map((c) => [c.tool, c.loops])).toEqual([
      ["fetch", 1],
      ["search", 2],
    ]);
  });

  it("SYS-5 a replay of the same input from the same offsets leaves one copy of each record in the trace and of each entry in the audit log", async () => {
    const traceObjects = await traces.indexedObjects("acme", job);
    const auditBefore = await audit.read();
    const replays: Array<{ running: RunningProcessor; group: string; topic: string }> = [];
    try {
      // From where this file's records start on the partitions they went to; other partitions from their end.
      const now = await topicEnds([...before.keys()]);
      const from = new Map([...before].map(([topic, ends]) => [topic, ends.map((e) => (written.get(topic)?.has(e.partition) ? e : (now.get(topic)?.find((n) => n.partition === e.partition) ?? e)))]));
      const starting = [
        ...[traceSinkEntries, traceSinkCallDecisions, traceSinkAdmissions, traceSinkJobs].map(async (p) => ({ ...(await startFrom<unknown, TraceStore>(p, traces, s, from)), topic: p.input })),
        ...[auditSinkAudit, auditSinkCallDecisions, auditSinkLoopApprovals, auditSinkAdmissions, auditSinkConfig].map(async (p) => ({ ...(await startFrom<unknown, AuditLog>(p, audit, s, from)), topic: p.input })),
      ];
      for (const started of await Promise.allSettled(starting)) if (started.status === "fulfilled") replays.push(started.value);
      expect(replays).toHaveLength(starting.length);
      for (const r of replays) await eventually(`the replay ${r.group} handled this file's records`, () => handledPast(r.group, r.topic, written.get(r.topic) ?? new Map()), Boolean, 120_000);
    } finally {
      await Promise.all(replays.map((r) => r.running.stop()));
    }
    const trace = await traces.read(job, "acme");
    expect([trace.entries.length, trace.decisions.length, trace.jobs?.length]).toEqual([3, 3, 2]);
    // Replayed batches may end at other offsets than the first run's: their parts hold the same records, shown once.
    expect((await traces.indexedObjects("acme", job)).length).toBeGreaterThanOrEqual(traceObjects.length);
    // Counted before removing duplicates: a second copy of any entry would show here. (Other
    // tests may publish to the same topics meanwhile, so only this test's tenant is counted.)
    const copies = (log: { entries: AuditEvent[] }) => log.entries.filter((e) => e.tenant === tenant).length;
    expect(copies(auditBefore)).toBe(10);
    expect(copies(await audit.read())).toBe(10);
  }, 300_000);

  it("SYS-5 the core's write of the same batch twice leaves the same trace objects and one audit object", async () => {
    const topic = "oz0.admissions";
    const replayJob = uid("job");
    const records: InputRecord<Decision>[] = [0, 1, 2].map((i) => ({
      topic,
      partition: 1_000 + Math.floor(Math.random() * 1_000_000),
      offset: String(10 + i),
      key: null,
      value: decision({ tenant, tree_id: replayJob, job_id: replayJob, verdict: i === 1 ? "allow" : "refuse", reason_code: "TreeLimitExceeded" }),
      timestamp: "0",
    }));
    const partition = records[0]?.partition ?? 0;
    const batch = records.map((r) => ({ ...r, partition }));
    await traceSinkAdmissions.process(batch, traces);
    const first = await names(client, TRACE_BUCKET, `${batchPrefix(tenant)}${topic}/${partition}/`);
    expect(first).toHaveLength(1);
    expect(await traces.indexedObjects(tenant, replayJob)).toEqual(first);
    await traceSinkAdmissions.process(batch, traces);
    expect(await names(client, TRACE_BUCKET, `${batchPrefix(tenant)}${topic}/${partition}/`)).toEqual(first);
    expect(await traces.indexedObjects(tenant, replayJob)).toEqual(first);
    expect((await traces.read(replayJob, tenant)).decisions).toHaveLength(3);

    await auditSinkAdmissions.process(batch.slice(0, 2), audit);
    await auditSinkAdmissions.process(batch.slice(0, 2), audit);
    // A replay whose batch reaches further writes only what the stored object does not cover.
    await auditSinkAdmissions.process(batch, audit);
    const stored = await names(client, AUDIT_BUCKET, `log/${topic}/${partition}/`);
    expect(stored).toEqual([
      `log/${topic}/${partition}/00000000000000000010-00000000000000000011.jsonl`,
      `log/${topic}/${partition}/00000000000000000012-00000000000000000012.jsonl`,
    ]);
    const refusals = selectEntries((await audit.read()).entries, { tenant }).filter((e) => e.job_id === replayJob);
    expect(refusals.map((e) => e.kind)).toEqual(["admission.refused", "admission.refused"]);
  });

  it("SYS-5 an audit object cannot be overwritten or deleted within its retention: MinIO refuses, and the log still reads as first written", async () => {
    const topic = `oz0.lock-test-${uid("t")}`;
    const entry = auditEvent({ kind: "kill_switch.thrown", tenant, actor: "ops", reason: "looping in 4 tenants" });
    const [name = ""] = await audit.append(topic, 0, [{ offset: "5", entry }]);
    expect(name).toBe(`log/${topic}/0/00000000000000000005-00000000000000000005.jsonl`);
    const [version] = (await listVersions(client, AUDIT_BUCKET, name)).filter((v) => !v.isDeleteMarker);
    const versionId = version?.versionId ?? "";
    expect(versionId).not.toBe("");
    expect(await client.getObjectRetention(AUDIT_BUCKET, name, { versionId })).toMatchObject({ mode: "COMPLIANCE" });

    const refused = async (what: string, attempt: () => Promise<unknown>) => {
      const err = await attempt().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, `${what} should be refused`).not.toBeNull();
      return codeOf(err);
    };
    await refused("deleting the version", () => client.removeObject(AUDIT_BUCKET, name, { versionId }));
    await refused("deleting the version bypassing governance", () => client.removeObject(AUDIT_BUCKET, name, { versionId, governanceBypass: true }));
    await refused("shortening the retention", () =>
      client.putObjectRetention(AUDIT_BUCKET, name, { versionId, mode: "GOVERNANCE", retainUntilDate: new Date(Date.now() + 1_000).toISOString(), governanceBypass: true }),
    );
    expect(await refused("writing over it the way the sink writes", () => client.putObject(AUDIT_BUCKET, name, Buffer.from("{}\n"), 3, { "If-None-Match": "*" }))).toBe("PreconditionFailed");
    // The sink writing the same batch again writes nothing.
    expect(await audit.append(topic, 0, [{ offset: "5", entry }])).toEqual([]);

    // A plain PUT adds a version and a plain DELETE a marker; the first version stays, and the log reads it.
    const forged = Buffer.from(`${JSON.stringify({ ...entry, reason: "nothing happened" })}\n`);
    await client.putObject(AUDIT_BUCKET, name, forged, forged.length);
    await client.removeObject(AUDIT_BUCKET, name);
    const log = await audit.read();
    expect(log.altered).toContain(name);
    expect(log.entries.filter((e) => e.id === entry.id)).toEqual([entry]);
    expect(await client.getObjectRetention(AUDIT_BUCKET, name, { versionId })).toMatchObject({ mode: "COMPLIANCE" });
  });

  it("OFF-10 SYS-5 a tenant's traces are erased as one prefix; another tenant's job of the same ID is kept and read apart", async () => {
    const [mine, theirs] = [uid("erased"), uid("kept")];
    const job = uid("shared-job");
    const records = [mine, theirs].map((t, i) => ({ topic: "oz0.admissions", partition: 2_000_000 + Math.floor(Math.random() * 1_000_000), offset: String(i), key: null, value: decision({ tenant: t, tree_id: job, job_id: job }), timestamp: "0" }));
    for (const r of records) await traceSinkAdmissions.process([r], traces);
    expect((await traces.read(job)).decisions.map((d) => d.tenant).sort()).toEqual([mine, theirs].sort());
    expect((await traces.read(job, mine)).decisions.map((d) => d.tenant)).toEqual([mine]);
    expect(await traces.eraseTenant(mine)).toMatchObject({ erased: 1 });
    expect(await names(client, TRACE_BUCKET, tenantPrefix(mine))).toEqual([]);
    expect([await redis.exists(new Keys().traceJob(mine, job)), await redis.exists(new Keys().traceJob(theirs, job))]).toEqual([0, 1]);
    expect((await traces.read(job)).decisions.map((d) => d.tenant)).toEqual([theirs]);
    expect(await traces.eraseTenant(mine)).toMatchObject({ erased: 0 });
  });

  it("SYS-5 a read since a day skips the objects the day index says hold only earlier days, and reads every object the index does not name", async () => {
    const topic = uid("audit-days").replace(/[^A-Za-z0-9._-]/g, "-");
    const day = 86_400_000;
    const today = Date.now();
    const old = auditEvent({ tenant: topic, ts: today - 10 * day });
    const spanning = [auditEvent({ tenant: topic, ts: today - 3 * day }), auditEvent({ tenant: topic, ts: today })];
    const fresh = auditEvent({ tenant: topic, ts: today });
    await audit.append(topic, 0, [{ offset: "0", entry: old }]);
    await audit.append(topic, 0, spanning.map((entry, i) => ({ offset: String(1 + i), entry })));
    await audit.append(topic, 0, [{ offset: "3", entry: fresh }]);
    // An object written before the index (no markers): read whatever the day.
    const unindexed = auditEvent({ tenant: topic, ts: today - 20 * day });
    const body = Buffer.from(`${JSON.stringify(unindexed)}\n`);
    await client.putObject(AUDIT_BUCKET, `log/${topic}/1/${"0".padStart(20, "0")}-${"0".padStart(20, "0")}.jsonl`, body, body.length);

    const markers = (await names(client, AUDIT_BUCKET, "days/")).filter((n) => n.includes(`/${topic}/`));
    expect(markers).toHaveLength(4);
    const all = await audit.read();
    const since = await audit.read({ since: today - day });
    expect(since.skipped).toBeGreaterThanOrEqual(1);
    expect(since.objects).toBe(all.objects - since.skipped);
    const ids = (r: typeof all) => new Set(r.entries.filter((e) => e.tenant === topic).map((e) => e.id));
    expect([...ids(all)].sort()).toEqual([old, ...spanning, fresh, unindexed].map((e) => e.id).sort());
    // The object of the old entry alone is not read; the one that spans into the last days is, and the unindexed one.
    expect([...ids(since)].sort()).toEqual([...spanning, fresh, unindexed].map((e) => e.id).sort());
  });
});

async function listVersions(client: Client, bucket: string, name: string): Promise<Array<{ versionId?: string; isDeleteMarker?: boolean }>> {
  const out: Array<{ versionId?: string; isDeleteMarker?: boolean }> = [];
  for await (const item of client.listObjects(bucket, name, true, { IncludeVersion: true })) {
    const o = item as { name?: string; versionId?: string; isDeleteMarker?: boolean };
    if (o.name === name) out.push(o);
  }
  return out;
}
