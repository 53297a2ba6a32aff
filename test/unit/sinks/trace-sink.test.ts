import { describe, expect, it } from "vitest";
import { formatTrace } from "../../../client/trace-format.ts";
import { fitResultsProcessor, FIT_SECTION, OFFLOAD_SECTION, type FitEnv } from "../../../processors/fit-results/processor.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import { rangeOf, traceSinkAdmissions, traceSinkCallDecisions, traceSinkEntries, traceSinkJobs, type TraceSinkEnv } from "../../../processors/trace-sink/processor.ts";
import { jobPrefix, mergeParts, padOffset, parsePart, partName, partsByJob, type BatchRange, type TracePart } from "../../../store/trace-parts.ts";
import type { Decision, JobEvent, ResultDelivered, ToolResult, TraceEntry } from "../../../schemas/types.ts";
import { refOf } from "../../../store/objects.ts";
import { jobEvent as rootJobEvent, uid } from "../../support/events.ts";
import { fittedConfig, fittedManifest } from "../../support/manifests.ts";

const PAGE = [
  "# Widget guide",
  "",
  "The guide explains the widget.",
  "",
  "## Install",
  ...Array.from({ length: 300 }, (_, i) => `Step ${i}: run the installer and read what it prints about file ${i}.`),
  "",
  "## Configure",
  ...Array.from({ length: 300 }, (_, i) => `Option ${i} sets how the widget treats item ${i}.`),
].join("\n");

function toolResult(job: string, args: Record<string, unknown>): ToolResult {
  return {
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
    arguments: JSON.stringify({ path: "guide.md", ...args }),
    origin: "model",
    is_error: false,
    content: JSON.stringify({ content: [{ type: "text", text: PAGE }] }),
    content_ref: null,
    size_bytes: PAGE.length,
    ts: 1_700_000_000_000,
    labels: [],
  };
}

function fitEnv(threshold: number): FitEnv {
  return {
    load: () => Promise.resolve(null),
    threshold: () => threshold,
    storeFile: (_owner, bytes) => Promise.resolve({ ref: refOf(bytes), size: bytes.length, labels: [], lastStored: 0, expiresAt: 0 }),
    config: fittedConfig(fittedManifest("acme_docs")),
  };
}

function decision(job: string, over: Partial<Decision> = {}): Decision {
  return {
    id: uid("dec"),
    input_id: uid("in"),
    processor: "limits-jobs",
    tenant: "acme",
    tree_id: job,
    job_id: job,
    run_id: null,
    subject: "child-1",
    verdict: "refuse",
    reason_code: "TreeLimitExceeded",
    limit: "limits.tree.fan_out",
    numbers: { fan_out: 5 },
    message: "The tree already has 5 children at once; raise limits.tree.fan_out.",
    evidence: null,
    ts: 1_700_000_000_500,
    ...over,
  };
}

function jobEvent(job: string, kind: JobEvent["kind"], over: Partial<JobEvent> = {}): JobEvent {
  return rootJobEvent(job, kind, { started_by: "person", ts: 1_700_000_000_000, ...over });
}

/** The sink's store as a map of object names, so tests read back what a batch wrote. */
class MemoryTraces implements TraceSinkEnv {
  readonly objects = new Map<string, string>();
  write(range: BatchRange, parts: ReadonlyMap<string, TracePart>): Promise<void> {
    for (const part of parts.values()) this.objects.set(partName(part.tenant, part.job_id, range), JSON.stringify(part));
    return Promise.resolve();
  }
  read(job: string, tenant = "acme") {
    const parts = [...this.objects].filter(([name]) => name.startsWith(jobPrefix(tenant, job))).map(([name, text]) => parsePart(text, name));
    return mergeParts(job, parts);
  }
}

describe("the trace sink's core", () => {
  it("SYS-5 FIT-14 the trace shows a fitted step's view and numbers, never its omitted sentence", async () => {
    const job = uid("job");
    const fitting = new TestDriver(fitResultsProcessor, fitEnv(100_000));
    await fitting.pipe(toolResult(job, { view: "summary", budget: 300 }));
    const [delivered] = fitting.read<ResultDelivered>("oz0.results-delivered");
    const omitted = (JSON.parse(delivered?.fit ?? "{}") as { omitted: string }).omitted;
    expect(omitted.length).toBeGreaterThan(10);

    const store = new MemoryTraces();
    const sink = new TestDriver(traceSinkEntries, store);
    await sink.pipe(fitting.read<TraceEntry>("oz0.trace"));
    expect(sink.deadLetters).toEqual([]);
    const text = formatTrace(store.read(job));
    expect(text).toContain(`${FIT_SECTION} (1)`);
    expect(text).toMatch(/budget 300, .*view summary/);
    expect(text).not.toContain(omitted);
  });

  it("SYS-5 OFF-11 the trace shows an offloaded result's size and digest, never its outline", async () => {
    const job = uid("job");
    const fitting = new TestDriver(fitResultsProcessor, fitEnv(1_000));
    await fitting.pipe(toolResult(job, {}));
    const [delivered] = fitting.read<ResultDelivered>("oz0.results-delivered");
    const stub = (JSON.parse(delivered?.content ?? "{}") as { structuredContent: { offloaded: { ref: string; size: number }; outline: string } }).structuredContent;
    expect(stub.outline).toContain("Install");

    const store = new MemoryTraces();
    await new TestDriver(traceSinkEntries, store).pipe(fitting.read<TraceEntry>("oz0.trace"));
    const text = formatTrace(store.read(job));
    expect(text).toContain(`${OFFLOAD_SECTION} (1)`);
    expect(text).toContain(`ref ${stub.offloaded.ref}`);
    expect(text).toContain(`size ${stub.offloaded.size}`);
    expect(text).not.toContain(stub.outline);
    expect(text).not.toContain("Option 1 sets");
  });

  it("SYS-5 keeps each job's records apart, decisions with their reasons and how the job ended", async () => {
    const [a, b] = [uid("job"), uid("job")];
    const store = new MemoryTraces();
    await new TestDriver(traceSinkAdmissions, store).pipe([decision(a), decision(b, { verdict: "allow", reason_code: null, limit: null, message: "" })]);
    await new TestDriver(traceSinkCallDecisions, store).pipe(decision(a, { processor: "loop-calls", verdict: "report", reason_code: "possible_loop", limit: "loops.repeats", subject: "call-7", message: "get_page was called 3 times with the same arguments: a loop." }));
    const jobs = new TestDriver(traceSinkJobs, store);
    await jobs.pipe([jobEvent(a, "started"), jobEvent(a, "child_ask"), jobEvent(a, "ended", { outcome: "completed", ts: 1_700_000_009_000 })]);
    expect(jobs.deadLetters).toEqual([]);

    const traceA = store.read(a);
    expect(traceA.decisions).toHaveLength(2);
    expect(traceA.jobs?.map((j) => j.kind)).toEqual(["started", "ended"]);
    expect(store.read(b).decisions).toHaveLength(1);
    const text = formatTrace(traceA);
    expect(text).toContain("limits-jobs refuse child-1 (TreeLimitExceeded limits.tree.fan_out): The tree already has 5 children at once; raise limits.tree.fan_out.");
    expect(text).toContain("loop-calls report call-7 (possible_loop loops.repeats)");
    expect(text).toContain("How the job ended\n  completed at 2023-11-14T22:13:29.000Z (started by person at 2023-11-14T22:13:20.000Z)");
  });

  it("SYS-5 a replay of the same batch writes the same objects again", async () => {
    const job = uid("job");
    const entries = [decision(job), decision(job, { id: uid("dec2") })];
    const first = new MemoryTraces();
    await new TestDriver(traceSinkAdmissions, first).pipe(entries);
    const names = [...first.objects.keys()];
    await new TestDriver(traceSinkAdmissions, first).pipe(entries);
    expect([...first.objects.keys()]).toEqual(names);
    expect(first.read(job).decisions).toHaveLength(2);
  });

  it("SYS-5 a record without a job goes to the dead letters with the reason", async () => {
    const driver = new TestDriver(traceSinkAdmissions, new MemoryTraces());
    await driver.pipe(decision(""));
    expect(driver.deadLetters[0]?.reason).toMatch(/job_id is empty/);
  });
});

describe("trace parts", () => {
  const range: BatchRange = { topic: "oz0.trace", partition: 3, first: "41", last: "1200" };

  it("SYS-5 names a part by tenant, job, topic, partition and offsets padded to sort in offset order", () => {
    const b64 = (x: string) => Buffer.from(x).toString("base64url");
    expect(partName("acme/eu", "job/1", range)).toBe(`tenants/${b64("acme/eu")}/jobs/${b64("job/1")}/oz0.trace/3/00000000000000000041-00000000000000001200.json`);
    expect(padOffset("9") < padOffset("10")).toBe(true);
    expect(() => padOffset("-1")).toThrow(/not a Kafka offset/);
    expect(() => partName("acme", "", range)).toThrow(/job ID is empty/);
    expect(() => partName("", "job-1", range)).toThrow(/tenant ID is empty/);
  });

  it("SYS-5 two tenants' jobs of one ID are two parts, each holding only its tenant's records; a part of format 1 still reads", () => {
    const [a, b] = [decision("job-1", { id: "a", tenant: "acme" }), decision("job-1", { id: "b", tenant: "globex" })];
    const parts = partsByJob([{ decision: a }, { decision: b }]);
    expect([...parts.values()].map((p) => [p.tenant, p.decisions.map((d) => d.id)])).toEqual([
      ["acme", ["a"]],
      ["globex", ["b"]],
    ]);
    const old = parsePart(JSON.stringify({ v: 1, job_id: "job-1", entries: [], decisions: [a], jobs: [] }), "jobs/x");
    expect(old).toMatchObject({ v: 1, tenant: "" });
    expect(() => parsePart(JSON.stringify({ v: 2, job_id: "job-1", entries: [], decisions: [], jobs: [] }), "y")).toThrow(/format 1 or 2/);
  });

  it("merges overlapping parts of a replay whose batch ended elsewhere, each record once in time order", () => {
    const job = "job-1";
    const [d1, d2, d3] = [decision(job, { id: "d1", ts: 3 }), decision(job, { id: "d2", ts: 1 }), decision(job, { id: "d3", ts: 2 })];
    const p1 = [...partsByJob([{ decision: d1 }, { decision: d2 }]).values()][0] as TracePart;
    const p2 = [...partsByJob([{ decision: d1 }, { decision: d2 }, { decision: d3 }]).values()][0] as TracePart;
    expect(mergeParts(job, [p1, p2]).decisions.map((d) => d.id)).toEqual(["d2", "d3", "d1"]);
  });

  it("refuses an object that is not a trace part", () => {
    expect(() => parsePart("{", "x")).toThrow(/not JSON/);
    expect(() => parsePart(JSON.stringify({ v: 2, job_id: "j" }), "x")).toThrow(/not a trace part/);
  });

  it("takes a batch's range from its first and last record", () => {
    const r = (offset: string) => ({ topic: "oz0.jobs", partition: 1, offset, key: null, value: null, timestamp: "0" });
    expect(rangeOf([r("5"), r("6"), r("9")])).toEqual({ topic: "oz0.jobs", partition: 1, first: "5", last: "9" });
  });
});
