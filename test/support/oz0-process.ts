/**
 * A long-running `oz0 ...` (such as `oz0 mcp --listen`) as a process group of its own: node runs
 * bin/oz0.ts with tsx's loader directly (no npx in between), so what is signalled is oz0 and
 * every child it started (an MCP server behind the gateway). `stop` sends SIGTERM to the whole
 * group, waits for oz0 to exit within a bound, then SIGKILLs whatever of the group is left.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface Oz0Process {
  readonly child: ChildProcess;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  /** Resolves once stderr holds `text`; rejects after `timeoutMs`, or when it exits first, with what it said. */
  said(text: string, timeoutMs: number): Promise<void>;
  /** Its exit: the code, or the signal that ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /**
   * SIGTERM to its group; after `graceMs` without oz0 exiting, SIGKILL to the group. Any of the
   * group still alive once oz0 exited is SIGKILLed too. Resolves with how it ended.
   */
  stop(graceMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; killed: boolean }>;
  /** Whether any process of its group (oz0, or what it started) is alive. */
  groupAlive(): boolean;
}

/** Whether any process of the group `pgid` is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // The group is gone.
  }
}

/** Starts `oz0 <args>` from the checkout, in a process group of its own, stdout ignored, stderr kept. */
export function startOz0(args: readonly string[], env: NodeJS.ProcessEnv): Oz0Process {
  const child = spawn(process.execPath, ["--import", "tsx", "bin/oz0.ts", ...args], { cwd: ROOT, env, stdio: ["ignore", "ignore", "pipe"], detached: true });
  const pgid = child.pid;
  if (pgid === undefined) throw new Error(`oz0 ${args.join(" ")} did not start`);
  let stderr = "";
  child.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  let over = false;
  void exited.then(() => (over = true));

  const said = async (text: string, timeoutMs: number): Promise<void> => {
    const end = Date.now() + timeoutMs;
    while (!stderr.includes(text)) {
      if (over) throw new Error(`oz0 ${args[0] ?? ""} exited before it said "${text}"; it said: ${stderr.slice(-3000)}`);
      if (Date.now() > end) throw new Error(`oz0 ${args[0] ?? ""} did not say "${text}" within ${timeoutMs} ms; it said: ${stderr.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  const stop = async (graceMs = 15_000): Promise<{ code: number | null; signal: NodeJS.Signals | null; killed: boolean }> => {
    signalGroup(pgid, "SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([exited.then(() => true), new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), graceMs)))]);
    clearTimeout(timer);
    if (!inTime) signalGroup(pgid, "SIGKILL");
    const end = await exited;
    // What oz0 started and left behind goes with it.
    for (let waited = 0; groupAlive(pgid) && waited < 2_000; waited += 100) {
      if (waited === 1_000) signalGroup(pgid, "SIGKILL");
      await new Promise((r) => setTimeout(r, 100));
    }
    signalGroup(pgid, "SIGKILL");
    return { ...end, killed: !inTime };
  };

  return { child, stderr: () => stderr, said, exited, stop, groupAlive: () => groupAlive(pgid) };
}
