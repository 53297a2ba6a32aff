import { describe, expect, it } from "vitest";
import { formatTrace } from "../../client/trace-format.ts";
import type { Decision, TraceEntry } from "../../schemas/types.ts";

const entry = (section: string, subject: string, ts: number, facts: Record<string, string>, numbers: Record<string, number>): TraceEntry => ({
  id: `${subject}-${ts}`,
  processor: "fit-results",
  tenant: "acme",
  tree_id: "job-1",
  job_id: "job-1",
  run_id: "run-1",
  section,
  subject,
  facts,
  numbers,
  ts,
});

const refusal: Decision = {
  id: "d1",
  input_id: "i1",
  processor: "limits-jobs",
  tenant: "acme",
  tree_id: "job-1",
  job_id: "job-1",
  run_id: "run-1",
  subject: "job-2",
  verdict: "refuse",
  reason_code: "TreeLimitExceeded",
  limit: "limits.tree.fan_out",
  numbers: { fan_out: 5 },
  message: "raise limits.tree.fan_out",
  evidence: null,
  ts: 3,
};

describe("the trace command's text", () => {
  it("FIT-14 lists fitted steps under their section with the view and numbers, and the decisions with their reasons", () => {
    const text = formatTrace({
      jobId: "job-1",
      entries: [
        entry("Results offloaded", "call-2", 2, { ref: "oz0-file:sha256:ab" }, { size: 10, tokens: 5, lines: 1 }),
        entry("Results fitted to a budget", "call-1", 1, { view: "summary" }, { budget: 2000, size: 12340, tokens: 1840 }),
      ],
      decisions: [refusal],
    });
    expect(text.split("\n")).toEqual([
      "Trace of job job-1",
      "",
      "Results fitted to a budget (1)",
      "  call-1: budget 2000, size 12340, tokens 1840, view summary",
      "",
      "Results offloaded (1)",
      "  call-2: lines 1, ref oz0-file:sha256:ab, size 10, tokens 5",
      "",
      "Decisions (1)",
      "  limits-jobs refuse job-2 (TreeLimitExceeded limits.tree.fan_out): raise limits.tree.fan_out",
      "",
    ]);
  });

  it("says so when nothing was recorded for the job", () => {
    expect(formatTrace({ jobId: "job-9", entries: [], decisions: [] })).toMatch(/nothing recorded for this job/);
  });
});
