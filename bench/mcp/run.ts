/**
 * The MCP gateway's overhead: `tools/call` latency through `oz0 mcp` (the call decided by the
 * pipeline, the result delivered by it) against the same server called directly, side by side
 * in one run, at 1 call in flight and at 16. The server is the reference server-everything's
 * `echo`, each call with its own message; the pipeline of `npm start` runs in this process on
 * groups of its own, and the gateway is a process of its own, as an MCP client starts it.
 *
 *   npx tsx bench/mcp/run.ts [--calls 200] [--rounds 3] [--flight 1,16] [--out FILE]
 *
 * Rounds alternate the two sides, so the machine's noise falls on both. Writes the table to
 * stdout and bench/out/mcp.md (or --out).
 */
import { randomUUID } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import kafkajs from "kafkajs";
import { startPipeline } from "../../topology/run.ts";
import { servicesForCommand } from "../../topology/services.ts";
import { endpointsEnv, kafkaConfig } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { Serde } from "../../schemas/serde.ts";
import { publishLoadConfig } from "../load/publish-config.ts";
import { untilReady } from "../load/run.ts";
import { fmt, latency, ratio, type Latency } from "../load/stats.ts";

const { values } = parseArgs({ options: { calls: { type: "string", default: "200" }, rounds: { type: "string", default: "3" }, flight: { type: "string", default: "1,16" }, out: { type: "string" } } });
const CALLS = Number(values.calls);
const ROUNDS = Number(values.rounds);
const FLIGHTS = values.flight.split(",").map(Number);
if (!(CALLS > 0 && ROUNDS > 0 && FLIGHTS.every((f) => Number.isInteger(f) && f > 0))) {
  process.stderr.write("usage: npx tsx bench/mcp/run.ts [--calls N] [--rounds N] [--flight 1,16] [--out FILE]: whole numbers above 0\n");
  process.exit(2);
}
const CONFIG_DIR = fileURLToPath(new URL("./config/", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SERVER = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js");

/** `calls` echo calls, `flight` at a time; the wall time of each. */
async function play(client: Client, calls: number, flight: number, tag: string): Promise<number[]> {
  const times: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < calls) {
      const i = next++;
      const t0 = performance.now();
      const r = (await client.callTool({ name: "echo", arguments: { message: `${tag}-${i}` } }, undefined, { timeout: 120_000 })) as { isError?: boolean; content: Array<{ text?: string }> };
      if (r.isError || !JSON.stringify(r.content).includes(`${tag}-${i}`)) throw new Error(`call ${i} of ${tag} did not echo: ${JSON.stringify(r).slice(0, 400)}`);
      times.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: flight }, worker));
  return times;
}

async function main(): Promise<void> {
  const log = createLogger({ bench: "mcp" }, () => {});
  const e = await servicesForCommand();
  const run = randomUUID().slice(0, 8);
  const kafka = new kafkajs.Kafka({ ...kafkaConfig(`oz0-bench-mcp-${run}`, e, process.env, log), logLevel: kafkajs.logLevel.ERROR });
  const serde = new Serde({ registryUrl: e.registryUrl });
  await serde.registerAll();
  await publishLoadConfig(kafka, serde, log, { dir: CONFIG_DIR, reason: "the MCP gateway's bench" });
  const pipeline = await startPipeline(e, log, { ops: { host: "127.0.0.1", port: 0 }, groupPrefix: `oz0.bench-mcp-${run}.`, startAt: "end", retention: "off" });
  await untilReady(pipeline, 120_000);

  const direct = new Client({ name: "bench-direct", version: "1" });
  await direct.connect(new StdioClientTransport({ command: "node", args: [SERVER, "stdio"], stderr: "ignore" }));
  const gateway = new Client({ name: "bench-gateway", version: "1" });
  await gateway.connect(
    new StdioClientTransport({
      command: "npx",
      args: ["tsx", "bin/oz0.ts", "mcp", "--plugin", `${CONFIG_DIR}plugins/bench_everything.yaml`, "--tenant", `bench-mcp-${run}`, "--agent", "bench-mcp", "--", "node", SERVER, "stdio"],
      cwd: ROOT,
      env: { ...(process.env as Record<string, string>), ...endpointsEnv(e), OZ0_LOG_LEVEL: "warn" },
      stderr: "inherit",
    }),
    { timeout: 120_000 },
  );

  const rows: Array<{ flight: number; direct: Latency; gateway: Latency }> = [];
  try {
    // A warm-up on each side: the first calls pay for connections and compilation.
    await play(direct, 20, 1, "warm-direct");
    await play(gateway, 20, 1, "warm-gateway");
    for (const flight of FLIGHTS) {
      const d: number[] = [];
      const g: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        d.push(...(await play(direct, CALLS, flight, `d${flight}-${r}`)));
        g.push(...(await play(gateway, CALLS, flight, `g${flight}-${r}`)));
      }
      rows.push({ flight, direct: latency(d), gateway: latency(g) });
    }
  } finally {
    await Promise.allSettled([direct.close(), gateway.close()]);
    await pipeline.stop().catch(() => undefined);
    const admin = pipeline.kafka.admin();
    await admin.connect().then(() => admin.deleteGroups([...pipeline.groups.values()]).catch(() => undefined), () => undefined);
    await admin.disconnect().catch(() => undefined);
  }

  const lines = [
    `# MCP gateway: tools/call through oz0 mcp against the server directly`,
    "",
    `server-everything's echo; ${CALLS} calls a round, ${ROUNDS} rounds a side, alternating; ${new Date().toISOString()}`,
    "",
    "| in flight | direct p50 (ms) | direct p99 (ms) | gateway p50 (ms) | gateway p99 (ms) | p50 ratio | p99 ratio |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map((r) => `| ${r.flight} | ${fmt(r.direct.p50, 1)} | ${fmt(r.direct.p99, 1)} | ${fmt(r.gateway.p50, 1)} | ${fmt(r.gateway.p99, 1)} | ${ratio(r.gateway.p50, r.direct.p50)} | ${ratio(r.gateway.p99, r.direct.p99)} |`),
    "",
  ];
  const text = lines.join("\n");
  process.stdout.write(text);
  await writeFile(values.out ?? fileURLToPath(new URL("../out/mcp.md", import.meta.url)), text);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench/mcp: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
