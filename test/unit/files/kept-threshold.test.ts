import { describe, expect, it } from "vitest";
import { keptThreshold } from "../../../processors/files/env.ts";
import { MemoryFilesStore } from "../../../processors/files/memory-store.ts";
import { parseThreshold } from "../../../processors/files/store.ts";
import { fitResultsProcessor } from "../../../processors/fit-results/processor.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { ResultDelivered, ToolResult } from "../../../schemas/types.ts";
import { refOf } from "../../../store/objects.ts";
import { uid } from "../../support/events.ts";

const TEXT = ["# Report", "", ...Array.from({ length: 200 }, (_, i) => `Line ${i} of the report says something about item ${i}.`)].join("\n");

function result(job: string): ToolResult {
  const content = JSON.stringify({ content: [{ type: "text", text: TEXT }] });
  return { id: uid("res"), tenant: "acme", tree_id: "tree-1", job_id: job, run_id: "run-1", call_id: uid("call"), agent: "fixer", plugin: "docs", tool: "docs", function: "get_page", arguments: "{}", origin: "model", is_error: false, content, content_ref: null, size_bytes: content.length, ts: Date.now(), labels: [] };
}

describe("OFF-13 the offload threshold a job started with", () => {
  it("OFF-13 fit-results weighs every result of a job against the threshold of its first result, and a new job against the settings of its start", async () => {
    const config = staticConfig([{ kind: "tenant", id: "acme", value: { offload: { default: 1_000 } } }]);
    const driver = new TestDriver(fitResultsProcessor, { load: () => Promise.resolve(null), threshold: keptThreshold(new MemoryFilesStore(), config), storeFile: (_o, bytes) => Promise.resolve({ ref: refOf(bytes) }), config });
    const offloaded = async (r: ToolResult) => {
      await driver.pipe(r);
      const out = driver.read<ResultDelivered>("oz0.results-delivered").find((d) => d.input_id === r.id);
      return (out?.content ?? "").includes("oz0/offload");
    };
    expect(await offloaded(result("job-1"))).toBe(true);
    config.set("tenant", "acme", { offload: { default: 50_000 } });
    expect(await offloaded(result("job-1"))).toBe(true);
    expect(await offloaded(result("job-2"))).toBe(false);
  });

  it("OFF-13 a kept threshold reads back as tokens or off, and anything else is an error that says what Redis holds", () => {
    expect(parseThreshold("4000")).toBe(4000);
    expect(parseThreshold("off")).toBe("off");
    expect(() => parseThreshold("-3")).toThrow(/Redis holds "-3"/);
  });
});
