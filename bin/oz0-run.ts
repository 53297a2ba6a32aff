/**
 * `oz0 run`: a job around any agent. It publishes the job's start (as a person started it, with
 * `--timeout`, `--budget` and a chosen `--id` under FILE-5's rules), waits until the pipeline
 * took the start (a refusal is printed and exits 1), binds a key of the project's to the job,
 * and runs the command with the model providers' base URLs pointing at the model gateway and
 * that key as their API key, and `OZ0_JOB` (with the tenant, agent, tree and run) so an
 * `oz0 mcp` the agent starts joins the same job. When the command exits the job ends with its
 * outcome and the key is revoked; past its timeout the command is stopped and the job fails
 * with AgentTimeout. The exit status is the command's.
 *
 * The pure parts (arguments, durations, the environment, the events, the outcome) are exported
 * for unit tests; `runCommand` is the command.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { constants } from "node:os";
import kafkajs from "kafkajs";
import type { AgentDefinition } from "../config/agent.ts";
import { ID_PATTERN } from "../config/fields.ts";
import { tryParseDuration, formatDuration } from "../config/units.ts";
import type { KeyStore } from "../client/gateway/store.ts";
import { NoAnswer, RuntimeClient } from "../client/runtime-client.ts";
import { filesState } from "../processors/files/env.ts";
import type { FilesStore } from "../processors/files/store.ts";
import { jobTimeout, type TimeoutLimit } from "../processors/limits/job-timeout.ts";
import { redisStandingStore } from "../processors/limits/redis-store.ts";
import { standingOf, type Ending } from "../processors/limits/standing.ts";
import { ConfigTable } from "../processors/runner/config-table.ts";
import { kafkaConfig } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import { Serde } from "../schemas/serde.ts";
import type { Decision, JobEvent } from "../schemas/types.ts";
import { redisKeyStore } from "../client/gateway/redis-store.ts";
import { redisClient } from "../store/redis/client.ts";
import { Keys } from "../store/redis/keys.ts";
import { Exit, parse, person, usage } from "./cli.ts";
import { servicesForCommand } from "../topology/services.ts";

export const RUN_HELP = `oz0 run --tenant T --agent A [--budget USD] [--timeout 10m] [--id J] [--as PERSON] [--start-wait 30s] -- <command...>

Starts a job of agent A for tenant T, as the person --as (else OZ0_OPERATOR, else the login
name) started it, and runs the command in it. The command gets the model gateway as its
providers' base URL and a key of the job's own as their API key:

  OPENAI_BASE_URL=<gateway>/v1   OPENAI_API_KEY=<key>
  ANTHROPIC_BASE_URL=<gateway>   ANTHROPIC_API_KEY=<key>
  OZ0_JOB, OZ0_TENANT, OZ0_AGENT, OZ0_TREE, OZ0_RUN   (an oz0 mcp it starts joins the job)

<gateway> is OZ0_GATEWAY_URL, else http://127.0.0.1:8940 (where npm start serves it). The key is
bound to the job, expires at its timeout (else in 24 h) and is revoked when the job ends.

  --tenant T        the tenant (required)
  --agent A         the agent definition the job runs under (required)
  --budget USD      the tree's budget instead of the agent's limits.max_cost_usd (LIM-1)
  --timeout D       a timeout on top of the agent's limits.timeout, such as 90s, 10m or 1h30m;
                    whichever ends first stops the command and fails the job with AgentTimeout
  --id J            the job's ID, which names its tree (FILE-5): refused while the tree J has
                    ended and still holds files, or when J is a conversation's turn; while J's
                    job runs, the command joins it (and does not end it)
  --as PERSON       who starts it (the job's principal; quotas are theirs, LIM-10)
  --start-wait D    how long to wait for the pipeline to take the start (default 30s)

The job ends when the command exits: succeeded (exit 0), failed (another status), AgentTimeout
(past its timeout), cancelled (oz0 run was sent SIGINT or SIGTERM, which it passes on), or the
ending the pipeline gave it (BudgetExceeded, TreeLimitExceeded, UsageLimitExceeded, ...). The exit
status is the command's (128 + the signal's number when a signal ended it); 1 when the start was
refused or the pipeline did not take it; 2 for a usage error.

Example:
  oz0 run --tenant acme --agent acme-reviewer --budget 2 --timeout 10m -- python review.py
`;

/** Where `npm start` serves the model gateway. */
export const DEFAULT_GATEWAY_URL = "http://127.0.0.1:8940";
/** A key's life when neither --timeout nor the agent's limits.timeout bounds the job. */
export const DEFAULT_KEY_MS = 24 * 3600 * 1000;
/** How long a command stopped with SIGTERM has before SIGKILL. */
export const STOP_GRACE_MS = 10_000;
const DEFAULT_START_WAIT_MS = 30_000;

export interface RunOptions {
  readonly tenant: string;
  readonly agent: string;
  readonly budgetUsd: number | null;
  readonly timeoutMs: number | null;
  readonly id: string | null;
  readonly person: string;
  readonly startWaitMs: number;
  readonly command: readonly string[];
}

const OPTIONS = {
  tenant: { type: "string" },
  agent: { type: "string" },
  budget: { type: "string" },
  timeout: { type: "string" },
  id: { type: "string" },
  as: { type: "string" },
  "start-wait": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** A duration flag's milliseconds, above 0. */
export function durationOption(flag: string, text: string): number {
  const r = tryParseDuration(text);
  if (!r.ok) throw usage(`--${flag} ${text}: ${r.reason}\n`);
  if (r.value <= 0) throw usage(`--${flag} ${text}: give a duration above 0, such as 90s, 10m or 1h30m\n`);
  return r.value;
}

/** --budget: dollars above 0, at most to the micro-dollar the pipeline counts in. */
export function budgetOption(text: string): number {
  const usd = Number(text.trim().replace(/^\$/, ""));
  if (text.trim() === "" || !Number.isFinite(usd) || usd <= 0) throw usage(`--budget ${text}: give dollars above 0, such as 2 or 0.5\n`);
  if (Math.round(usd * 1e6) / 1e6 !== usd) throw usage(`--budget ${text}: the pipeline counts to the micro-dollar (6 decimals)\n`);
  return usd;
}

/**
 * FILE-5: a chosen ID names the job and its tree. The pipeline takes any non-empty ID; the
 * command holds it to the project's name rule (letters, digits and . _ -, starting with a
 * letter or digit, at most 128), so it is safe in an environment variable, a key's binding and
 * a shell line alike.
 */
export function chosenIdProblem(id: string): string | null {
  if (id === "") return "--id is empty: give the job's ID, or leave --id out for a new one";
  if (!ID_PATTERN.test(id)) return `--id ${JSON.stringify(id)}: a job's ID holds letters, digits and . _ -, starting with a letter or digit, at most 128 characters`;
  return null;
}

/** The command's arguments: its own before `--`, the command after. */
export function parseRunArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): RunOptions | "help" {
  const split = argv.indexOf("--");
  const own = split < 0 ? [...argv] : argv.slice(0, split);
  const command = split < 0 ? [] : argv.slice(split + 1);
  const { values, positionals } = parse(RUN_HELP, own, OPTIONS);
  if (values.help) return "help";
  if (positionals.length > 0) throw usage(`oz0 run: put the command after --, as in oz0 run --tenant T --agent A -- ${positionals.join(" ")}\n\n${RUN_HELP}`);
  if (!values.tenant || !values.agent) throw usage(`--tenant and --agent are required\n\n${RUN_HELP}`);
  if (command.length === 0 || command[0] === "") throw usage(`give the command to run after --\n\n${RUN_HELP}`);
  if (values.id !== undefined) {
    const why = chosenIdProblem(values.id);
    if (why) throw usage(`${why}\n`);
  }
  return {
    tenant: values.tenant,
    agent: values.agent,
    budgetUsd: values.budget === undefined ? null : budgetOption(values.budget),
    timeoutMs: values.timeout === undefined ? null : durationOption("timeout", values.timeout),
    id: values.id ?? null,
    // --as, else OZ0_OPERATOR (of the environment given), else the login name.
    person: person(values.as ?? env.OZ0_OPERATOR),
    startWaitMs: values["start-wait"] === undefined ? DEFAULT_START_WAIT_MS : durationOption("start-wait", values["start-wait"]),
    command,
  };
}

/** OZ0_GATEWAY_URL, else where npm start serves the gateway; without a trailing slash. */
export function gatewayUrl(env: NodeJS.ProcessEnv = process.env): string {
  const given = env.OZ0_GATEWAY_URL?.trim();
  const text = given ? given : DEFAULT_GATEWAY_URL;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw usage(`OZ0_GATEWAY_URL=${text} is not a URL: give the gateway's, such as ${DEFAULT_GATEWAY_URL}\n`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw usage(`OZ0_GATEWAY_URL=${text}: the gateway is reached over http or https\n`);
  return url.href.replace(/\/+$/, "");
}

/** The job's IDs: --id names the job and its tree (FILE-5), else a new one does. */
export interface RunJob {
  readonly tenant: string;
  readonly agent: string;
  readonly tree_id: string;
  readonly job_id: string;
  readonly run_id: string;
}

export function runJob(o: Pick<RunOptions, "tenant" | "agent" | "id">, newId: () => string = () => `run-${randomUUID()}`): RunJob {
  const job = o.id ?? newId();
  return { tenant: o.tenant, agent: o.agent, tree_id: job, job_id: job, run_id: `${job}-run-${randomUUID().slice(0, 8)}` };
}

/** The command's environment: the gateway as both providers' base URL, the job's key as their API key, and the job. */
export function childEnv(base: NodeJS.ProcessEnv, job: RunJob, key: string, gateway: string): NodeJS.ProcessEnv {
  return {
    ...base,
    OPENAI_BASE_URL: `${gateway}/v1`,
    OPENAI_API_KEY: key,
    ANTHROPIC_BASE_URL: gateway,
    ANTHROPIC_API_KEY: key,
    OZ0_GATEWAY_URL: gateway,
    OZ0_JOB: job.job_id,
    OZ0_TENANT: job.tenant,
    OZ0_AGENT: job.agent,
    OZ0_TREE: job.tree_id,
    OZ0_RUN: job.run_id,
  };
}

/** The root job's start as a person started it (LIM-1's --timeout and --budget, FILE-5's chosen ID). */
export function startedEvent(job: RunJob, o: Pick<RunOptions, "person" | "timeoutMs" | "budgetUsd" | "id">, now: number, id: string = randomUUID()): JobEvent {
  return {
    id,
    tenant: job.tenant,
    tree_id: job.tree_id,
    job_id: job.job_id,
    parent_job_id: null,
    run_id: job.run_id,
    agent: job.agent,
    kind: "started",
    started_by: "person",
    delegation: "none",
    depth: 0,
    outcome: null,
    principal: o.person,
    team: null,
    permissions: [],
    files: [],
    chosen_tree_id: o.id !== null,
    conversation_id: null,
    previous_turn: null,
    timeout_ms: o.timeoutMs,
    budget_usd: o.budgetUsd,
    session: false,
    ts: now,
  };
}

export function endedEvent(start: JobEvent, outcome: string, now: number, id: string = randomUUID()): JobEvent {
  return { ...start, id, kind: "ended", outcome, ts: now };
}

/** What the pipeline answered to the start. */
export type StartAnswer = { readonly action: "start" } | { readonly action: "follow"; readonly message: string } | { readonly action: "refuse"; readonly code: string; readonly message: string };

/** A decision addressed to the start (files-jobs' FILE-4/FILE-5 rules): a refusal, the running job followed, or a go-ahead. */
export function startAnswerOf(d: Pick<Decision, "verdict" | "reason_code" | "message">): StartAnswer {
  if (d.verdict === "refuse" || d.verdict === "stop") return { action: "refuse", code: d.reason_code ?? "Refused", message: d.message };
  if (d.verdict === "allow" && d.reason_code === "follows_running_job") return { action: "follow", message: d.message };
  return { action: "start" };
}

/** The timeout that ends first, --timeout or the agent's limits.timeout (null: none), as the pipeline weighs them. */
export function runTimeout(agent: Pick<AgentDefinition, "limits"> | undefined, ownMs: number | null): { readonly ms: number; readonly limit: TimeoutLimit } | null {
  const t = jobTimeout(agent, { jobStart: 0, jobTimeout: ownMs ?? -1, jobSession: false });
  return t.ms === null ? null : { ms: t.ms, limit: t.limit };
}

/** How the command ended. */
export type CommandEnd = { readonly code: number; readonly signal: null } | { readonly code: null; readonly signal: NodeJS.Signals };

/** The exit status a shell gives: the command's, or 128 + the signal's number. */
export function exitStatus(end: CommandEnd): number {
  if (end.signal === null) return end.code;
  return 128 + (constants.signals[end.signal] ?? 0);
}

/**
 * The job's outcome (on its `ended` event), pure. AgentTimeout when oz0 run stopped the command
 * past its timeout; else the ending the pipeline gave the job (a stop such as BudgetExceeded, a
 * refusal that ends it such as oz0_tree_limit), whatever the command did with it; else cancelled
 * when a person stopped oz0 run; else succeeded (exit 0) or failed. Never "unknown", which means
 * the outcome cannot be known and makes a person decide (LIM-11).
 */
export function outcomeOf(x: { readonly end: CommandEnd; readonly timedOut: boolean; readonly interrupted: NodeJS.Signals | null; readonly ending: Pick<Ending, "code"> | null }): string {
  if (x.timedOut) return "AgentTimeout";
  if (x.ending && x.ending.code !== "JobEnded") return x.ending.code === "oz0_tree_limit" ? "TreeLimitExceeded" : x.ending.code;
  if (x.interrupted) return "cancelled";
  return x.end.signal === null && x.end.code === 0 ? "succeeded" : "failed";
}

/** What oz0 run says on stderr when the job ends (nothing for a plain success or failure, which the command says itself). */
export function endWords(job: RunJob, x: { readonly outcome: string; readonly end: CommandEnd; readonly timeout: { ms: number; limit: TimeoutLimit } | null; readonly ending: Pick<Ending, "code" | "message"> | null; readonly interrupted: NodeJS.Signals | null; readonly stopped: NodeJS.Signals | null }): string {
  const lines: string[] = [];
  if (x.outcome === "AgentTimeout" && x.timeout) {
    const raise = x.timeout.limit === "run --timeout" ? "Start it again with a longer --timeout to allow more." : "Raise limits.timeout of the agent to allow more.";
    lines.push(`oz0 run: job ${job.job_id} ran past its ${formatDuration(x.timeout.ms)} (${x.timeout.limit}): it fails with AgentTimeout, and the command was stopped (${x.stopped ?? "SIGTERM"}). ${raise}`);
  } else if (x.ending && x.ending.code !== "JobEnded") {
    lines.push(`oz0 run: job ${job.job_id} ended with ${x.outcome}: ${x.ending.message}`);
  } else if (x.interrupted) {
    lines.push(`oz0 run: ${x.interrupted} passed on to the command; job ${job.job_id} ends cancelled`);
  }
  if (x.end.signal !== null) lines.push(`oz0 run: the command was ended by ${x.end.signal}: exit status ${exitStatus(x.end)}`);
  return lines.map((l) => `${l}\n`).join("");
}

/** Waits for the pipeline's answer to the start: a decision addressed to it, or the tree recorded as started by it (files-jobs). */
async function awaitStart(runtime: RuntimeClient, files: FilesStore, job: RunJob, startId: string, publish: () => Promise<void>, waitMs: number): Promise<StartAnswer | null> {
  let done = false;
  const decided = runtime.awaitAdmission(startId, waitMs).then(
    (d) => startAnswerOf(d),
    (err: unknown) => {
      if (err instanceof NoAnswer) return null;
      throw err;
    },
  );
  const recorded = (async (): Promise<StartAnswer | null> => {
    const until = Date.now() + waitMs;
    while (!done && Date.now() < until) {
      const tree = await files.tree(job.tenant, job.tree_id);
      if (tree?.startEvent === startId) return { action: "start" };
      await new Promise((r) => setTimeout(r, 100));
    }
    return null;
  })();
  await publish();
  try {
    // A refusal is published after the files state is kept, and no record is kept for one: the first of the two tells.
    return await Promise.race([decided, recorded]);
  } finally {
    done = true;
  }
}

/** Runs the command until it exits; resolves with how it ended. */
function runChild(command: readonly string[], env: NodeJS.ProcessEnv): { child: ChildProcess; ended: Promise<CommandEnd> } {
  const [cmd, ...args] = command;
  const child = spawn(cmd ?? "", args, { stdio: "inherit", env });
  const ended = new Promise<CommandEnd>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code, signal) => resolve(signal ? { code: null, signal } : { code: code ?? 0, signal: null }));
  });
  return { child, ended };
}

/** The agent's definition as the configuration table holds it (its limits.timeout), or undefined. */
async function agentDefinition(kafka: kafkajs.Kafka, serde: Serde, agent: string, log: ReturnType<typeof createLogger>): Promise<AgentDefinition | undefined> {
  const table = await ConfigTable.start(kafka, serde, log);
  try {
    return table.get("agent", agent) as AgentDefinition | undefined;
  } finally {
    await table.stop().catch(() => undefined);
  }
}

/** `oz0 run ...`: resolves with the exit status. */
export async function runCommand(argv: string[]): Promise<number> {
  const parsed = parseRunArgs(argv);
  if (parsed === "help") throw new Exit(0, RUN_HELP, "stdout");
  const o = parsed;
  const gateway = gatewayUrl();
  const job = runJob(o);
  const log = createLogger({ component: "oz0-run", tenant: o.tenant, job: job.job_id });
  const endpoints = await servicesForCommand();
  const redis = redisClient(endpoints, { maxRetriesPerRequest: 3 });
  const keys: KeyStore = redisKeyStore(redis, new Keys());
  const kafka = new kafkajs.Kafka({ ...kafkaConfig("oz0-run", endpoints, process.env, log), logLevel: kafkajs.logLevel.ERROR });
  const serde = new Serde({ registryUrl: endpoints.registryUrl });
  await serde.registerAll();
  const [runtime, agent] = await Promise.all([RuntimeClient.connect(endpoints, { log, listen: ["admission"] }), agentDefinition(kafka, serde, o.agent, log)]);
  try {
    if (agent === undefined) process.stderr.write(`oz0 run: agent ${o.agent} is not in the configuration table (oz0 config publish): the pipeline holds the job to no limits of its own\n`);
    const timeout = runTimeout(agent, o.timeoutMs);
    const start = startedEvent(job, o, Date.now());
    const answer = await awaitStart(runtime, filesState(redis), job, start.id, () => runtime.publishJobEvents([start]), o.startWaitMs);
    if (answer === null) {
      // The start may still be taken later: ended, so the job does not stay running (not under a chosen ID, whose tree may be another job's).
      if (o.id === null) await runtime.publishJobEvents([endedEvent(start, "failed", Date.now())]).catch(() => undefined);
      throw new Exit(1, `oz0 run: the pipeline did not take the start of job ${job.job_id} within ${formatDuration(o.startWaitMs)}: is it running? (npm start)\n`);
    }
    if (answer.action === "refuse") throw new Exit(1, `oz0 run: the job is not started (${answer.code}): ${answer.message}\n`);
    const follows = answer.action === "follow";
    if (follows) process.stderr.write(`oz0 run: ${answer.message} The command runs in it; its end does not end the job.\n`);

    const expiresAt = start.ts + (timeout?.ms ?? DEFAULT_KEY_MS);
    const made = await keys.create({ tenant: job.tenant, agent: job.agent, tree_id: job.tree_id, job_id: job.job_id, run_id: job.run_id, created_by: o.person, expires_at: expiresAt }, Date.now());
    log.info("the job starts", { key: made.binding.id, gateway, timeout_ms: timeout?.ms ?? null });

    const { child, ended } = runChild(o.command, childEnv(process.env, job, made.key, gateway));
    let interrupted: NodeJS.Signals | null = null;
    let stopped: NodeJS.Signals | null = null;
    let timedOut = false;
    let killTimer: NodeJS.Timeout | undefined;
    const stop = (signal: NodeJS.Signals) => {
      stopped = signal;
      child.kill(signal);
      killTimer ??= setTimeout(() => {
        stopped = "SIGKILL";
        child.kill("SIGKILL");
      }, STOP_GRACE_MS);
      killTimer.unref();
    };
    const onSignal = (signal: NodeJS.Signals) => {
      interrupted ??= signal;
      child.kill(signal);
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    const timer = timeout
      ? setTimeout(
          () => {
            timedOut = true;
            stop("SIGTERM");
          },
          Math.max(0, expiresAt - Date.now()),
        )
      : undefined;
    let end: CommandEnd;
    try {
      end = await ended;
    } catch (err) {
      end = { code: 127, signal: null };
      process.stderr.write(`oz0 run: the command ${o.command[0] ?? ""} did not start: ${err instanceof Error ? err.message : String(err)}\n`);
    } finally {
      clearTimeout(timer);
      clearTimeout(killTimer);
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }

    // The ending the pipeline kept for the job (a budget spent, a tree limit), if any: the job ends with it.
    const [fields] = await redisStandingStore(redis, new Keys()).read([{ tenant: job.tenant, tree: job.tree_id, job: job.job_id }]);
    const ending = standingOf(fields ?? [], Date.now(), () => undefined, "", { timeout: false }).ending;
    const outcome = outcomeOf({ end, timedOut, interrupted, ending });
    if (follows) await keys.revoke(made.binding.id, o.person, Date.now());
    else {
      await runtime.publishJobEvents([endedEvent(start, outcome, Date.now())]);
      await keys.revokeJob(job.tenant, job.job_id, o.person, Date.now());
    }
    process.stderr.write(endWords(job, { outcome, end, timeout, ending, interrupted, stopped }));
    log.info("the job ends", { outcome, exit: exitStatus(end) });
    return exitStatus(end);
  } finally {
    await runtime.close().catch(() => undefined);
    await redis.quit().catch(() => redis.disconnect());
  }
}
