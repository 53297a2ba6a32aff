import { describe, expect, it } from "vitest";
import { fillInProcessor } from "../../../processors/fill-in/processor.ts";
import { FILES_META_KEY, FILES_NOT_FOUND_META_KEY, fileArguments, resolveFileArguments, type FileArgumentsEnv } from "../../../processors/files/arguments.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { ToolCall } from "../../../schemas/types.ts";
import { FileNotFound } from "../../../store/file-errors.ts";
import type { FileReader } from "../../../store/files.ts";
import { refOf } from "../../../store/objects.ts";
import { toolCall } from "../../support/events.ts";

const mine = refOf(Buffer.from("archive of tree-1"));
const theirs = refOf(Buffer.from("archive of tree-2"));

/** Tree-1 may read `mine` only; every other ref is "not found" alike. */
function env(readers: FileReader[] = []): FileArgumentsEnv {
  return {
    reader: (tenant, tree) => {
      const r = { tenant, tree };
      readers.push(r);
      return Promise.resolve(r);
    },
    readable: (reader, ref) => (reader.tree === "tree-1" && ref === mine ? Promise.resolve({ ref }) : Promise.reject(new FileNotFound(ref))),
  };
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
