/**
 * The local stack from TypeScript: its endpoints (as `stack/env.sh` derives them from the
 * port variables), whether it answers, and bringing it up or down with its own scripts.
 */
import { execFileSync, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { endpointsFromEnv, type Endpoints } from "../processors/runner/endpoints.ts";

export const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** The OZ0_* endpoint variables of the local stack, honouring port overrides. */
export function localStackEnv(): Record<string, string> {
  const out = execFileSync("bash", ["stack/env.sh"], { cwd: ROOT, encoding: "utf8" });
  const env: Record<string, string> = {};
  for (const line of out.split("\n")) {
    const m = /^(OZ0_[A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m) env[m[1] as string] = (m[2] as string).replace(/^"(.*)"$/, "$1");
  }
  return env;
}

export function localStackEndpoints(): Endpoints {
  return endpointsFromEnv({ ...process.env, ...localStackEnv() });
}

/** Runs `stack/<name>.sh`, with `env` added to this process's; its output goes to this process's stderr when `show` is set. */
export function stackScript(name: "up" | "down" | "status", show: boolean, args: string[] = [], env: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [`stack/${name}.sh`, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: show ? ["ignore", process.stderr, process.stderr] : "ignore" });
    child.on("error", reject);
    child.on("exit", (code) => resolve(code ?? 1));
  });
}

export interface LocalStack {
  endpoints: Endpoints;
  /** Whether it was already running before this call. */
  wasRunning: boolean;
}

/** Brings the local stack up when it does not answer yet; fails saying where to look. */
export async function ensureLocalStack(): Promise<LocalStack> {
  const wasRunning = (await stackScript("status", false)) === 0;
  if (!wasRunning) {
    process.stderr.write("starting the local stack (bash stack/up.sh); a fresh machine downloads and builds for some minutes\n");
    const code = await stackScript("up", true);
    if (code !== 0) throw new Error("`bash stack/up.sh` failed: its output above names the service, the reason and the log");
  }
  return { endpoints: localStackEndpoints(), wasRunning };
}
