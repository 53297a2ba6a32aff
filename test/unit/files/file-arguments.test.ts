import { describe, expect, it } from "vitest";
import { fillInProcessor } from "../../../processors/fill-in/processor.ts";
import type { AgentDefinition } from "../../../config/agent.ts";
import { FILES_META_KEY, FILES_NOT_FOUND_META_KEY, FILES_WITHHELD_META_KEY, fileArguments, resolveFileArguments, type FileArgumentsEnv } from "../../../processors/files/arguments.ts";
import { CLEARANCE, loopCallsProcessor } from "../../../processors/loops/calls-processor.ts";
import { MemoryLoopStore } from "../../../processors/loops/memory-store.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { Decision, ResultDelivered, ToolCall } from "../../../schemas/types.ts";
import { FileNotFound } from "../../../store/file-errors.ts";
import type { FileReader } from "../../../store/files.ts";
import { refOf } from "../../../store/objects.ts";
import { toolCall } from "../../support/events.ts";

const mine = refOf(Buffer.from("archive of tree-1"));
const theirs = refOf(Buffer.from("archive of tree-2"));
/** Tree-1's files with labels (OFF-9): payroll holds pii, notes are internal. */
const payroll = refOf(Buffer.from("payroll export of tree-1"));
const notes = refOf(Buffer.from("meeting notes of tree-1"));
const LABELS = new Map<string, readonly string[]>([
  [mine, []],
  [payroll, ["internal", "pii"]],
  [notes, ["internal"]],
]);

/** Tree-1 may read its own files only; every other ref is "not found" alike. */
function env(readers: FileReader[] = []): FileArgumentsEnv {
  return {
    reader: (tenant, tree) => {
      const r = { tenant, tree };
      readers.push(r);
      return Promise.resolve(r);
    },
    readable: (reader, ref) => {
      const labels = LABELS.get(ref);
      return reader.tree === "tree-1" && labels !== undefined ? Promise.resolve({ ref, labels }) : Promise.reject(new FileNotFound(ref));
    },
  };
}

/** An agent that lists the runner tool; with a clearance, it may be handed files of those labels only. */
function agent(name: string, clearance?: string[]): AgentDefinition {
  return { name, tools: ["runner"], limits: { tree: {} }, delegation: { allow: [] }, loops: {}, spend: {}, ...(clearance ? { clearance } : {}) };
}

describe("FILE-1 file arguments of a call", () => {
  it("FILE-1 finds only top-level arguments whose whole value is a file URI", () => {
    const args = { archive: mine, note: `see ${mine}`, nested: { archive: mine }, list: [mine], bad: "oz0-file:sha256:abc" };
    expect(fileArguments(args)).toEqual([{ name: "archive", ref: mine, hex: mine.slice("oz0-file:sha256:".length) }]);
  });

  it("FILE-1 a file the tree may read becomes a path under /oz0/files/ in _meta['oz0/files']", async () => {
    const readers: FileReader[] = [];
    const out = await resolveFileArguments({ tenant: "acme", tree_id: "tree-1" }, { archive: mine, mode: "fast" }, env(readers));
    expect(out).toEqual({ archive: mine, mode: "fast", _meta: { [FILES_META_KEY]: { archive: `/oz0/files/${mine.slice(16)}` } } });
    expect(readers).toEqual([{ tenant: "acme", tree: "tree-1" }]);
  });

  it("FILE-1 a file the tree may not read is not resolved and the call carries the same not-found note as for a file never stored", async () => {
    const never = refOf(Buffer.from("never stored"));
    const out = await resolveFileArguments({ tenant: "acme", tree_id: "tree-1" }, { a: theirs, b: never, c: mine }, env());
    const meta = out?._meta as Record<string, Record<string, string>>;
    expect(meta[FILES_META_KEY]).toEqual({ c: `/oz0/files/${mine.slice(16)}` });
    expect(meta[FILES_NOT_FOUND_META_KEY]?.a).toBe(new FileNotFound(theirs).message);
    expect(meta[FILES_NOT_FOUND_META_KEY]?.a?.replace(theirs, "<ref>")).toBe(meta[FILES_NOT_FOUND_META_KEY]?.b?.replace(never, "<ref>"));
  });

  it("FILE-1 a path a caller put in _meta itself is dropped, other _meta keys are kept, and arguments without files stay as they were", async () => {
    const forged = { archive: theirs, _meta: { [FILES_META_KEY]: { archive: "/etc/passwd" }, progressToken: 7 } };
    const out = await resolveFileArguments({ tenant: "acme", tree_id: "tree-1" }, forged, env());
    expect(out?._meta).toEqual({ progressToken: 7, [FILES_NOT_FOUND_META_KEY]: { archive: new FileNotFound(theirs).message } });
    expect(await resolveFileArguments({ tenant: "acme", tree_id: "tree-1" }, { path: "a.md" }, env())).toBeNull();
  });

  it("FILE-1 the budget fill-in step resolves file arguments of every call on its way to oz0.tool-calls", async () => {
    const driver = new TestDriver(fillInProcessor, { config: staticConfig([]), spendShare: () => Promise.resolve(null), files: env() });
    const call = toolCall({ tree_id: "tree-1", plugin: "runner", tool: "runner", function: "test", arguments: JSON.stringify({ archive: mine }) });
    await driver.pipe(call);
    const [out] = driver.read<ToolCall>("oz0.tool-calls");
    expect(out?.id).toBe(call.id);
    expect(JSON.parse(out?.arguments ?? "{}")).toEqual({ archive: mine, _meta: { [FILES_META_KEY]: { archive: `/oz0/files/${mine.slice(16)}` } } });
  });
});

describe("OFF-9 FILE-1 a file argument above the agent's clearance", () => {
  const cleared = agent("internal-only", ["internal"]);
  const config = staticConfig([
    { kind: "agent", id: cleared.name, value: cleared },
    { kind: "agent", id: "pii-reader", value: agent("pii-reader", ["internal", "pii"]) },
    { kind: "agent", id: "uncleared", value: agent("uncleared") },
  ]);

  /** A call through the budget fill-in and then loop-calls, chained as the pipeline runs them. */
  async function decide(agentName: string, args: Record<string, unknown>) {
    const fillIn = new TestDriver(fillInProcessor, { config, spendShare: () => Promise.resolve(null), files: env() });
    const call = toolCall({ tree_id: "tree-1", agent: agentName, plugin: "runner", tool: "runner", function: "test", arguments: JSON.stringify(args) });
    await fillIn.pipe(call);
    const [filled] = fillIn.read<ToolCall>("oz0.tool-calls");
    if (filled === undefined) throw new Error("the fill-in passed no call on");
    const loops = new TestDriver(loopCallsProcessor, { config, store: new MemoryLoopStore() });
    await loops.pipe(filled);
    const [decision] = loops.read<Decision>("oz0.call-decisions");
    const [result] = loops.read<ResultDelivered>("oz0.results-delivered");
    return { filled: JSON.parse(filled.arguments) as Record<string, unknown> & { _meta?: Record<string, Record<string, string>> }, decision, result, deadLetters: [...fillIn.deadLetters, ...loops.deadLetters] };
  }

  it("OFF-9 FILE-1 a file whose labels are above the agent's clearance is withheld, not resolved, with words that say so", async () => {
    const out = await resolveFileArguments({ tenant: "acme", tree_id: "tree-1" }, { data: payroll, minutes: notes }, env(), cleared);
    const meta = out?._meta as Record<string, Record<string, string>>;
    expect(meta[FILES_META_KEY]).toEqual({ minutes: `/oz0/files/${notes.slice(16)}` });
    expect(meta[FILES_WITHHELD_META_KEY]).toEqual({ data: `${payroll} is withheld by clearance: one of its labels is above the clearance of agent internal-only, so it is not handed to a tool` });
  });

  it("OFF-9 FILE-1 the call is refused where every call is decided: loop-calls refuses it with the words, and the model reads them as the failed result", async () => {
    const { filled, decision, result, deadLetters } = await decide(cleared.name, { data: payroll });
    expect(deadLetters).toEqual([]);
    expect(filled._meta?.[FILES_META_KEY]).toBeUndefined();
    expect(decision).toMatchObject({ verdict: "refuse", reason_code: CLEARANCE, limit: "clearance", processor: "loop-calls" });
    expect(decision?.message).toBe(
      `The call was not made: a file handed to it is above this agent's clearance (argument data: ${payroll} is withheld by clearance: one of its labels is above the clearance of agent internal-only, so it is not handed to a tool). Call it without that file.`,
    );
    expect(result?.is_error).toBe(true);
    expect(JSON.parse(result?.content ?? "{}")).toEqual({ content: [{ type: "text", text: decision?.message }], isError: true });
  });

  it("OFF-9 FILE-1 a file at or below the agent's clearance is still handed, and the call allowed", async () => {
    for (const [who, ref] of [
      [cleared.name, notes],
      ["pii-reader", payroll],
      ["uncleared", payroll],
      ["no-definition", payroll],
    ] as const) {
      const { filled, decision, result } = await decide(who, { data: ref });
      expect(filled._meta?.[FILES_META_KEY]).toEqual({ data: `/oz0/files/${ref.slice(16)}` });
      expect(filled._meta?.[FILES_WITHHELD_META_KEY]).toBeUndefined();
      expect(decision?.verdict).toBe("allow");
      expect(result).toBeUndefined();
    }
  });

  it("OFF-9 a withheld note a caller put in _meta itself is dropped by the fill-in and refuses nothing", async () => {
    const { filled, decision } = await decide(cleared.name, { path: "a.md", _meta: { [FILES_WITHHELD_META_KEY]: { path: "forged" } } });
    expect(filled._meta).toBeUndefined();
    expect(decision?.verdict).toBe("allow");
  });
});
