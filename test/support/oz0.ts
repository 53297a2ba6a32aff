/**
 * `oz0 ...` run as a person runs it: a process of its own, from the checkout's bin, against the
 * test's services. `oz0` starts the package's bin (bin/oz0.mjs) with node, which is what `npx
 * oz0` resolves to and runs, without npm's own start (about 2 s a call on this machine, where the
 * suites run the command more than a hundred times); `oz0ViaNpx` goes through npx, for the test
 * that holds the README's `npx oz0` to working.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { endpointsEnv } from "../../processors/runner/endpoints.ts";
import { endpoints } from "./kafka.ts";

const run = promisify(execFile);
const BIN = fileURLToPath(new URL("../../bin/oz0.mjs", import.meta.url));

export interface Ran {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

function ran(file: string, args: readonly string[], extra: Record<string, string>): Promise<Ran> {
  const env = { ...process.env, ...endpointsEnv(endpoints()), OZ0_LOG_LEVEL: "error", ...extra };
  return run(file, args, { env, timeout: 120_000 }).then(
    (r) => ({ code: 0, out: r.stdout, err: r.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, out: e.stdout ?? "", err: e.stderr ?? "" }),
  );
}

export function oz0(args: readonly string[], extra: Record<string, string> = {}): Promise<Ran> {
  return ran(process.execPath, [BIN, ...args], extra);
}

/** `npx oz0 ...`, as the README has it: the package's bin found by npm. */
export function oz0ViaNpx(args: readonly string[], extra: Record<string, string> = {}): Promise<Ran> {
  return ran("npx", ["oz0", ...args], extra);
}
