import { describe, expect, it } from "vitest";
import { extractEmbeddedFiles } from "../../../processors/files/embedded.ts";
import { fitResultsProcessor, type FitEnv } from "../../../processors/fit-results/processor.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { ResultDelivered, ToolResult } from "../../../schemas/types.ts";
import { refOf } from "../../../store/objects.ts";
import { uid } from "../../support/events.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";

const archive = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 1, 2, 3, 4, 5]);
const ref = refOf(archive);

function embedded(over: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: "resource", resource: { uri: ref, mimeType: "application/gzip", blob: archive.toString("base64"), ...over } };
}

function result(content: unknown[], args: Record<string, unknown> = {}): ToolResult {
  return {
    id: uid("res"), tenant: "acme", tree_id: "tree-1", job_id: "job-1", run_id: "run-1", call_id: uid("call"), agent: "fixer", plugin: "github", tool: "github", function: "download_archive",
    arguments: JSON.stringify(args), origin: "model", is_error: false, content: JSON.stringify({ content }), content_ref: null, size_bytes: 100, ts: Date.now(), labels: [],
  };
}

describe("FILE-1 files a tool returns as embedded resources", () => {
  it("FILE-1 takes the bytes of an oz0-file embedded resource out and leaves a link with the URI alone", () => {
    const out = extractEmbeddedFiles({ content: [{ type: "text", text: `archive: ${ref}` }, embedded() as never] });
    if ("error" in out) throw new Error(out.error);
    expect(out.files).toEqual([{ ref, bytes: archive, mimeType: "application/gzip" }]);
    expect(out.result.content).toEqual([{ type: "text", text: `archive: ${ref}` }, { type: "resource_link", uri: ref, name: `file ${ref.slice(16, 28)}`, mimeType: "application/gzip", size: archive.length }]);
  });

  it("FILE-1 a text resource is stored as its UTF-8 bytes; other resources and bare URIs are left alone", () => {
    const text = "a,b\n1,2\n";
    const textRef = refOf(Buffer.from(text));
    const other = { type: "resource", resource: { uri: "file:///tmp/x", text: "x" } };
    const bare = { type: "resource", resource: { uri: ref } };
    const out = extractEmbeddedFiles({ content: [{ type: "resource", resource: { uri: textRef, text } }, other, bare] as never });
    if ("error" in out) throw new Error(out.error);
    expect(out.files.map((f) => f.bytes.toString("utf8"))).toEqual([text]);
    expect(out.result.content.slice(1)).toEqual([other, bare]);
  });

  it("FILE-1 a URI that does not name the SHA-256 of the bytes is refused with the reason", () => {
    const out = extractEmbeddedFiles({ content: [embedded({ blob: Buffer.from("other bytes").toString("base64") }) as never] });
    expect("error" in out && out.error).toContain("name it by its digest");
  });

  it("FILE-1 fit-results stores the file under the call's tenant and tree and the model reads only the URI", async () => {
    const stored: Array<{ owner: unknown; bytes: Buffer }> = [];
    const env: FitEnv = {
      load: () => Promise.resolve(null),
      threshold: () => 10_000,
      storeFile: (owner, bytes) => {
        stored.push({ owner, bytes });
        return Promise.resolve({ ref: refOf(bytes) });
      },
      config: staticConfig([]),
    };
    const driver = new TestDriver(fitResultsProcessor, env);
    await driver.pipe(result([{ type: "text", text: `The archive is ${ref}.` }, embedded()]));
    expect(driver.deadLetters).toEqual([]);
    expect(stored).toEqual([{ owner: { tenant: "acme", tree: "tree-1" }, bytes: archive }]);
    const [out] = driver.read<ResultDelivered>("oz0.results-delivered");
    expect(out?.content).not.toContain(archive.toString("base64"));
    expect(JSON.parse(out?.content ?? "{}")).toEqual({ content: [{ type: "text", text: `The archive is ${ref}.` }, { type: "resource_link", uri: ref, name: `file ${ref.slice(16, 28)}`, mimeType: "application/gzip", size: archive.length }] });
  });

  it("FILE-1 fit-results dead-letters a result whose embedded URI is not the digest of its bytes", async () => {
    const env: FitEnv = { load: () => Promise.resolve(null), threshold: () => 10_000, storeFile: () => Promise.reject(new Error("nothing is stored")), config: staticConfig([]) };
    const driver = new TestDriver(fitResultsProcessor, env);
    await driver.pipe(result([embedded({ blob: Buffer.from("forged").toString("base64") })]));
    expect(driver.read("oz0.results-delivered")).toEqual([]);
    expect(driver.deadLetters[0]?.reason).toContain("name it by its digest");
  });
});
