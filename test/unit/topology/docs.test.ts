import { describe, expect, it } from "vitest";
import { generatedDocs } from "../../../bin/docs-topology.ts";
import { declareTopology } from "../../../topology/declare.ts";
import { mermaid, MissingMarkers, processorsTable, topologyDocs, withBlock } from "../../../topology/docs.ts";
import { PIPELINE_TOPOLOGY } from "../../../topology/pipeline.ts";
import { TOPICS } from "../../../topology/topics.ts";

describe("SYS-1 the docs' tables and diagram are the declared topology's", () => {
  it("docs/processors.md and docs/architecture.md are what npm run docs:topology writes (run it after changing topology/pipeline.ts)", () => {
    const docs = generatedDocs();
    expect(docs.map((d) => d.file).sort()).toEqual(["docs/architecture.md", "docs/processors.md"]);
    for (const d of docs) expect(d.now, `${d.file} differs from the topology: run npm run docs:topology`).toBe(d.generated);
  });

  it("a processor added to the topology changes the table and the diagram, so stale docs fail the check above", () => {
    const [pipeline, sinks] = PIPELINE_TOPOLOGY.applications;
    const extra = { processor: { name: "extra-sink", input: "oz0.trace", outputs: [] }, state: "none" };
    const more = declareTopology([pipeline!, { ...sinks!, processors: [...sinks!.processors, extra] }], TOPICS);
    expect(processorsTable(more)).toContain("| `extra-sink` | `sinks` | `oz0.trace` | nothing | none |");
    expect(processorsTable(PIPELINE_TOPOLOGY)).not.toContain("extra-sink");
    expect(mermaid(more)).toContain("t_oz0_trace --> p_extra_sink");
    const text = generatedDocs().find((d) => d.file === "docs/processors.md")!.generated;
    const block = topologyDocs(more).find((b) => b.name === "processors")!;
    expect(withBlock(text, block)).not.toBe(text);
  });

  it("the table says which processors are chained, and the diagram draws the chained edges dotted", () => {
    expect(processorsTable(PIPELINE_TOPOLOGY)).toContain("| `loop-calls` | `pipeline` | `oz0.tool-calls` (chained after `budget-fill-in`, in process) |");
    expect(mermaid(PIPELINE_TOPOLOGY)).toContain("p_loop_results -. oz0.tool-results.watched .-> p_fit_results");
    expect(mermaid(PIPELINE_TOPOLOGY)).toContain("u_loop_deadlines --> t_oz0_loop_approvals");
  });

  it("a docs file without its markers is refused, naming them", () => {
    expect(() => withBlock("# nothing here\n", { file: "docs/x.md", name: "processors", body: "x" })).toThrow(MissingMarkers);
    expect(() => withBlock("# nothing here\n", { file: "docs/x.md", name: "processors", body: "x" })).toThrow(/docs\/x\.md has no markers "<!-- topology:processors start/);
  });
});
