import { beforeAll, describe, expect, it } from "vitest";
import { loadConfigDir } from "../../config/load.ts";
import type { PluginManifest } from "../../config/plugin.ts";
import { META_KEY } from "../../processors/fit/index.ts";
import { fitResultsProcessor, FIT_SECTION, NO_PROGRESS_META, OFFLOAD_SECTION, type FitEnv } from "../../processors/fit-results/processor.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { TestDriver } from "../../processors/runner/test-driver.ts";
import type { ResultDelivered, ToolResult, TraceEntry } from "../../schemas/types.ts";
import { uid } from "../support/events.ts";
import { refOf } from "../../store/objects.ts";

const PAGE = [
  "# Acme docs",
  "",
  "Acme docs explain the widget. They cover setup and use.",
  "",
  "## Install",
  "",
  "Install the widget with the package manager. It takes a minute.",
  ...Array.from({ length: 400 }, (_, i) => `Step ${i}: run the installer again and read what it prints about configuration file number ${i}.`),
  "",
  "## Use",
  "",
  "Use the widget from the command line. Every option has a default.",
  ...Array.from({ length: 400 }, (_, i) => `Option ${i} changes how the widget behaves when the input holds item ${i}.`),
].join("\n");

function mcp(text: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ content: [{ type: "text", text }], ...extra });
}

function result(args: Record<string, unknown>, content: string | null = mcp(PAGE), over: Partial<ToolResult> = {}): ToolResult {
  return {
    id: uid("res"),
    tenant: "acme",
    tree_id: "tree-1",
    job_id: "job-1",
    run_id: "run-1",
    call_id: uid("call"),
    agent: "acme-reviewer",
    plugin: "acme_docs",
    tool: "acme_docs",
    function: "get_page",
    arguments: JSON.stringify({ path: "docs.md", ...args }),
    origin: "model",
    is_error: false,
    content,
    content_ref: null,
    size_bytes: content?.length ?? 0,
    ts: 1_700_000_000_000,
    labels: [],
    ...over,
  };
}

/**
 * The plugin manifests the processor reads: the example acme_docs (its get_page adopts the fit
 * convention, its quote takes a money budget), a search tool whose query is a search term, and
 * a tool whose get_page has the convention's arguments but whose manifest does not say fit.
 */
const config = staticConfig([]);
const SEARCH: PluginManifest = {
  name: "web",
  tools: [{ id: "web", mcp: ["web"], results: { fit: true }, functions: [{ name: "search", input_schema: { type: "object", properties: { query: { type: "string" }, budget: { type: "integer" } } } }] }],
};

beforeAll(async () => {
  const examples = await loadConfigDir("config/examples");
  const docs = examples.plugins.get("acme_docs");
  if (docs === undefined) throw new Error("config/examples has no acme_docs manifest");
  config.set("plugin", "acme_docs", docs);
  config.set("plugin", "web", SEARCH);
  config.set("plugin", "plain_docs", { name: "plain_docs", tools: docs.tools.map((t) => ({ ...t, id: "plain_docs", results: { fit: false } })) });
});

function memoryEnv(threshold: number | "off" = 10_000, stored = new Map<string, Buffer>()): FitEnv & { stored: Map<string, Buffer> } {
  return {
    stored,
    config,
    load: () => Promise.resolve(null),
    threshold: () => threshold,
    storeFile: (_owner, bytes) => {
      const ref = refOf(bytes);
      stored.set(ref, bytes);
      return Promise.resolve({ ref });
    },
  };
}

const noStore = memoryEnv();

async function deliver(r: ToolResult, env: FitEnv = noStore) {
  const driver = new TestDriver(fitResultsProcessor, env);
  await driver.pipe(r);
  const [out] = driver.read<ResultDelivered>("oz0.results-delivered");
  return { driver, out, trace: driver.read<TraceEntry>("oz0.trace") };
}

describe("fit processor", () => {
  it("FIT-8 answers a call with none of view, budget and query exactly as the tool did, with no note", async () => {
    const r = result({ path: "docs.md" });
    const { out, trace } = await deliver(r, memoryEnv("off"));
    expect(out?.content).toBe(r.content);
    expect(out?.fit).toBeNull();
    expect(out?.truncated).toBe(false);
    expect(trace).toEqual([]);
  });

  it("FIT-13 carries the fit note in the content's fit field and in _meta under oz0/fit", async () => {
    const { out } = await deliver(result({ budget: 300 }));
    const answer = JSON.parse(out?.content ?? "{}") as { content: Array<{ text: string }>; structuredContent: { fit: unknown; content: string }; _meta: Record<string, unknown> };
    const note = answer.structuredContent.fit as Record<string, unknown>;
    expect(Object.keys(note)).toEqual(expect.arrayContaining(["view", "budget", "size", "tokens", "omitted"]));
    expect(answer._meta[META_KEY]).toEqual(note);
    expect(JSON.parse(answer.content[0]?.text ?? "{}")).toEqual(answer.structuredContent);
    expect(JSON.parse(out?.fit ?? "null")).toEqual(note);
    expect(note.budget).toBe(300);
  });

  it("FIT-12 sets truncated and names the bound when the budget forces a smaller view", async () => {
    const { out } = await deliver(result({ view: "full", budget: 300 }));
    const note = JSON.parse(out?.fit ?? "{}") as { view: string; reason?: string };
    expect(out?.truncated).toBe(true);
    expect(note.view).not.toBe("full");
    expect(note.reason).toBeTruthy();
  });

  it("FIT-14 writes a trace entry with the view and numbers under its section, never the omitted sentence", async () => {
    const r = result({ query: "Install", budget: 2000 });
    const { out, trace } = await deliver(r);
    const note = JSON.parse(out?.fit ?? "{}") as { view: string; size: number; tokens: number; omitted: string };
    expect(trace).toHaveLength(1);
    const entry = trace[0] as TraceEntry;
    expect(entry.section).toBe(FIT_SECTION);
    expect(entry.subject).toBe(r.call_id);
    expect(entry.facts.view).toBe(note.view);
    expect(entry.numbers).toMatchObject({ budget: 2000, size: note.size, tokens: note.tokens });
    const shown = JSON.stringify(entry);
    expect(note.omitted.length).toBeGreaterThan(0);
    expect(shown).not.toContain(note.omitted);
    expect(shown).not.toContain("Install");
  });

  it("FIT-15 fits a result whose call had its budget filled in, like any other", async () => {
    const { out } = await deliver(result({ budget: 8000 }));
    expect(JSON.parse(out?.fit ?? "{}")).toMatchObject({ budget: 8000 });
  });

  it("answers a view the convention does not know as a failed call that says why", async () => {
    const { out, driver } = await deliver(result({ view: "huge" }));
    expect(driver.deadLetters).toEqual([]);
    expect(out?.is_error).toBe(true);
    expect(out?.content).toMatch(/view must be one of stub, summary, section, full/);
  });

  it("fits a result stored by ref, read from the object store", async () => {
    const stored = Buffer.from(mcp(PAGE));
    const r = result({ view: "stub" }, null, { content_ref: `oz0-file:sha256:${"a".repeat(64)}` });
    const { out } = await deliver(r, { ...memoryEnv(), load: () => Promise.resolve(stored) });
    expect(JSON.parse(out?.fit ?? "{}")).toMatchObject({ view: "stub" });
  });

  it("OFF-3 a result heavier than the job's threshold is kept as a file of the tree and the model reads its stub", async () => {
    const env = memoryEnv(1_000);
    const { out, trace } = await deliver(result({}), env);
    const read = JSON.parse(out?.content ?? "{}") as { structuredContent: { offloaded: { ref: string; size: number }; outline: string; note: string } };
    const stub = read.structuredContent;
    expect(stub.offloaded.ref).toMatch(/^oz0-file:sha256:[0-9a-f]{64}$/);
    expect(env.stored.get(stub.offloaded.ref)?.toString()).toBe(PAGE);
    expect(stub.outline).toContain("Install");
    expect(stub.note).toMatch(/1000 tokens/);
    expect(out?.fit).toBeNull();
    const entry = trace.find((t) => t.section === OFFLOAD_SECTION);
    expect(entry?.facts.ref).toBe(stub.offloaded.ref);
    expect(entry?.numbers.size).toBe(stub.offloaded.size);
    expect(JSON.stringify(entry)).not.toContain(stub.outline);
  });

  it("OFF-3 OFF-6 a fitted result heavier than the threshold keeps the fitted text as the file, not its envelope, so its lines are the text's; the stub keeps the fit note", async () => {
    const env = memoryEnv(1_000);
    const { out } = await deliver(result({ view: "full", budget: 20_000 }), env);
    const read = JSON.parse(out?.content ?? "{}") as { structuredContent: { offloaded: { ref: string; lines: number } }; _meta: Record<string, unknown> };
    const stored = env.stored.get(read.structuredContent.offloaded.ref)?.toString();
    expect(stored).toBe(PAGE);
    expect(read.structuredContent.offloaded.lines).toBe(PAGE.split("\n").length);
    expect(read._meta[META_KEY]).toMatchObject({ view: "full", budget: 20_000 });
  });

  it("OFF-14 with the default threshold an answer fitted to its default budget stays inline", async () => {
    const env = memoryEnv(10_000);
    const { out } = await deliver(result({ budget: 8000 }), env);
    expect(env.stored.size).toBe(0);
    expect(JSON.parse(out?.fit ?? "{}")).toMatchObject({ budget: 8000 });
  });

  it("OFF-12 a flow step's result is never offloaded, however big", async () => {
    const env = memoryEnv(1_000);
    const { out } = await deliver(result({}, mcp(PAGE), { origin: "flow_step" }), env);
    expect(env.stored.size).toBe(0);
    expect(out?.content).toBe(mcp(PAGE));
  });

  it("dead-letters a result that is not an MCP result, or a ref with no file, with the reason", async () => {
    const driver = new TestDriver(fitResultsProcessor, noStore);
    await driver.pipe([result({ budget: 100 }, "not json"), result({}, null, { content_ref: `oz0-file:sha256:${"b".repeat(64)}` }), result({}, mcp("x"), { content_ref: "oz0-file:sha256:x" })]);
    expect(driver.deadLetters.map((d) => d.reason)).toEqual([
      expect.stringMatching(/not JSON/),
      expect.stringMatching(/is not a file of tree tree-1 of tenant acme/),
      expect.stringMatching(/exactly one of content and content_ref/),
    ]);
  });
});

describe("FIT-8 only a function that adopts the fit convention is fitted", () => {
  const asSent = (out: ResultDelivered | undefined, r: ToolResult): void => {
    expect(out?.content).toBe(r.content);
    expect(out?.fit).toBeNull();
    expect(out?.truncated).toBe(false);
    expect(out?.is_error).toBe(false);
  };

  it("FIT-8 a query of a tool without the convention is its own search term: the result goes on byte for byte as sent, with no note and no trace", async () => {
    const hits = mcp(PAGE, { structuredContent: { hits: 8 } });
    const r = result({ query: "kafka transactions" }, hits, { plugin: "web", tool: "web", function: "search", arguments: JSON.stringify({ query: "kafka transactions", budget: 300 }) });
    const { out, trace, driver } = await deliver(r, memoryEnv("off"));
    asSent(out, r);
    expect(trace).toEqual([]);
    expect(driver.deadLetters).toEqual([]);
  });

  it("FIT-8 the example manifest's quote takes a money budget: budget 2.5 goes on as sent, not as a failed call", async () => {
    const answer = mcp("The team plan costs 2.40 USD a seat, within the budget of 2.5.");
    const r = result({}, answer, { function: "quote", arguments: JSON.stringify({ plan: "team", budget: 2.5 }) });
    const { out, trace } = await deliver(r);
    asSent(out, r);
    expect(out?.content).not.toMatch(/whole number/);
    expect(trace).toEqual([]);
  });

  it("FIT-8 a money budget big or small is never a token budget: quote's budget 300 leaves a long answer whole", async () => {
    const r = result({}, mcp(PAGE), { function: "quote", arguments: JSON.stringify({ plan: "team", budget: 300 }) });
    asSent((await deliver(r, memoryEnv("off"))).out, r);
  });

  it("FIT-8 a tool the pipeline has no manifest for is not fitted, whatever its arguments are named", async () => {
    const r = result({ view: "summary", budget: 300 }, mcp(PAGE), { plugin: "unpublished", tool: "unpublished" });
    const { out, trace } = await deliver(r, memoryEnv("off"));
    asSent(out, r);
    expect(trace).toEqual([]);
  });

  it("FIT-8 a function with the convention's arguments whose manifest does not say results: {fit: true} is not fitted", async () => {
    const r = result({ view: "summary", budget: 300 }, mcp(PAGE), { plugin: "plain_docs", tool: "plain_docs" });
    asSent((await deliver(r, memoryEnv("off"))).out, r);
  });

  it("FIT-8 a view of a tool without the convention is never judged: view huge goes on as sent", async () => {
    const r = result({ view: "huge" }, mcp("ok"), { plugin: "unpublished", tool: "unpublished" });
    asSent((await deliver(r)).out, r);
  });

  it("FIT-8 FIT-13 a conventional function's result is fitted as before, with its note", async () => {
    const { out, trace } = await deliver(result({ view: "summary", budget: 300 }), memoryEnv("off"));
    expect(JSON.parse(out?.fit ?? "null")).toMatchObject({ budget: 300 });
    expect(trace.map((t) => t.section)).toEqual([FIT_SECTION]);
  });

  it("FIT-13 FIT-8 a result that carries a fit note was fitted by its tool: it goes on as the tool sent it, section text intact, never fitted again", async () => {
    const section = PAGE.split("\n## Use")[0]?.split("## Install\n")[1] ?? "";
    expect(section.length).toBeGreaterThan(1_000);
    const note = { view: "section", budget: 300, size: 9_000, tokens: 290, omitted: "Every section but Install: ask for another by its heading." };
    const own = { content: section, truncated: true, fit: note };
    const sent = JSON.stringify({ content: [{ type: "text", text: JSON.stringify(own) }], structuredContent: own, _meta: { [META_KEY]: note } });
    const r = result({ view: "section", query: "Install", budget: 300 }, sent);
    const { out, trace } = await deliver(r, memoryEnv("off"));
    expect(out?.content).toBe(sent);
    const read = JSON.parse(out?.content ?? "{}") as { structuredContent: { content: string } };
    expect(read.structuredContent.content).toBe(section);
    expect(JSON.parse(out?.fit ?? "null")).toEqual(note);
    expect(out?.truncated).toBe(true);
    // FIT-14: the step is in the trace, as its tool fitted it, never with the omitted sentence.
    expect(trace).toHaveLength(1);
    expect(trace[0]).toMatchObject({ section: FIT_SECTION, facts: { view: "section", by: "tool" }, numbers: { budget: 300, size: 9_000, tokens: 290 } });
    expect(JSON.stringify(trace)).not.toContain(note.omitted);
  });

  it("OFF-3 OFF-14 a result of a tool without the convention is still offloaded over the job's threshold", async () => {
    const env = memoryEnv(1_000);
    const r = result({ query: "kafka transactions" }, mcp(PAGE), { plugin: "web", tool: "web", function: "search", arguments: JSON.stringify({ query: "kafka transactions" }) });
    const { out, trace } = await deliver(r, env);
    const read = JSON.parse(out?.content ?? "{}") as { structuredContent: { offloaded: { ref: string } } };
    expect(env.stored.get(read.structuredContent.offloaded.ref)?.toString()).toBe(PAGE);
    expect(out?.fit).toBeNull();
    expect(trace.map((t) => t.section)).toEqual([OFFLOAD_SECTION]);
  });
});

describe("LOOP-7 the result that crossed the no-progress line", () => {
  const WORDS = "No progress: the last 5 tool results added nothing new. Every tool but the answer is withdrawn for the rest of this run: answer with what you have.";
  type Read = { content: Array<{ type: string; text: string }>; structuredContent?: { offloaded?: { ref: string }; fit?: unknown }; _meta?: Record<string, unknown> };
  const read = (d: ResultDelivered | undefined): Read => JSON.parse(d?.content ?? "{}") as Read;

  it("LOOP-7 tells the model why after the result's own items, as the tool answered it, fitted, or offloaded; the words are never cut nor stored", async () => {
    const asIs = read((await deliver(result({}, mcp("short answer"), { no_progress: WORDS }), memoryEnv("off"))).out);
    expect(asIs.content.map((c) => c.text)).toEqual(["short answer", WORDS]);
    expect(asIs._meta?.[NO_PROGRESS_META]).toBe(WORDS);

    const fitted = await deliver(result({ budget: 50 }, mcp(PAGE), { no_progress: WORDS }), memoryEnv("off"));
    const f = read(fitted.out);
    expect(f.content).toHaveLength(2);
    expect(f.content[1]?.text).toBe(WORDS);
    expect(f._meta?.[META_KEY]).toBeDefined();
    expect(f._meta?.[NO_PROGRESS_META]).toBe(WORDS);

    const env = memoryEnv(1_000);
    const stub = read((await deliver(result({}, mcp(PAGE), { no_progress: WORDS }), env)).out);
    expect(stub.structuredContent?.offloaded?.ref).toMatch(/^oz0-file:sha256:/);
    expect(stub.content.at(-1)?.text).toBe(WORDS);
    expect([...env.stored.values()].map((b) => b.toString())).toEqual([PAGE]);
  });

  it("LOOP-7 every other result is delivered with no words", async () => {
    const { out } = await deliver(result({}, mcp("short answer"), { no_progress: null }), memoryEnv("off"));
    expect(out?.content).toBe(mcp("short answer"));
  });
});
