import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MEASURED, MEASURED_KINDS } from "../../bench/load/play.ts";
import { AGENTS_GRACE_MS, runLoad } from "../../bench/load/run.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { endpoints } from "../support/kafka.ts";

/** The cells of the Markdown table row that starts with `first`. */
function row(md: string, first: string): string[] {
  const line = md.split("\n").find((l) => l.startsWith(`| ${first} |`));
  if (!line) throw new Error(`no row "${first}" in the report`);
  return line.split("|").slice(1, -1).map((c) => c.trim());
}

const num = (cell: string | undefined): number => Number((cell ?? "").replace(/,/g, "").replace(/x$/, ""));

describe("the load test's agents against the real services", () => {
  let out: string | undefined;
  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  // SYS-6's agents in a short form: 10 s a phase runs every part of an agents' run (both phases,
  // their warm-ups, the agents stopped by the time, the report's rows); the runs that measure are
  // `npm run load -- --agents N --seconds S` (docs/load.md).
  it("SYS-6 plays 40 agents with their waits scaled by 0.02 through the in-process pipeline and the passthrough: every awaited answer comes, and the report has the agents' rows", async () => {
    out = await mkdtemp(join(tmpdir(), "oz0-load-agents-"));
    const seconds = 10;
    const started = Date.now();
    const { result, markdown, files } = await runLoad({
      endpoints: endpoints(),
      seconds,
      runtimes: 40,
      agents: { count: 40, thinkScale: 0.02 },
      seed: 5,
      warmUpEvents: 100,
      external: false,
      outDir: out,
      command: `npm run load -- --agents 40 --seconds ${seconds} --think-scale 0.02 --seed 5`,
      progress: false,
      log: createLogger({ test: "load-agents" }, () => {}),
    });
    // Bounded: two warm-ups of 100 events (seconds), two phases of 10 s and their grace, starting the pipeline.
    expect(Date.now() - started).toBeLessThan(240_000);
    for (const [name, p] of [
      ["pipeline", result.pipeline],
      ["passthrough", result.passthrough],
    ] as const) {
      // The agents play until the time is up, and no longer than its grace.
      expect(p.endedAt - p.startedAt, name).toBeGreaterThanOrEqual(seconds * 1000 - 50);
      expect(p.endedAt - p.startedAt, name).toBeLessThan(seconds * 1000 + AGENTS_GRACE_MS + 2_000);
      // Every awaited answer came, none failed.
      expect(MEASURED_KINDS.map((k) => p.rec.unanswered[k]), name).toEqual(MEASURED_KINDS.map(() => 0));
      expect(p.rec.errors, name).toEqual([]);
      expect(p.rec.answers, name).toBeGreaterThan(200);
      // Agents were stopped by the time, not by the plan running out.
      expect(p.rec.events, name).toBeLessThan(result.plan.events);
    }
    expect(result.agents?.count).toBe(40);
    expect(result.agents?.thinkScale).toBe(0.02);
    // Waits scaled by 0.02 offer about 50 times an agent's 0.16 to 0.2 events a second: about
    // 400 events a second from 40 agents, under the pipeline's knee on two shared cores.
    const offered = result.agents?.offered.eventsPerSecond ?? NaN;
    expect(offered).toBeGreaterThan(40 * 5);
    expect(offered).toBeLessThan(40 * 15);

    const md = await readFile(files.markdown, "utf8");
    expect(md).toBe(markdown);
    expect(md).toContain("40 agents, each waiting between steps as agents do (every wait scaled by 0.02)");
    for (const h of ["## Throughput", "### Offered and answered", "## Latency from ask to decision", "## Consumer lag", "## Mix"]) expect(md).toContain(h);
    // offered over the run, offered in the long run, the pipeline's and the passthrough's rates
    const events = row(md, "events");
    const inRun = result.agents?.inRun.eventsPerSecond ?? NaN;
    expect(num(events[1])).toBeCloseTo(inRun, 0);
    expect(num(events[2])).toBeCloseTo(offered, 0);
    // What each phase sent a second, beside what the plan offers over the run: more than
    // nothing, and no more than offered (answers take time, the pipeline refuses some steps;
    // trees may go to agents in another order, hence the margin).
    for (const i of [3, 4]) {
      expect(num(events[i]), events.join(" | ")).toBeGreaterThan(0);
      expect(num(events[i]), events.join(" | ")).toBeLessThan(inRun * 1.1);
    }
    const answers = row(md, "awaited answers");
    for (const i of [1, 2, 3, 4]) expect(num(answers[i]), answers.join(" | ")).toBeGreaterThan(0);
    for (const k of ["model_ask", "tool_call", "tool_result"] as const) {
      const cells = row(md, MEASURED[k].exchange);
      // answers, p50, p95, p99 of the pipeline and the passthrough
      for (const i of [2, 3, 5, 6, 8]) expect(num(cells[i]), `${k} column ${i}: ${cells.join(" | ")}`).toBeGreaterThan(0);
    }
  }, 420_000);
});
