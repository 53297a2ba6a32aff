import { describe, expect, it } from "vitest";
import { fitResultsProcessor, OFFLOAD_SECTION, type FitEnv } from "../../../processors/fit-results/processor.ts";
import { OFFLOAD_META_KEY } from "../../../processors/offload/index.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { ResultDelivered, ToolResult, TraceEntry } from "../../../schemas/types.ts";
import { refOf } from "../../../store/objects.ts";
import { toolCall, uid } from "../../support/events.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";

const PAGE = ["# Handbook", "", "The handbook says how things are done.", ...Array.from({ length: 300 }, (_, i) => `## Rule ${i}\n\nRule ${i} says to do thing ${i} before thing ${i + 1}, and to write it down.`)].join("\n");

function result(text: string): ToolResult {
  const content = JSON.stringify({ content: [{ type: "text", text }] });
  return { ...toolCall({ arguments: JSON.stringify({ path: "handbook.md" }) }), id: uid("res"), is_error: false, content, content_ref: null, size_bytes: content.length, labels: [] };
}

function env(stored: Map<string, Buffer>): FitEnv {
  return {
    load: () => Promise.resolve(null),
    threshold: () => 1_000,
    storeFile: (_owner, bytes) => {
      stored.set(refOf(bytes), bytes);
      return Promise.resolve({ ref: refOf(bytes) });
    },
    config: staticConfig([]),
  };
}

async function offload() {
  const stored = new Map<string, Buffer>();
  const input = result(PAGE);
  const before = JSON.stringify(input);
  const driver = new TestDriver(fitResultsProcessor, env(stored));
  await driver.pipe(input);
  const [out] = driver.read<ResultDelivered>("oz0.results-delivered");
  const read = JSON.parse(out?.content ?? "{}") as { structuredContent: { offloaded: { ref: string; size: number; tokens: number; lines: number }; outline: string }; _meta: Record<string, unknown> };
  return { driver, stored, input, before, out, stub: read.structuredContent, meta: read._meta };
}

describe("what stays whole when a result is offloaded (OFF-11)", () => {
  it("OFF-11 the trace entry of an offload carries the size and the digest, never the outline", async () => {
    const { driver, stub } = await offload();
    const entries = driver.read<TraceEntry>("oz0.trace").filter((t) => t.section === OFFLOAD_SECTION);
    expect(entries).toHaveLength(1);
    const entry = entries[0] as TraceEntry;
    expect(entry.facts.ref).toBe(stub.offloaded.ref);
    expect(entry.facts.ref).toMatch(/^oz0-file:sha256:[0-9a-f]{64}$/);
    expect(entry.numbers).toEqual({ size: stub.offloaded.size, tokens: stub.offloaded.tokens, lines: stub.offloaded.lines });
    expect(stub.outline.length).toBeGreaterThan(0);
    const shown = JSON.stringify(entry);
    expect(shown).not.toContain(stub.outline);
    for (const line of stub.outline.split("\n").slice(0, 5)) expect(shown).not.toContain(line);
  });

  it("OFF-11 what the model reads (and a live stream carries) is the stub with its ref, never the whole", async () => {
    const { out, stub, meta } = await offload();
    expect(stub.offloaded.ref).toBe(refOf(Buffer.from(PAGE)));
    expect(meta[OFFLOAD_META_KEY]).toEqual(stub.offloaded);
    expect(out?.content).not.toContain("Rule 250 says");
    expect(out?.content.length).toBeLessThan(PAGE.length / 4);
  });

  it("OFF-11 the job history and post-tool-call hooks keep the whole result: the published result is not changed, and the file holds the whole text", async () => {
    const { driver, stored, input, before, stub } = await offload();
    expect(JSON.stringify(input)).toBe(before);
    expect(driver.emitted.map((e) => e.to).sort()).toEqual(["oz0.results-delivered", "oz0.trace"]);
    expect(stored.get(stub.offloaded.ref)?.toString("utf8")).toBe(PAGE);
  });
});
