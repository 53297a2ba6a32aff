/** `oz0 run`'s pure parts: its arguments, durations and budget, the job's events, the command's environment, the outcome and exit status. */
import { describe, expect, it } from "vitest";
import { Exit } from "../../bin/cli.ts";
import { jobFromEnvironment } from "../../bin/oz0-mcp.ts";
import {
  budgetOption,
  childEnv,
  chosenIdProblem,
  DEFAULT_GATEWAY_URL,
  durationOption,
  endedEvent,
  endWords,
  exitStatus,
  gatewayUrl,
  outcomeOf,
  parseRunArgs,
  runJob,
  runTimeout,
  startAnswerOf,
  startedEvent,
  type RunOptions,
} from "../../bin/oz0-run.ts";

function usageOf(f: () => unknown): Exit {
  try {
    f();
  } catch (err) {
    if (err instanceof Exit) return err;
    throw err;
  }
  throw new Error("no usage error");
}

const ENV = { OZ0_OPERATOR: "alice" };

function parsed(argv: string[], env: NodeJS.ProcessEnv = ENV): RunOptions {
  const o = parseRunArgs(argv, env);
  if (o === "help") throw new Error("help");
  return o;
}

describe("oz0 run's arguments", () => {
  it("takes the tenant, the agent, the budget, the timeout, the ID and the person, and the command after --", () => {
    const o = parsed(["--tenant", "acme", "--agent", "acme-reviewer", "--budget", "2.5", "--timeout", "1h30m", "--id", "job-7f3a", "--as", "bob", "--", "node", "agent.js", "--verbose"]);
    expect(o).toEqual({ tenant: "acme", agent: "acme-reviewer", budgetUsd: 2.5, timeoutMs: 5_400_000, id: "job-7f3a", person: "bob", startWaitMs: 30_000, command: ["node", "agent.js", "--verbose"] });
  });

  it("leaves the budget, the timeout and the ID out when not given; the person is OZ0_OPERATOR", () => {
    const o = parsed(["--tenant", "acme", "--agent", "a", "--", "true"]);
    expect(o).toMatchObject({ budgetUsd: null, timeoutMs: null, id: null, person: "alice" });
  });

  it("--help asks for the help", () => {
    expect(parseRunArgs(["--help"], ENV)).toBe("help");
  });

  it("is a usage error (2) without the tenant, the agent or the command, or with the command not after --", () => {
    expect(usageOf(() => parsed(["--agent", "a", "--", "true"])).code).toBe(2);
    expect(usageOf(() => parsed(["--tenant", "t", "--", "true"])).message).toMatch(/--tenant and --agent are required/);
    expect(usageOf(() => parsed(["--tenant", "t", "--agent", "a"])).message).toMatch(/give the command to run after --/);
    expect(usageOf(() => parsed(["--tenant", "t", "--agent", "a", "node", "x.js"])).message).toMatch(/put the command after --/);
    expect(usageOf(() => parsed(["--tenant", "t", "--agent", "a", "--bogus", "--", "true"])).code).toBe(2);
  });

  it("LIM-1 --timeout is a duration above 0 with its unit, as limits.timeout is written", () => {
    expect(durationOption("timeout", "90s")).toBe(90_000);
    expect(durationOption("timeout", "10m")).toBe(600_000);
    expect(usageOf(() => durationOption("timeout", "10")).message).toMatch(/--timeout 10: .*no unit/);
    expect(usageOf(() => durationOption("timeout", "0")).message).toMatch(/above 0/);
    expect(usageOf(() => durationOption("timeout", "-5m")).message).toMatch(/negative/);
    expect(usageOf(() => durationOption("timeout", "5 parsecs")).message).toMatch(/is not a unit/);
  });

  it("LIM-1 --budget is dollars above 0, to the micro-dollar", () => {
    expect(budgetOption("2")).toBe(2);
    expect(budgetOption("$0.25")).toBe(0.25);
    expect(budgetOption("0.000001")).toBe(0.000001);
    for (const bad of ["0", "-1", "two", "", "Infinity"]) expect(usageOf(() => budgetOption(bad)).message).toMatch(/dollars above 0/);
    expect(usageOf(() => budgetOption("0.0000001")).message).toMatch(/micro-dollar/);
  });

  it("FILE-5 --id is held to the project's name rule", () => {
    expect(chosenIdProblem("job-7f3a")).toBeNull();
    expect(chosenIdProblem("a.b_c-1")).toBeNull();
    expect(chosenIdProblem("")).toMatch(/empty/);
    expect(chosenIdProblem("-x")).toMatch(/starting with a letter or digit/);
    expect(chosenIdProblem("a b")).toMatch(/letters, digits and \. _ -/);
    expect(chosenIdProblem("x".repeat(129))).toMatch(/at most 128/);
    expect(usageOf(() => parsed(["--tenant", "t", "--agent", "a", "--id", "a/b", "--", "true"])).code).toBe(2);
  });

  it("--as is checked as an answer's name is", () => {
    expect(usageOf(() => parsed(["--tenant", "t", "--agent", "a", "--as", "a b c", "--", "true"])).message).toMatch(/--as NAME/);
  });
});

describe("oz0 run's gateway URL and the command's environment", () => {
  it("the gateway is OZ0_GATEWAY_URL, else where npm start serves it", () => {
    expect(gatewayUrl({})).toBe(DEFAULT_GATEWAY_URL);
    expect(DEFAULT_GATEWAY_URL).toBe("http://127.0.0.1:8940");
    expect(gatewayUrl({ OZ0_GATEWAY_URL: "https://gw.example:443/" })).toBe("https://gw.example");
    expect(gatewayUrl({ OZ0_GATEWAY_URL: "http://10.0.0.5:9000/oz0/" })).toBe("http://10.0.0.5:9000/oz0");
    expect(usageOf(() => gatewayUrl({ OZ0_GATEWAY_URL: "not a url" })).message).toMatch(/is not a URL/);
    expect(usageOf(() => gatewayUrl({ OZ0_GATEWAY_URL: "ftp://x" })).message).toMatch(/http or https/);
  });

  it("the providers' base URLs point at the gateway with the job's key, and the job is named", () => {
    const job = runJob({ tenant: "acme", agent: "rev", id: "job-1" });
    expect(job).toMatchObject({ tenant: "acme", agent: "rev", job_id: "job-1", tree_id: "job-1" });
    expect(job.run_id).toMatch(/^job-1-run-[0-9a-f]{8}$/);
    const env = childEnv({ PATH: "/bin", OPENAI_API_KEY: "sk-real" }, job, "oz0_k", "http://127.0.0.1:8940");
    expect(env).toMatchObject({
      PATH: "/bin",
      OPENAI_BASE_URL: "http://127.0.0.1:8940/v1",
      OPENAI_API_KEY: "oz0_k",
      ANTHROPIC_BASE_URL: "http://127.0.0.1:8940",
      ANTHROPIC_API_KEY: "oz0_k",
      OZ0_JOB: "job-1",
      OZ0_TENANT: "acme",
      OZ0_AGENT: "rev",
      OZ0_TREE: "job-1",
      OZ0_RUN: job.run_id,
    });
  });

  it("without --id the job gets a new ID, which names its tree", () => {
    const a = runJob({ tenant: "t", agent: "a", id: null });
    const b = runJob({ tenant: "t", agent: "a", id: null });
    expect(a.job_id).toMatch(/^run-/);
    expect(a.tree_id).toBe(a.job_id);
    expect(a.job_id).not.toBe(b.job_id);
  });
});

describe("oz0 run's job events", () => {
  const job = runJob({ tenant: "acme", agent: "rev", id: null });

  it("LIM-1 FILE-5 the start is a root job's, started by a person, with its timeout, budget and whether its ID was chosen", () => {
    const e = startedEvent(job, { person: "alice", timeoutMs: 600_000, budgetUsd: 2, id: null }, 1_000, "e-1");
    expect(e).toMatchObject({ id: "e-1", kind: "started", parent_job_id: null, depth: 0, started_by: "person", principal: "alice", timeout_ms: 600_000, budget_usd: 2, chosen_tree_id: false, session: false, ts: 1_000, job_id: job.job_id, tree_id: job.tree_id, run_id: job.run_id });
    expect(startedEvent(job, { person: "alice", timeoutMs: null, budgetUsd: null, id: job.job_id }, 1_000)).toMatchObject({ chosen_tree_id: true, timeout_ms: null, budget_usd: null });
  });

  it("the end is the start's job with its outcome", () => {
    const s = startedEvent(job, { person: "alice", timeoutMs: null, budgetUsd: null, id: null }, 1_000);
    const e = endedEvent(s, "succeeded", 2_000, "e-2");
    expect(e).toMatchObject({ id: "e-2", kind: "ended", outcome: "succeeded", ts: 2_000, job_id: job.job_id, principal: "alice" });
  });

  it("FILE-5 the pipeline's answer to a start: a refusal, the running job followed, or a go-ahead", () => {
    expect(startAnswerOf({ verdict: "refuse", reason_code: "tree_holds_files", message: "no" })).toEqual({ action: "refuse", code: "tree_holds_files", message: "no" });
    expect(startAnswerOf({ verdict: "allow", reason_code: "follows_running_job", message: "follows" })).toEqual({ action: "follow", message: "follows" });
    expect(startAnswerOf({ verdict: "allow", reason_code: null, message: "" })).toEqual({ action: "start" });
  });

  it("LIM-1 the timeout is whichever of --timeout and the agent's limits.timeout ends first", () => {
    expect(runTimeout(undefined, null)).toBeNull();
    expect(runTimeout(undefined, 60_000)).toEqual({ ms: 60_000, limit: "run --timeout" });
    expect(runTimeout({ limits: { timeout: 30_000, tree: {} } }, 60_000)).toEqual({ ms: 30_000, limit: "limits.timeout" });
    expect(runTimeout({ limits: { timeout: 120_000, tree: {} } }, 60_000)).toEqual({ ms: 60_000, limit: "run --timeout" });
    expect(runTimeout({ limits: { timeout: 120_000, tree: {} } }, null)).toEqual({ ms: 120_000, limit: "limits.timeout" });
    expect(runTimeout({ limits: { timeout: "none", tree: {} } }, null)).toBeNull();
  });
});

describe("oz0 run's outcome and exit status", () => {
  const exit = (code: number) => ({ code, signal: null }) as const;
  const killed = (signal: NodeJS.Signals) => ({ code: null, signal }) as const;

  it("exit 0 succeeded, another status failed; never unknown (LIM-11)", () => {
    expect(outcomeOf({ end: exit(0), timedOut: false, interrupted: null, ending: null })).toBe("succeeded");
    expect(outcomeOf({ end: exit(3), timedOut: false, interrupted: null, ending: null })).toBe("failed");
    expect(outcomeOf({ end: killed("SIGSEGV"), timedOut: false, interrupted: null, ending: null })).toBe("failed");
  });

  it("LIM-1 past its timeout the job fails with AgentTimeout, whatever the command's status", () => {
    expect(outcomeOf({ end: killed("SIGTERM"), timedOut: true, interrupted: null, ending: null })).toBe("AgentTimeout");
    expect(outcomeOf({ end: exit(0), timedOut: true, interrupted: null, ending: { code: "BudgetExceeded" } })).toBe("AgentTimeout");
  });

  it("LIM-2 LIM-7 the ending the pipeline gave the job is its outcome, even when the command exits 0", () => {
    expect(outcomeOf({ end: exit(0), timedOut: false, interrupted: null, ending: { code: "BudgetExceeded" } })).toBe("BudgetExceeded");
    expect(outcomeOf({ end: exit(1), timedOut: false, interrupted: null, ending: { code: "oz0_tree_limit" } })).toBe("TreeLimitExceeded");
    expect(outcomeOf({ end: exit(0), timedOut: false, interrupted: null, ending: { code: "JobEnded" } })).toBe("succeeded");
  });

  it("a person's SIGINT or SIGTERM passed on: cancelled", () => {
    expect(outcomeOf({ end: killed("SIGINT"), timedOut: false, interrupted: "SIGINT", ending: null })).toBe("cancelled");
    expect(outcomeOf({ end: exit(0), timedOut: false, interrupted: "SIGTERM", ending: null })).toBe("cancelled");
  });

  it("the exit status is the command's, or 128 + the signal's number as shells give it", () => {
    expect(exitStatus(exit(0))).toBe(0);
    expect(exitStatus(exit(42))).toBe(42);
    expect(exitStatus(killed("SIGTERM"))).toBe(143);
    expect(exitStatus(killed("SIGKILL"))).toBe(137);
    expect(exitStatus(killed("SIGINT"))).toBe(130);
  });

  it("says why the job ended: the timeout and its limit, the pipeline's ending, the signal", () => {
    const job = runJob({ tenant: "t", agent: "a", id: "j1" });
    const t = endWords(job, { outcome: "AgentTimeout", end: killed("SIGTERM"), timeout: { ms: 2_000, limit: "run --timeout" }, ending: null, interrupted: null, stopped: "SIGTERM" });
    expect(t).toMatch(/job j1 ran past its 2s \(run --timeout\): it fails with AgentTimeout, and the command was stopped \(SIGTERM\)/);
    expect(t).toMatch(/ended by SIGTERM: exit status 143/);
    expect(endWords(job, { outcome: "BudgetExceeded", end: exit(1), timeout: null, ending: { code: "BudgetExceeded", message: "The call would pass the tree's budget." }, interrupted: null, stopped: null })).toBe("oz0 run: job j1 ended with BudgetExceeded: The call would pass the tree's budget.\n");
    expect(endWords(job, { outcome: "failed", end: exit(1), timeout: null, ending: null, interrupted: null, stopped: null })).toBe("");
  });
});

describe("oz0 mcp joins the job oz0 run started", () => {
  const env = { OZ0_JOB: "j1", OZ0_TENANT: "acme", OZ0_AGENT: "rev", OZ0_TREE: "j1", OZ0_RUN: "j1-run-1" };

  it("takes what its flags leave out from OZ0_JOB, OZ0_TENANT, OZ0_AGENT, OZ0_TREE and OZ0_RUN", () => {
    expect(jobFromEnvironment({}, env)).toEqual({ tenant: "acme", agent: "rev", job: "j1", tree: "j1", run: "j1-run-1" });
  });

  it("flags win, each on its own; a tree and run are taken only with the job they belong to", () => {
    expect(jobFromEnvironment({ tenant: "other", run: "r2" }, env)).toEqual({ tenant: "other", agent: "rev", job: "j1", tree: "j1", run: "r2" });
    expect(jobFromEnvironment({ job: "j9" }, env)).toEqual({ tenant: "acme", agent: "rev", job: "j9", tree: undefined, run: undefined });
    expect(jobFromEnvironment({}, { OZ0_TREE: "t", OZ0_RUN: "r" })).toEqual({ tenant: undefined, agent: undefined, job: undefined, tree: undefined, run: undefined });
  });

  it("with --listen each session is a run of its own: OZ0_RUN is not taken", () => {
    expect(jobFromEnvironment({ listen: "8930" }, env)).toMatchObject({ job: "j1", tree: "j1", run: undefined });
  });
});
