import { describe, expect, it } from "vitest";
import type { AgentDefinition } from "../../../config/agent.ts";
import { fillInProcessor } from "../../../processors/fill-in/processor.ts";
import { META_KEY } from "../../../processors/fit/index.ts";
import { fitResultsProcessor, type FitEnv } from "../../../processors/fit-results/processor.ts";
import { MemoryJobLabelsStore, READ_RESULT, READ_SECTION, readFileDoc, readResultCacheFromEnv, readResultProcessor, type ReadResultEnv } from "../../../processors/read-result/index.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { ResultDelivered, ToolCall, ToolResult, TraceEntry } from "../../../schemas/types.ts";
import { refOf } from "../../../store/objects.ts";
import { toolCall, uid } from "../../support/events.ts";

const GUIDE = [
  "# Guide",
  "",
  "The guide starts here. It is long.",
  ...Array.from({ length: 120 }, (_, i) => `## Part ${i}\n\nPart ${i} begins here. It goes on about topic ${i} for a while, and then it goes on some more about topic ${i}.`),
].join("\n");

/** A JSON result the tool wrote on one line. */
const LIST = JSON.stringify({ total: 900, items: Array.from({ length: 900 }, (_, i) => ({ id: i, name: `item ${i}`, note: `Item ${i} is about thing ${i}.` })) });

function agent(name: string, over: Partial<AgentDefinition> = {}): AgentDefinition {
  return { name, tools: ["acme_docs"], limits: { tree: {} }, delegation: { allow: [] }, loops: {}, spend: {}, ...over };
}

type Owner = { tenant: string; tree: string };

/** The file store in memory, as FileStore keeps it: a grant per tenant and tree, labels with it. */
class MemoryFiles {
  readonly grants = new Map<string, string[]>();
  readonly bytes = new Map<string, Buffer>();
  readonly labels = new MemoryJobLabelsStore();

  store(owner: Owner, bytes: Buffer, labels: readonly string[] = []): string {
    const ref = refOf(bytes);
    const key = `${owner.tenant}|${owner.tree}|${ref}`;
    this.grants.set(key, [...new Set([...(this.grants.get(key) ?? []), ...labels])].sort());
    this.bytes.set(`${owner.tenant}|${ref}`, bytes);
    return ref;
  }

  readEnv(agents: AgentDefinition[]): ReadResultEnv {
    return {
      config: staticConfig(agents.map((a) => ({ kind: "agent" as const, id: a.name, value: a }))),
      readFile: (reader, ref) => {
        const labels = this.grants.get(`${reader.tenant}|${reader.tree}|${ref}`);
        const bytes = this.bytes.get(`${reader.tenant}|${ref}`);
        return Promise.resolve(labels && bytes ? { size: bytes.length, labels, doc: readFileDoc(bytes) } : null);
      },
      joinLabels: (job, labels) => this.labels.join(job, labels),
    };
  }

  fitEnv(threshold = 2_000): FitEnv {
    return {
      load: () => Promise.resolve(null),
      threshold: () => threshold,
      storeFile: (owner, bytes, { labels }) => Promise.resolve({ ref: this.store(owner, bytes, labels) }),
      config: staticConfig([]),
    };
  }
}

const OWNER = { tenant: "acme", tree: "job-root" };

function readCall(args: Record<string, unknown>, over: Partial<ToolCall> = {}): ToolCall {
  return toolCall({ ...READ_RESULT, arguments: JSON.stringify(args), ...over });
}

async function read(env: ReadResultEnv, call: ToolCall) {
  const driver = new TestDriver(readResultProcessor, env);
  await driver.pipe(call);
  expect(driver.deadLetters).toEqual([]);
  const [out] = driver.read<ResultDelivered>("oz0.results-delivered");
  const trace = driver.read<TraceEntry>("oz0.trace");
  const content = JSON.parse(out?.content ?? "{}") as { content: Array<{ text: string }>; structuredContent?: { content: string; truncated: boolean; fit: Record<string, unknown> }; isError?: boolean; _meta?: Record<string, unknown> };
  return { out, trace, content, answer: content.structuredContent, message: content.content[0]?.text ?? "" };
}

describe("read-result processor", () => {
  it("OFF-6 reads a heading's section back with the fit note in the content and in _meta", async () => {
    const files = new MemoryFiles();
    const ref = files.store(OWNER, Buffer.from(GUIDE));
    const { out, answer, content } = await read(files.readEnv([agent("acme-reviewer")]), readCall({ ref, section: "Part 7", budget: 2000 }));
    expect(out?.is_error).toBe(false);
    expect(out?.input_id).toBeTruthy();
    expect(answer?.content).toContain("Part 7 begins here.");
    expect(answer?.content).not.toContain("Part 8 begins here.");
    expect(answer?.fit).toMatchObject({ view: "section", budget: 2000 });
    expect(content._meta?.[META_KEY]).toEqual(answer?.fit);
    expect(JSON.parse(out?.fit ?? "null")).toEqual(answer?.fit);
  });

  it("OFF-6 reads a top-level key and an item such as [3] of a JSON result", async () => {
    const files = new MemoryFiles();
    const ref = files.store(OWNER, Buffer.from(JSON.stringify([{ a: 1 }, { b: 2 }, { c: 3 }, { d: "fourth" }, { e: 5 }])));
    const item = await read(files.readEnv([agent("acme-reviewer")]), readCall({ ref, section: "[3]" }));
    expect(item.answer?.content).toContain('"d": "fourth"');
    expect(item.answer?.content).not.toContain('"c": 3');
    const keyed = files.store(OWNER, Buffer.from(LIST));
    const key = await read(files.readEnv([agent("acme-reviewer")]), readCall({ ref: keyed, section: "total" }));
    expect(key.answer?.content).toContain('"total": 900');
    expect(key.answer?.content).not.toContain('"items"');
  });

  it("OFF-6 OFF-5 reads JSON the tool wrote on one line by lines of its read form, as the stub counted them", async () => {
    const files = new MemoryFiles();
    const result: ToolResult = {
      ...toolCall({ arguments: "{}" }),
      id: uid("res"),
      is_error: false,
      content: JSON.stringify({ content: [{ type: "text", text: LIST }] }),
      content_ref: null,
      size_bytes: LIST.length,
      labels: [],
    };
    const fitter = new TestDriver(fitResultsProcessor, files.fitEnv());
    await fitter.pipe(result);
    const [stubbed] = fitter.read<ResultDelivered>("oz0.results-delivered");
    const stub = (JSON.parse(stubbed?.content ?? "{}") as { structuredContent: { offloaded: { ref: string; lines: number } } }).structuredContent.offloaded;
    expect(stub.lines).toBeGreaterThan(900 * 5);
    const env = files.readEnv([agent("acme-reviewer")]);
    const { answer } = await read(env, readCall({ ref: stub.ref, range: "120-125" }));
    expect(answer?.content.replace(/\n$/, "").split("\n")).toHaveLength(6);
    expect(answer?.content).toMatch(/"(id|name|note)"/);
    const last = await read(env, readCall({ ref: stub.ref, range: `${stub.lines}-${stub.lines}` }));
    expect(last.answer?.content.trim()).toBe("}");
    expect(last.answer?.fit.view).toBe("section");
  });

  it("OFF-6 a view with a budget follows FIT: a whole too big falls to a smaller view, truncated, with the reason", async () => {
    const files = new MemoryFiles();
    const ref = files.store(OWNER, Buffer.from(GUIDE));
    const { out, answer } = await read(files.readEnv([agent("acme-reviewer")]), readCall({ ref, view: "full", budget: 500 }));
    expect(out?.truncated).toBe(true);
    expect(answer?.fit.view).not.toBe("full");
    expect(answer?.fit).toMatchObject({ budget: 500, reason: "budget" });
    expect(answer?.fit.tokens as number).toBeLessThanOrEqual(500);
  });

  it("OFF-6 the model's mistakes in the arguments are failed calls that say what to change, never dead letters", async () => {
    const files = new MemoryFiles();
    const ref = files.store(OWNER, Buffer.from(GUIDE));
    const env = files.readEnv([agent("acme-reviewer")]);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ section: "Part 1" }, /read_result needs ref/],
      [{ ref: "oz0-file:sha256:abc" }, /ref must be oz0-file:sha256: followed by 64 hex digits/],
      [{ ref: 42 }, /ref must be/],
      [{ ref, range: "180-120" }, /range must be lines of the result as read.*"180-120"/],
      [{ ref, range: "0-5" }, /range must be lines/],
      [{ ref, range: "lots" }, /range must be lines/],
      [{ ref, view: "huge" }, /view must be one of stub, summary, section, full/],
      [{ ref, budget: -3 }, /budget must be a whole number of tokens above 0/],
      [{ ref, section: "Part 1", range: "1-5" }, /give one of section, range and query/],
      [{ ref, section: 7 }, /section must be text/],
    ];
    for (const [args, message] of cases) {
      const r = await read(env, readCall(args));
      expect(r.out?.is_error, JSON.stringify(args)).toBe(true);
      expect(r.message, JSON.stringify(args)).toMatch(message);
      expect(r.trace[0]?.facts.outcome).toBe("bad_arguments");
    }
  });

  it("OFF-6 a call with a budget left out gets one filled in by the budget fill-in, as for a fitted tool", async () => {
    const driver = new TestDriver(fillInProcessor, { config: staticConfig([]), spendShare: () => Promise.resolve(null) });
    const ref = refOf(Buffer.from("x"));
    await driver.pipe([readCall({ ref, section: "Install" }, { context_used: 100_000 }), readCall({ ref }, { origin: "flow_step" })]);
    const [model, flow] = driver.read<ToolCall>("oz0.tool-calls");
    expect(JSON.parse(model?.arguments ?? "{}")).toEqual({ ref, section: "Install", budget: 7000 });
    expect(JSON.parse(flow?.arguments ?? "{}")).toEqual({ ref });
  });

  it("OFF-7 a call in a job whose agents list no plugin tool is answered: read_result is not offered in this job", async () => {
    const files = new MemoryFiles();
    const ref = files.store(OWNER, Buffer.from(GUIDE));
    const env = files.readEnv([agent("planner", { tools: ["oz.board_read"] }), agent("acme-reviewer")]);
    const { out, message, trace } = await read(env, readCall({ ref }, { agent: "planner" }));
    expect(out?.is_error).toBe(true);
    expect(message).toMatch(/oz\.read_result is not offered in this job/);
    expect(message).not.toContain("Guide");
    expect(trace[0]?.facts.outcome).toBe("not_offered");
    const unknown = await read(env, readCall({ ref }, { agent: "nobody" }));
    expect(unknown.message).toMatch(/not offered/);
  });

  it("OFF-8 another tree, another tenant and a ref never stored get the one same answer, whatever the arguments claim", async () => {
    const files = new MemoryFiles();
    const ref = files.store(OWNER, Buffer.from(GUIDE));
    files.store({ tenant: "globex", tree: "job-root" }, Buffer.from("globex's own"));
    const env = files.readEnv([agent("acme-reviewer")]);
    const other = await read(env, readCall({ ref }, { tree_id: "job-other" }));
    const tenant = await read(env, readCall({ ref }, { tenant: "globex" }));
    const claimed = await read(env, readCall({ ref, tree: "job-root", tree_id: "job-root", tenant: "acme" }, { tree_id: "job-other" }));
    const never = refOf(Buffer.from("never stored"));
    const unknown = await read(env, readCall({ ref: never }, { tree_id: "job-other" }));
    expect(other.out?.is_error).toBe(true);
    expect(other.message).toBe(`${ref} is not a file this job may read: not found.`);
    expect(tenant.out?.content).toBe(other.out?.content);
    expect(claimed.out?.content).toBe(other.out?.content);
    expect(unknown.out?.content.replace(never, ref)).toBe(other.out?.content);
    expect([other, tenant, unknown].map((r) => r.trace[0]?.facts.outcome)).toEqual(["not_found", "not_found", "not_found"]);
  });

  it("OFF-9 a result with a label above the agent's clearance is withheld without content, and joins nothing", async () => {
    const files = new MemoryFiles();
    const ref = files.store(OWNER, Buffer.from(GUIDE), ["finance", "pii"]);
    const env = files.readEnv([agent("acme-reviewer", { clearance: ["pii"] })]);
    const { out, message, trace, answer } = await read(env, readCall({ ref, section: "Part 1" }));
    expect(out?.is_error).toBe(true);
    expect(message).toMatch(new RegExp(`The result ${ref} is withheld by clearance: one of its labels is above the clearance of agent acme-reviewer`));
    expect(out?.content).not.toContain("Part 1 begins");
    expect(out?.content).not.toContain("finance");
    expect(answer).toBeUndefined();
    expect(files.labels.joined.size).toBe(0);
    expect(trace[0]).toMatchObject({ section: READ_SECTION, facts: { outcome: "withheld", ref }, numbers: { labels: 2 } });
  });

  it("OFF-9 reading a labelled result joins its labels into the job; an agent without a clearance reads every label", async () => {
    const files = new MemoryFiles();
    const a = files.store(OWNER, Buffer.from(GUIDE), ["pii"]);
    const b = files.store(OWNER, Buffer.from(LIST), ["finance", "pii"]);
    const cleared = files.readEnv([agent("acme-reviewer", { clearance: ["finance", "pii"] })]);
    const first = await read(cleared, readCall({ ref: a, section: "Part 2" }));
    expect(first.out?.is_error).toBe(false);
    expect(await files.labels.labels({ ...OWNER, job: "job-root" })).toEqual(["pii"]);
    const open = files.readEnv([agent("acme-reviewer")]);
    const second = await read(open, readCall({ ref: b, section: "total" }));
    expect(second.out?.is_error).toBe(false);
    expect(await files.labels.labels({ ...OWNER, job: "job-root" })).toEqual(["finance", "pii"]);
    expect(second.trace[0]?.numbers).toMatchObject({ labels: 2, job_labels: 2 });
  });

  it("OFF-6 writes one trace entry per read with its numbers, never the part's name, the omitted sentence or the content", async () => {
    const files = new MemoryFiles();
    const ref = files.store(OWNER, Buffer.from(GUIDE));
    const call = readCall({ ref, section: "Part 9", budget: 3000 });
    const { trace, answer } = await read(files.readEnv([agent("acme-reviewer")]), call);
    expect(trace).toHaveLength(1);
    const entry = trace[0] as TraceEntry;
    expect(entry).toMatchObject({ section: READ_SECTION, subject: call.call_id, facts: { outcome: "read", ref, view: "section", by: "section", function: "oz.read_result" } });
    expect(entry.numbers).toMatchObject({ budget: 3000, bytes: GUIDE.length, size: answer?.fit.size, tokens: answer?.fit.tokens, labels: 0 });
    const shown = JSON.stringify(entry);
    expect(shown).not.toContain("Part 9");
    expect(shown).not.toContain(answer?.fit.omitted as string);
  });

  it("ignores every call that is not oz.read_result: no outputs, no dead letters", async () => {
    const files = new MemoryFiles();
    const driver = new TestDriver(readResultProcessor, files.readEnv([agent("acme-reviewer")]));
    await driver.pipe([toolCall(), toolCall({ plugin: "oz", tool: "oz", function: "board_read" }), toolCall({ function: "read_result", arguments: "not json" })]);
    expect(driver.emitted).toEqual([]);
    expect(driver.deadLetters).toEqual([]);
  });

  it("dead-letters a read_result call the runtime published wrong, with the reason", async () => {
    const files = new MemoryFiles();
    const driver = new TestDriver(readResultProcessor, files.readEnv([agent("acme-reviewer")]));
    await driver.pipe([readCall({}, { tree_id: "" }), readCall({}, { arguments: "[1]" })]);
    expect(driver.deadLetters.map((d) => d.reason)).toEqual([expect.stringMatching(/tree_id is empty/), expect.stringMatching(/arguments must be a JSON object/)]);
    expect(driver.emitted).toEqual([]);
  });
});

describe("results kept read (OZ0_READ_CACHE_MB, OZ0_READ_CACHE_SECONDS)", () => {
  it("defaults to 64 MB for 10 minutes, takes whole numbers, 0 megabytes keeping none, and refuses anything else by name", () => {
    expect(readResultCacheFromEnv({})).toEqual({ megabytes: 64, seconds: 600 });
    expect(readResultCacheFromEnv({ OZ0_READ_CACHE_MB: "0", OZ0_READ_CACHE_SECONDS: "30" })).toEqual({ megabytes: 0, seconds: 30 });
    expect(() => readResultCacheFromEnv({ OZ0_READ_CACHE_MB: "1.5" })).toThrow(/OZ0_READ_CACHE_MB=1.5 is not a whole number of megabytes/);
    expect(() => readResultCacheFromEnv({ OZ0_READ_CACHE_SECONDS: "0" })).toThrow(/OZ0_READ_CACHE_SECONDS=0/);
  });

  it("OFF-6 a stored result reads into the document the fit library reads its text into, whose parts answer a section", () => {
    const doc = readFileDoc(Buffer.from("# A\n\nfirst\n\n# B\n\nsecond\n"));
    expect(doc.kind).toBe("markdown");
    expect(doc.parts.map((p) => p.title)).toEqual(["# A", "# B"]);
  });
});
