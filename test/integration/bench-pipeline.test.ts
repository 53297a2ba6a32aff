import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { endpointsEnv } from "../../processors/runner/endpoints.ts";
import { endpoints } from "../support/kafka.ts";

const run = promisify(execFile);

/** The cells of each Markdown table row whose first cell is `first`. */
function rows(md: string, first: string): string[][] {
  return md
    .split("\n")
    .filter((l) => l.startsWith(`| ${first} |`))
    .map((l) => l.split("|").slice(1, -1).map((c) => c.trim()));
}

const num = (cell: string | undefined): number => Number((cell ?? "").replace(/,/g, ""));

describe("the pipeline benchmark against the real services", () => {
  let dir: string | undefined;
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("SYS-3 SYS-6 runs loop-calls beside the passthroughs on a small bounded backlog, with its output reader in a thread of its own, and reports every subject", async () => {
    dir = await mkdtemp(join(tmpdir(), "oz0-bench-"));
    const out = join(dir, "pipeline.md");
    const env = { ...process.env, ...endpointsEnv(endpoints()), OZ0_LOG_LEVEL: "error" };
    const args = ["tsx", "bench/pipeline/run.ts", "--only", "loops", "--events", "400", "--results", "100", "--seconds", "60", "--rate", "20", "--latency-seconds", "1", "--out", out];
    // Exit 0 only when every subject answered its whole backlog in time.
    const { stdout, stderr } = await run("npx", args, { env, timeout: 300_000 });
    const md = await readFile(out, "utf8");
    expect(stdout).toContain(md.trim());
    const measured = rows(md, "oz0.tool-calls");
    expect(measured.map((r) => r[1])).toEqual(["passthrough", "passthrough-txn", "runner-identity", "loop-calls"]);
    for (const r of measured) {
      // events, answers (every call is answered), events/s, and the ratio to the passthrough.
      expect(num(r[2]), r[1]).toBe(400);
      expect(num(r[3]), r[1]).toBe(400);
      expect(num(r[5]), r[1]).toBeGreaterThan(0);
      expect(num(r[6]), r[1]).toBeGreaterThan(0);
      // Nothing dead-lettered: the bench's events are all valid.
      expect(num(r[10]), r[1]).toBe(0);
      // CPU per input over the window: the machine's (Linux) and this process's are spent; Redis's is read.
      expect(num(r[12]), r[1]).toBeGreaterThan(0);
      expect(num(r[13]), r[1]).toBeGreaterThan(0);
      expect(num(r[14]), r[1]).toBeGreaterThanOrEqual(0);
    }
    expect(num(measured[0]?.[6])).toBe(1);
    expect(md).toMatch(/- loop-calls: [\d,]+ inputs\/s \(400 decisions\) against [\d,]+\/s for the bare passthrough: [\d.]+x, (meets|misses) the aim[^\n]* Machine CPU per input: [\d,]+ µs against the passthrough's [\d,]+ µs \([\d.]+x; half the throughput allows 2x on busy cores\); runner-identity's [\d,]+ µs \([\d.]+x\), with this processor's Redis server time [\d,]+ µs \([\d.]+x\) before its own work\./);
    expect(stderr).toMatch(/cleaned up: \d+ topics, \d+ Redis keys under bench_/);
  }, 330_000);
});
