import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { argumentsTooLarge, jsonNestingDepth, MAX_ARGUMENTS_BYTES, MAX_ARGUMENTS_DEPTH, parseArguments } from "../../processors/call-arguments.ts";
import { fitResultsProcessor, type FitEnv } from "../../processors/fit-results/processor.ts";
import { fillInProcessor } from "../../processors/fill-in/processor.ts";
import { loopCallsProcessor } from "../../processors/loops/calls-processor.ts";
import { canonicalJson, summarizeResult } from "../../processors/loops/digest.ts";
import { MemoryLoopStore } from "../../processors/loops/memory-store.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { runBatch } from "../../processors/runner/batch.ts";
import { defineProcessor, type Emit, type InputRecord } from "../../processors/runner/processor.ts";
import { deadLetterBytes, DEAD_LETTER_MAX_VALUE_BYTES, MAX_REASON_CHARS, outputTooLarge, recordLimit } from "../../processors/runner/record-size.ts";
import { TestDriver } from "../../processors/runner/test-driver.ts";
import type { RawRecord } from "../../processors/runner/transport.ts";
import type { ToolCall, ToolResult } from "../../schemas/types.ts";
import { toolCall } from "../support/events.ts";

const deep = (levels: number): string => `{"a":${"[".repeat(levels - 1)}${"]".repeat(levels - 1)}}`;
const huge = (bytes: number): string => JSON.stringify({ path: "x".repeat(bytes) });

function toolResult(over: Partial<ToolResult> = {}): ToolResult {
  return {
    id: "res-1",
    tenant: "acme",
    tree_id: "tree-1",
    job_id: "job-1",
    run_id: "run-1",
    call_id: "call-1",
    agent: "acme-reviewer",
    plugin: "acme_docs",
    tool: "acme_docs",
    function: "get_page",
    arguments: "{}",
    origin: "model",
    is_error: false,
    content: JSON.stringify({ content: [{ type: "text", text: "hello" }] }),
    content_ref: null,
    size_bytes: 50,
    ts: 1_700_000_000_000,
    labels: [],
    ...over,
  };
}

const fitEnv: FitEnv = { load: () => Promise.resolve(null), threshold: () => 10_000, storeFile: () => Promise.reject(new Error("nothing is stored here")), config: staticConfig([]) };

describe("arguments too large or too deep (SYS-1, FILE-1)", () => {
  it("SYS-1 measures nesting by a linear scan, skipping brackets inside strings and escapes", () => {
    expect(jsonNestingDepth('{"a":[1,{"b":[]}]}')).toBe(4);
    expect(jsonNestingDepth('{"a":"[[[[{{{{\\"[[["}')).toBe(1);
    expect(jsonNestingDepth("[".repeat(100_000), 64)).toBe(65);
  });

  it("SYS-1 refuses arguments nested 100,000 levels deep with the limit in the reason, without overflowing a stack", () => {
    const reason = parseArguments(deep(100_000));
    expect(reason).toEqual(expect.stringMatching(new RegExp(`more than ${MAX_ARGUMENTS_DEPTH} levels deep: flatten them`)));
    expect(Object.keys(parseArguments(deep(MAX_ARGUMENTS_DEPTH)))).toEqual(["a"]);
    expect(typeof parseArguments(deep(MAX_ARGUMENTS_DEPTH + 1))).toBe("string");
  });

  it("SYS-1 FILE-1 refuses arguments above 512 KiB, counting UTF-8 bytes, and points to files", () => {
    expect(argumentsTooLarge(huge(MAX_ARGUMENTS_BYTES))).toMatch(/arguments are \d+ bytes, above the limit of 524288 \(512 KiB\): store large data as a file/);
    expect(Object.keys(parseArguments(huge(MAX_ARGUMENTS_BYTES - 100)))).toEqual(["path"]);
    // 200,000 characters of three UTF-8 bytes each: 600,000 bytes.
    expect(argumentsTooLarge(JSON.stringify({ t: "€".repeat(200_000) }))).toMatch(/600\d{3} bytes/);
    expect(argumentsTooLarge(JSON.stringify({ t: "a".repeat(200_000) }))).toBeNull();
  });

  it("SYS-1 says what to do with arguments that are not an object", () => {
    expect(parseArguments("[1,2]")).toMatch(/must be a JSON object: publish the call's arguments as one/);
    expect(parseArguments("{nope")).toMatch(/arguments are not JSON .*publish the call's arguments as a JSON object/);
  });

  it("SYS-1 loop-calls, budget-fill-in and fit-results dead-letter such calls with the reason", async () => {
    const loops = new TestDriver(loopCallsProcessor, { config: staticConfig([]), store: new MemoryLoopStore() });
    await loops.pipe([toolCall({ arguments: deep(100_000) }), toolCall({ arguments: huge(2 * 1024 * 1024) }), toolCall()]);
    expect(loops.deadLetters.map((d) => d.reason)).toEqual([expect.stringMatching(/levels deep/), expect.stringMatching(/above the limit of 524288/)]);
    expect(loops.emitted.filter((e) => e.to === "oz0.call-decisions")).toHaveLength(1);

    const fillIn = new TestDriver(fillInProcessor, { config: staticConfig([]), spendShare: () => Promise.resolve(null) });
    await fillIn.pipe([toolCall({ arguments: deep(100_000) })]);
    expect(fillIn.deadLetters.map((d) => d.reason)).toEqual([expect.stringMatching(/levels deep/)]);

    const fit = new TestDriver(fitResultsProcessor, fitEnv);
    await fit.pipe([toolResult({ arguments: deep(100_000) }), toolResult({ id: "res-2", arguments: huge(MAX_ARGUMENTS_BYTES + 1) })]);
    expect(fit.deadLetters.map((d) => d.reason)).toEqual([expect.stringMatching(/levels deep/), expect.stringMatching(/512 KiB/)]);
  });

  it("SYS-1 LOOP-1 summarises a result nested deeper than the stack by its text instead of failing", () => {
    const content = `{"content":[{"type":"text","text":"x"}],"structuredContent":${"[".repeat(200_000)}${"]".repeat(200_000)}}`;
    expect(() => canonicalJson(JSON.parse(content))).toThrow(RangeError);
    const a = summarizeResult({ is_error: false, content, content_ref: null });
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
    expect([a.empty, a.error]).toEqual([false, false]);
    expect(summarizeResult({ is_error: false, content, content_ref: null }).hash).toBe(a.hash);
  });
});

describe("what one huge input can make the runner write (SYS-1)", () => {
  const raw = (value: Buffer | null, key: Buffer | null = Buffer.from("k")): RawRecord => ({ topic: "oz0.tool-calls", partition: 3, offset: "42", key, value, timestamp: "0" });

  it("SYS-1 a dead letter of a 10 MB input keeps its first MiB and says its size, SHA-256 and where the whole stays", () => {
    const value = Buffer.alloc(10 * 1024 * 1024, 7);
    const d = deadLetterBytes(raw(value), "arguments are too large");
    expect(d.value?.length).toBe(DEAD_LETTER_MAX_VALUE_BYTES);
    expect(d.value?.equals(value.subarray(0, DEAD_LETTER_MAX_VALUE_BYTES))).toBe(true);
    const sha = createHash("sha256").update(value).digest("hex");
    expect(d.reason).toMatch(/^arguments are too large The input's value was 10485760 bytes/);
    expect(d.reason).toContain(`SHA-256 ${sha}`);
    expect(d.reason).toContain("the whole input stays at oz0.tool-calls partition 3 offset 42");
  });

  it("SYS-1 a small input's dead letter carries its bytes and reason unchanged; a huge key or reason is cut", () => {
    const small = deadLetterBytes(raw(Buffer.from("abc")), "why");
    expect(small).toEqual({ key: Buffer.from("k"), value: Buffer.from("abc"), reason: "why" });
    const cut = deadLetterBytes(raw(null, Buffer.alloc(5 * 1024 * 1024)), "r".repeat(100_000));
    expect(cut.key?.length).toBe(64 * 1024);
    expect(cut.value).toBeNull();
    expect(cut.reason.length).toBeLessThan(MAX_REASON_CHARS + 1_000);
    expect(cut.reason).toMatch(/more characters cut\) The input's key was 5242880 bytes/);
  });

  it("SYS-1 an output above its topic's limit is named with its size and the limit", () => {
    expect(recordLimit("oz0.call-decisions")).toBe(1_048_588 - 1024);
    expect(recordLimit("oz0.results-delivered")).toBe(8 * 1024 * 1024 - 1024);
    expect(outputTooLarge({ to: "oz0.call-decisions", key: "run" }, Buffer.alloc(1000))).toBeUndefined();
    expect(outputTooLarge({ to: "oz0.call-decisions", key: "run" }, Buffer.alloc(2_000_000))).toMatch(/its Decision for oz0.call-decisions would be 2000003 bytes, above the 1047564 bytes the topic takes/);
  });

  it("SYS-1 runBatch dead-letters the input whose output the runner cannot write, and keeps the others", async () => {
    const echo = defineProcessor<ToolCall>({
      name: "echo",
      input: "oz0.tool-calls",
      outputs: ["oz0.tool-calls.requested"],
      process: (records) => records.map((r) => ({ emits: [{ to: "oz0.tool-calls.requested" as const, key: r.value.run_id, value: r.value }] })),
    });
    const records: InputRecord<ToolCall>[] = [toolCall({ tool: "x".repeat(2_000_000) }), toolCall()].map((value, i) => ({ topic: "oz0.tool-calls", partition: 0, offset: String(i), key: null, value, timestamp: "0" }));
    const checkEmit = (e: Emit) => outputTooLarge(e, Buffer.from(JSON.stringify(e.value)));
    const result = await runBatch(echo, records, undefined, { checkEmit });
    expect(result.rejected.map((r) => [r.offset, r.error])).toEqual([["0", "failed"]]);
    expect(result.rejected[0]?.reason).toMatch(/above the \d+ bytes the topic takes/);
    expect(result.emits).toHaveLength(1);
  });
});
