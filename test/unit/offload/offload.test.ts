import { describe, expect, it } from "vitest";
import { resolveOffloadThreshold } from "../../../config/resolve.ts";
import type { CallOrigin } from "../../../schemas/types.ts";
import { refOf } from "../../../store/objects.ts";
import { fit, META_KEY, weigh } from "../../../processors/fit/index.ts";
import type { McpResult } from "../../../processors/fit-results/mcp.ts";
import { decideOffload, MAX_RESULT_JSON_BYTES, OFFLOAD_META_KEY, offloadResult, type OffloadDecision, type OffloadEnv } from "../../../processors/offload/index.ts";

/** A Markdown page of `sections` sections of `lines` lines each. */
function page(sections: number, lines: number): string {
  const out = ["# Release notes", "", "These notes list every change. Read them in order.", ""];
  for (let s = 0; s < sections; s++) {
    out.push(`## Part ${s}`, "", `Part ${s} begins here. It goes on for a while.`);
    for (let l = 0; l < lines; l++) out.push(`Line ${l} of part ${s} says something about item ${l * 7 + s} and the widget.`);
    out.push("");
  }
  return out.join("\n");
}

const text = (t: string): McpResult => ({ content: [{ type: "text", text: t }] });
const BIG = page(40, 60);
const DEFAULT = resolveOffloadThreshold(undefined, undefined);
/** Lines as read: a final newline ends the last line, it does not start another. */
const linesOf = (t: string): number => t.replace(/\n$/, "").split("\n").length;

function offloaded(d: OffloadDecision): Extract<OffloadDecision, { action: "offload" }> {
  if (d.action !== "offload") throw new Error(`expected an offload, got ${JSON.stringify(d).slice(0, 200)}`);
  return d;
}

/** What fit-results delivers for a call fitted to `budget` (processors/fit-results/processor.ts). */
function fitted(doc: string, view: string | undefined, budget: number): McpResult {
  const f = fit(doc, { view, budget, name: "acme_docs.get_page" });
  const answer = { content: f.text, truncated: f.truncated, fit: f.meta() };
  return { content: [{ type: "text", text: JSON.stringify(answer) }], structuredContent: answer, _meta: { [META_KEY]: f.meta() } };
}

describe("the offload step", () => {
  it("OFF-12 offloads only a model's calls and an ACP session's, never a flow step's, a harness's, a remote agent's or a person's", () => {
    const decide = (origin: CallOrigin) => decideOffload({ result: text(BIG), threshold: 10_000, origin, name: "acme_docs.get_page" }).action;
    expect(decide("model")).toBe("offload");
    expect(decide("acp")).toBe("offload");
    for (const origin of ["flow_step", "harness", "remote", "person"] as const) expect(decide(origin)).toBe("inline");
  });

  it("OFF-3 a result above the threshold becomes a stub with ref, kind, size, tokens and lines, and the file is its whole text", () => {
    const d = offloaded(decideOffload({ result: text(BIG), threshold: 10_000, origin: "model", name: "acme_docs.get_page" }));
    expect(Object.keys(d.stub)).toEqual(["offloaded", "outline", "note"]);
    expect(Object.keys(d.stub.offloaded)).toEqual(["ref", "kind", "size", "tokens", "lines"]);
    expect(d.file.toString("utf8")).toBe(BIG);
    expect(d.stub.offloaded).toEqual({ ref: refOf(Buffer.from(BIG)), kind: "markdown", size: Buffer.byteLength(BIG), tokens: weigh(BIG), lines: linesOf(BIG) });
    expect(d.stub.offloaded.ref).toMatch(/^oz0-file:sha256:[0-9a-f]{64}$/);
    expect(d.stub.note).toContain(`The result of acme_docs.get_page (${weigh(BIG)} tokens, ${linesOf(BIG)} lines) is more than the 10000 tokens`);
    expect(d.stub.note).toContain(`oz.read_result("${d.stub.offloaded.ref}"`);
    expect(d.result.content).toEqual([{ type: "text", text: JSON.stringify(d.stub) }]);
    expect(d.result.structuredContent).toEqual(d.stub);
    expect(d.result._meta?.[OFFLOAD_META_KEY]).toEqual(d.stub.offloaded);
  });

  it("OFF-3 a result at or below the threshold stays inline, and a threshold of off offloads nothing", () => {
    const small = page(2, 3);
    expect(decideOffload({ result: text(small), threshold: weigh(small), origin: "model", name: "t.f" })).toEqual({ action: "inline", why: "within_threshold" });
    expect(decideOffload({ result: text(small), threshold: weigh(small) - 1, origin: "model", name: "t.f" }).action).toBe("offload");
    expect(decideOffload({ result: text(BIG), threshold: "off", origin: "model", name: "t.f" })).toEqual({ action: "inline", why: "off" });
  });

  it("OFF-4 the outline is the summary (each heading with its first sentence) when it fits a quarter of the threshold", () => {
    const d = offloaded(decideOffload({ result: text(BIG), threshold: 10_000, origin: "model", name: "acme_docs.get_page" }));
    expect(d.stub.outline.split("\n").slice(0, 2)).toEqual(["# Release notes: These notes list every change.", "## Part 0: Part 0 begins here."]);
    expect(weigh(d.stub.outline)).toBeLessThanOrEqual(2_500);
  });

  it("OFF-4 the outline is the bare stub (headings alone) when the summary does not fit a quarter of the threshold", () => {
    const d = offloaded(decideOffload({ result: text(BIG), threshold: 1_200, origin: "model", name: "acme_docs.get_page" }));
    expect(weigh(d.stub.outline)).toBeLessThanOrEqual(300);
    expect(d.stub.outline).not.toContain("begins here");
    expect(d.stub.outline.split("\n")[0]).toBe("# Release notes");
    expect(d.stub.note).toContain("(headings only)");
  });

  it("OFF-4 the outline never exceeds 1,000 tokens, whatever the threshold", () => {
    const huge = page(400, 5);
    expect(weigh(huge)).toBeGreaterThan(8_000);
    const d = offloaded(decideOffload({ result: text(huge), threshold: weigh(huge) - 1, origin: "model", name: "t.f" }));
    expect(d.stub.outline.length).toBeGreaterThan(0);
    expect(weigh(d.stub.outline)).toBeLessThanOrEqual(1_000);
  });

  it("OFF-4 the same text gives the same stub, byte for byte", () => {
    const a = decideOffload({ result: text(BIG), threshold: 10_000, origin: "model", name: "acme_docs.get_page" });
    const b = decideOffload({ result: JSON.stringify(text(BIG)), threshold: 10_000, origin: "acp", name: "acme_docs.get_page" });
    expect(JSON.stringify(offloaded(b).stub)).toBe(JSON.stringify(offloaded(a).stub));
  });

  it("OFF-5 one-line JSON is read by top-level keys and items, one indented line per value, and lines counts that form", () => {
    const value = { items: Array.from({ length: 3000 }, (_, i) => ({ id: i, name: `item ${i}` })), total: 3000 };
    const d = offloaded(decideOffload({ result: text(JSON.stringify(value)), threshold: 10_000, origin: "model", name: "db.query" }));
    expect(d.stub.offloaded.kind).toBe("json");
    expect(d.stub.offloaded.lines).toBe(JSON.stringify(value, null, 2).split("\n").length);
    expect(d.stub.outline).toContain('"total": 3000');
    // The file keeps the text as the tool wrote it.
    expect(d.file.toString("utf8")).toBe(JSON.stringify(value));
  });

  it("OFF-5 a result with only structured content is weighed, stored and read as its JSON", () => {
    const value = { rows: Array.from({ length: 2000 }, (_, i) => ({ n: i, word: `w${i}` })) };
    const d = offloaded(decideOffload({ result: { content: [], structuredContent: value }, threshold: 5_000, origin: "model", name: "db.rows" }));
    expect(d.file.toString("utf8")).toBe(JSON.stringify(value));
    expect(d.stub.offloaded.kind).toBe("json");
  });

  it("OFF-5 plain text is read by runs of lines", () => {
    const plain = Array.from({ length: 4000 }, (_, i) => `${i} a log line with no headings at all`).join("\n");
    const d = offloaded(decideOffload({ result: text(plain), threshold: 10_000, origin: "model", name: "logs.tail" }));
    expect(d.stub.offloaded.kind).toBe("text");
    expect(d.stub.offloaded.lines).toBe(linesOf(plain));
  });

  it("OFF-1 a result above 31 MiB of text and structured content is a failed call telling the model to ask for less", () => {
    const huge = "x".repeat(MAX_RESULT_JSON_BYTES);
    const d = decideOffload({ result: text(huge), threshold: 10_000, origin: "model", name: "acme_docs.dump" });
    if (d.action !== "fail") throw new Error(`expected a failed call, got ${d.action}`);
    expect(d.bytes).toBeGreaterThan(MAX_RESULT_JSON_BYTES);
    expect(d.result.isError).toBe(true);
    const message = d.result.content[0]?.text ?? "";
    expect(message).toMatch(/The call to acme_docs\.dump was made/);
    expect(message).toMatch(/is not used/);
    expect(message).toMatch(/not made again/);
    expect(message).toMatch(/Ask for less/);
    // Counted over text plus structured content, and whatever the threshold.
    const half = "y".repeat(MAX_RESULT_JSON_BYTES / 2);
    expect(decideOffload({ result: { content: [{ type: "text", text: half }], structuredContent: { half } }, threshold: "off", origin: "model", name: "t.f" }).action).toBe("fail");
    // Just under the limit is not a failed call.
    const under = "z".repeat(MAX_RESULT_JSON_BYTES - 100);
    expect(decideOffload({ result: text(under), threshold: "off", origin: "model", name: "t.f" }).action).toBe("inline");
  });

  it("OFF-13 the threshold comes from resolveOffloadThreshold: the default 10,000, an agent's off, a tenant's ceiling", () => {
    const mid = page(30, 25);
    const tokens = weigh(mid);
    expect(DEFAULT).toBe(10_000);
    expect(tokens).toBeGreaterThan(10_000);
    const decide = (threshold: ReturnType<typeof resolveOffloadThreshold>) => decideOffload({ result: text(mid), threshold, origin: "model", name: "t.f" }).action;
    expect(decide(DEFAULT)).toBe("offload");
    expect(decide(resolveOffloadThreshold({ offload: "off" }, undefined))).toBe("inline");
    expect(decide(resolveOffloadThreshold({ offload: tokens + 1 }, undefined))).toBe("inline");
    expect(decide(resolveOffloadThreshold({ offload: tokens + 1 }, { offload: { ceiling: tokens - 1 } }))).toBe("offload");
  });

  it("OFF-14 with the default threshold, an answer fitted to its default budget (at most 8,000) stays inline; one asked to be bigger is offloaded", () => {
    const doc = page(200, 30);
    for (const view of [undefined, "full", "section", "summary", "stub"]) {
      const result = fitted(doc, view, 8_000);
      expect(decideOffload({ result, threshold: DEFAULT, origin: "model", name: "acme_docs.get_page" }).action).toBe("inline");
    }
    // An answer that fills its budget: the whole of a document just under 8,000 tokens.
    let sections = 1;
    while (weigh(page(sections + 1, 30)) <= 7_900) sections++;
    const full = fitted(page(sections, 30), "full", 8_000);
    expect(JSON.stringify(full)).toContain("Part 0 begins here");
    expect(decideOffload({ result: full, threshold: DEFAULT, origin: "model", name: "acme_docs.get_page" }).action).toBe("inline");
    // Asked to be bigger than the default budget: offloaded.
    expect(decideOffload({ result: fitted(BIG, "full", 45_000), threshold: DEFAULT, origin: "model", name: "acme_docs.get_page" }).action).toBe("offload");
  });

  it("OFF-3 OFF-9 offloadResult stores the file for the tree with its labels and delivers the stub", async () => {
    const stored: { owner: unknown; bytes: Buffer; labels: readonly string[] }[] = [];
    const env: OffloadEnv = {
      storeFile: (owner, bytes, { labels }) => {
        stored.push({ owner, bytes, labels });
        return Promise.resolve({ ref: refOf(bytes) });
      },
    };
    const call = { result: text(BIG), threshold: 10_000, origin: "model" as const, name: "acme_docs.get_page", tenant: "acme", tree: "job-1", labels: ["pii"] };
    const out = await offloadResult(call, env);
    expect(stored).toEqual([{ owner: { tenant: "acme", tree: "job-1" }, bytes: Buffer.from(BIG), labels: ["pii"] }]);
    expect(out.delivered?.structuredContent).toEqual(offloaded(out.decision).stub);
    expect((await offloadResult({ ...call, origin: "flow_step" }, env)).delivered).toBeNull();
    expect(stored).toHaveLength(1);
    const liar: OffloadEnv = { storeFile: () => Promise.resolve({ ref: refOf(Buffer.from("other")) }) };
    await expect(offloadResult(call, liar)).rejects.toThrow(/must be the SHA-256 of the stored bytes/);
  });

  it("OFF-3 a result that is not an MCP CallToolResult is reported invalid, not offloaded", () => {
    expect(decideOffload({ result: "not json", threshold: 10, origin: "model", name: "t.f" }).action).toBe("invalid");
  });
});
