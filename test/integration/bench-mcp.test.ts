import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { endpointsEnv } from "../../processors/runner/endpoints.ts";
import { endpoints } from "../support/kafka.ts";

const run = promisify(execFile);

describe("the MCP gateway's benchmark against the real services", () => {
  let dir: string | undefined;
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("SYS-2 calls server-everything through oz0 mcp and directly, side by side, at each number in flight, and reports both with their ratio", async () => {
    dir = await mkdtemp(join(tmpdir(), "oz0-bench-mcp-"));
    const out = join(dir, "mcp.md");
    const env = { ...process.env, ...endpointsEnv(endpoints()), OZ0_LOG_LEVEL: "error" };
    // Exit 0 only when every call through the gateway echoed its own message.
    const { stdout } = await run("npx", ["tsx", "bench/mcp/run.ts", "--calls", "10", "--rounds", "1", "--flight", "1,4", "--out", out], { env, timeout: 300_000 });
    const md = await readFile(out, "utf8");
    expect(stdout).toContain(md.trim());
    const rows = md
      .split("\n")
      .filter((l) => /^\| \d+ \|/.test(l))
      .map((l) => l.split("|").slice(1, -1).map((c) => c.trim()));
    expect(rows.map((r) => r[0])).toEqual(["1", "4"]);
    for (const r of rows) {
      const [directP50, , gatewayP50] = r.slice(1, 4).map(Number);
      expect(directP50).toBeGreaterThanOrEqual(0);
      // Through the gateway a call waits for two answers of the pipeline: never quicker than directly.
      expect(gatewayP50).toBeGreaterThan(directP50 as number);
      expect(r[5]).toMatch(/^[\d,.]+x$/);
    }
  }, 360_000);
});
