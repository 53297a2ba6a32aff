/** `oz0 ...` run as a person runs it: a process of its own, from the checkout's bin, against the test's services. */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { endpointsEnv } from "../../processors/runner/endpoints.ts";
import { endpoints } from "./kafka.ts";

const run = promisify(execFile);

export interface Ran {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

export function oz0(args: readonly string[], extra: Record<string, string> = {}): Promise<Ran> {
  const env = { ...process.env, ...endpointsEnv(endpoints()), OZ0_LOG_LEVEL: "error", ...extra };
  return run("npx", ["oz0", ...args], { env, timeout: 120_000 }).then(
    (r) => ({ code: 0, out: r.stdout, err: r.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, out: e.stdout ?? "", err: e.stderr ?? "" }),
  );
}
