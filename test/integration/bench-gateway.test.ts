import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { endpointsEnv } from "../../processors/runner/endpoints.ts";
import { endpoints } from "../support/kafka.ts";

const run = promisify(execFile);

/** The rows of the table whose header starts with `first`: its cells, trimmed. */
function table(md: string, first: string): string[][] {
  const lines = md.split("\n");
  const at = lines.findIndex((l) => l.startsWith(`| ${first}`));
  const rows: string[][] = [];
  for (let i = at + 2; at >= 0 && i < lines.length && lines[i]?.startsWith("|"); i++) rows.push((lines[i] as string).split("|").slice(1, -1).map((c) => c.trim()));
  return rows;
}

describe("the model gateway's benchmark against the real services", () => {
  let dir: string | undefined;
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("SYS-7 calls the fake provider through oz0 gateway and directly with the official SDKs, side by side, and reports both with what the gateway adds", async () => {
    dir = await mkdtemp(join(tmpdir(), "oz0-bench-gateway-"));
    const out = join(dir, "gateway.md");
    const env = { ...process.env, ...endpointsEnv(endpoints()), OZ0_LOG_LEVEL: "error" };
    // Exit 0 only when every call through the gateway was answered with the upstream's own text.
    const { stdout } = await run("npx", ["tsx", "bench/gateway/run.ts", "--calls", "5", "--rounds", "1", "--flight", "1,4", "--max-seconds", "240", "--out", out], { env, timeout: 300_000 });
    const md = await readFile(out, "utf8");
    expect(stdout).toContain(md.trim());
    const rows = table(md, "provider | measured | in flight | direct");
    expect(rows.map((r) => `${r[0]} ${r[1]} ${r[2]}`)).toEqual([
      "openai whole answer 1",
      "openai whole answer 4",
      "openai first token (streamed) 1",
      "anthropic whole answer 1",
      "anthropic whole answer 4",
      "anthropic first token (streamed) 1",
    ]);
    for (const r of rows) {
      const [directP50, , gatewayP50] = r.slice(3, 6).map((c) => Number(c.replace(/,/g, "")));
      expect(directP50).toBeGreaterThanOrEqual(0);
      // One at a time, a call through the gateway waits for the pipeline's decision first: never quicker than directly.
      if (r[2] === "1") expect(gatewayP50).toBeGreaterThan(directP50 as number);
      expect(r[9]).toMatch(/^[\d,.]+x$/);
    }
    const inside = table(md, "provider | measured | in flight | key");
    expect(inside).toHaveLength(6);
    // Each call's key looked up, and its decision asked of the pipeline.
    for (const r of inside) expect([Number(r[3]), Number(r[4])].every((ms) => ms > 0)).toBe(true);
  }, 360_000);
});
