/**
 * `oz0`: one command for the people who run the pipeline (`npx oz0 ...` from a checkout, on the
 * PATH when installed). Every subcommand takes `--help` and `--json`; the exit status is 0 when
 * done, 1 when what was asked is not so (nothing waits on that approval, it was answered
 * already, the pipeline did not take the answer in time), 2 for a usage error.
 */
import type { ParseArgsConfig } from "node:util";
import kafkajs from "kafkajs";
import { kafkaAnswers } from "../processors/loops/deadlines.ts";
import { RedisLoopStore } from "../processors/loops/redis-store.ts";
import type { RunFlags } from "../processors/loops/store.ts";
import { approvalState, deadlineEntries, formatWaiting, listed, personAnswer, waitingOf, type WaitingApproval } from "../processors/loops/waiting.ts";
import { argumentsTooLarge } from "../processors/call-arguments.ts";
import { EXACTLY_ONCE_PRODUCER, kafkaConfig } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import { Serde } from "../schemas/serde.ts";
import { redisClient } from "../store/redis/client.ts";
import { Keys } from "../store/redis/keys.ts";
import { Exit, parse as parseWith, person, usage } from "./cli.ts";
import { quotaSet, tenantOffload, tenantSpend, tenantToolPolicy } from "./oz0-tenant.ts";
import { KEYS_HELP, keysCreate, keysList, keysRevoke } from "./oz0-keys.ts";
import { tenantErase } from "./oz0-erase.ts";
import { answerBudgetRequest, budgetRequestsWaiting, withLimits } from "./oz0-budget.ts";
import { formatBudgetRequests, isBudgetApproval } from "../processors/limits/budget-requests.ts";
import { formatUnknownOutcomes, isUnknownApproval } from "../processors/limits/unknown-outcomes.ts";
import { answerUnknownOutcome, unknownOutcomesWaiting } from "./oz0-unknown.ts";
import { servicesForCommand } from "../topology/services.ts";
import { redisStandingStore } from "../processors/limits/redis-store.ts";
import type { Ending } from "../processors/limits/standing.ts";
import type { StandingStore } from "../processors/limits/store.ts";
import { jobEnding } from "../processors/loops/closing.ts";
import { RUN_HELP } from "./oz0-run.ts";


const TOP = `oz0: the guard rails' command for the people who run them

  oz0 approval list [--tenant T] [--kind loop|budget|tool|unknown] [--json]   what waits for a person
  oz0 approval approve <job> <approval> [--comment C] [--arguments JSON] [--outcome happened|run_again]   the held call goes ahead
  oz0 approval deny <job> <approval> [--comment C]          a loop: the job stops; a tool call: refused; an unknown outcome: stopped
  oz0 job trace <job> [--tenant T] [--json] [--scan]        a job's trace
  oz0 job erase --tenant T (--tree ID | --job ID) --reason R --yes   one tree's files, traces and state erased
  oz0 hold set|clear --tenant T (--tree ID | --job ID) --reason R   a legal hold on one tree's data
  oz0 hold list [--tenant T]                                the held trees
  oz0 doctor [--hours 1] [--json]                           the pipeline's health at a glance
  oz0 plugin lint <oz0-plugin.yaml>                         a plugin manifest's lint (FIT-17)
  oz0 tenant offload <tenant> [--default N] [--ceiling N] --reason R
  oz0 tenant spend <tenant> [--tree-fan-out N ...] --reason R
  oz0 tenant tool-policy <tenant>                           the tenant's settings as the pipeline holds them
  oz0 tenant erase <tenant> --reason R --yes                its files and traces erased (OFF-10, FILE-6)
  oz0 quota set <person|team> <id> <usd> --tenant T --reason R [--month YYYY-MM]
  oz0 retention status [--tenant T] [--json]                each tenant's last sweep and what is past retention now
  oz0 keys create --tenant T --agent A [--job J] [--expires 24h]   an API key bound to a job (shown once)
  oz0 keys list [--tenant T] [--job J] | revoke <key-id> | revoke --job J --tenant T
  oz0 audit [--tenant T] [--kind K] [--since ISO] [--json] [--loops | --loops-weekly]   the audit log
  oz0 config validate|lint|publish|kill-switch ...          as npm run config
  oz0 loops report [--json]                                 tools looping in 3+ tenants this week
  oz0 mcp --plugin <oz0-plugin.yaml> --tenant T --agent A   an MCP server in front of the plugin's, guarded
  oz0 run --tenant T --agent A [--budget USD] [--timeout D] [--id J] -- <command...>   a job around any agent, its model calls through the gateway
  oz0 gateway [--listen HOST:PORT] [--upstream P=URL]       the model gateway (OpenAI and Anthropic APIs), guarded

Each subcommand takes --help. Exit status: 0 done, 1 what was asked is not so, 2 usage.
`;

const HELP: Record<string, string> = {
  ...KEYS_HELP,
  run: RUN_HELP,
  "approval list": `oz0 approval list [--tenant T] [--kind loop|budget|tool|unknown] [--json]

What waits for a person. Loops (LOOP-5): each approval with its job, evidence (the detector,
the calls, the repeated call's arguments), when it was asked, its deadline and the escalation
step it is on, soonest deadline first. Tool calls (TOOL-3, approvals t-...): a call of a
function in its tool's requires_approval, with its arguments as asked, listed with the loops.
Budget requests (LIM-7, LIM-8, LIM-10): a model call or
a child that waits on the tree's budget (on_budget: wait), the forecast's request before the
wall, or a spent monthly quota, with the limit, the numbers and how to answer, oldest first.
Unknown outcomes (LIM-11, approvals u-...): a job whose outcome cannot be known, with its
deadline. An approval whose job ended is not listed: it is closed with the job's end (audited).
Read from the state the pipeline keeps in Redis.

  --tenant T   only this tenant's
  --kind K     only this kind (loop, budget, tool or unknown)
  --json       one JSON array, for scripts

Example:
  oz0 approval list --tenant acme
`,
  "approval approve": `oz0 approval approve <job> <approval> [--comment C] [--arguments JSON] [--budget USD] [--outcome O] [--as NAME] [--wait S] [--json]

Approves a loop that waits for a person: the held call goes ahead and the run's loop counters
start again. A tool call that waits (TOOL-3, an approval t-...) is made, with the arguments
given as a JSON object in --arguments (they replace the asked ones), else as asked. The answer goes to the pipeline on oz0.loop-approvals and is audited with who
answered (--as, else OZ0_OPERATOR, else the login name). Waits up to --wait seconds (default 30)
for the pipeline to take it.

A budget request (an approval b-...) is approved with the tree's new budget (--budget, above
its budget; optional for the forecast's request, not taken for a quota, which oz0 quota set
raises): the job may ask again. Answered in the tree's state at once, and audited.

An unknown outcome (an approval u-..., LIM-11) is approved with what happened: --outcome
happened (the job's outcome happened; the runtime goes on from it) or --outcome run_again
(the runtime runs the job's work again). Answered at once, and audited.

An approval whose job ended was closed with the job's end: its answer is refused.

Examples:
  oz0 approval approve job-7f3a a-91c2 --comment "the retries are expected"
  oz0 approval approve job-7f3a t-Xb3kQ9 --arguments '{"plan": "basic"}'
  oz0 approval approve job-7f3a b-4c1d9e0a2f6b --budget 5 --comment "the migration needs it"
  oz0 approval approve job-7f3a u-1e2f3a4b5c6d --outcome run_again
`,
  "approval deny": `oz0 approval deny <job> <approval> [--comment C] [--as NAME] [--wait S] [--json]

Denies a loop that waits for a person: the job stops with LoopDetected and the model reads the
comment as the held call's failed result. A tool call denied (t-...) is refused: the model
reads the refusal with the comment, and the job goes on. Audited with who answered (--as, else OZ0_OPERATOR,
else the login name). Waits up to --wait seconds (default 30) for the pipeline to take it.

A budget request (b-...) denied: the job fails with BudgetExceeded. An unknown outcome
(u-...) denied: the job is stopped and fails with unknown_outcome.

Example:
  oz0 approval deny job-7f3a a-91c2 --comment "it keeps fetching the same page"
`,
  doctor: `oz0 doctor [--hours H] [--sample S] [--days D] [--min-tenants N] [--json]

The pipeline's health at a glance: which services do not answer; each processor's consumer lag
and rate (its group's committed offsets, read twice S seconds apart, default 2); the dead
letters of the last H hours (default 1) by processor and reason; the tools that looped in N
(default 3) or more tenants in the last D days (default 7), with their risk class and the kill
switch command (LOOP-9). A service that does not answer is reported, never started. Exits 1
when a service does not answer.

Example:
  oz0 doctor --hours 24
`,
  "plugin lint": `oz0 plugin lint <oz0-plugin.yaml>... [--json]

A plugin manifest's lint (FIT-17): every error as path:line: field: reason, and the warnings;
--json gives them as one object with each issue's severity, path, line, field and reason.
Exits 1 when there is an error. The same as npm run config -- lint.

Example:
  oz0 plugin lint plugins/acme_docs/oz0-plugin.yaml
`,
  audit: `oz0 audit [--tenant T] [--kind K] [--since ISO] [--json] [--loops | --loops-weekly]

The audit log in time order, each entry as first written (docs/sinks.md): --kind approval
matches every approval.*; --loops shows loops acted on per day, tenant, plugin and tool;
--loops-weekly the tools that looped in three or more tenants in the last 7 days (LOOP-9).

Example:
  oz0 audit --tenant acme --kind approval --since 2026-12-01T00:00:00Z
`,
  config: `oz0 config validate [dir] [--json] | lint <oz0-plugin.yaml>... [--json] | publish [dir] --reason R [--prune]
           | kill-switch <plugin>/<tool> --reason R [--off]

Agent definitions, plugin manifests and tenant settings (docs/configuration.md): validate a
directory, lint manifests, publish to the configuration table, or throw a tool's kill switch.

Example:
  oz0 config publish config/examples --reason "first settings"
`,
  "loops report": `oz0 loops report [--json] [--days 7] [--min-tenants 3]

The tools that looped in three or more tenants in the last week (LOOP-9), from the daily loop
counts in Redis, each with its risk class and its kill switch.

Example:
  oz0 loops report --days 14
`,
  "job trace": `oz0 job trace <job> [--tenant T] [--json] [--scan]

A job's trace as the trace sink keeps it: with --tenant, that tenant's job of the ID only, else
every tenant's job of that ID. --scan reads the topics instead.

Example:
  oz0 job trace job-7f3a
`,
};

const ANSWER_OPTIONS = {
  comment: { type: "string" },
  arguments: { type: "string" },
  budget: { type: "string" },
  outcome: { type: "string" },
  as: { type: "string" },
  wait: { type: "string", default: "30" },
  json: { type: "boolean", default: false },
  help: { type: "boolean", default: false },
} satisfies ParseArgsConfig["options"];

const parse = <O extends NonNullable<ParseArgsConfig["options"]>>(command: string, args: string[], options: O) => parseWith(HELP[command] ?? TOP, args, options);

interface Services {
  readonly store: RedisLoopStore;
  readonly standing: StandingStore;
  close(): Promise<void>;
}

async function loopState(): Promise<Services> {
  const endpoints = await servicesForCommand();
  const redis = redisClient(endpoints, { maxRetriesPerRequest: 3 });
  return { store: new RedisLoopStore(redis, new Keys()), standing: redisStandingStore(redis, new Keys()), close: async () => void (await redis.quit().catch(() => redis.disconnect())) };
}

type JobRef = { readonly tenant: string; readonly tree_id: string; readonly job_id: string };
const jobKey = (j: JobRef): string => `${j.tenant}\u0000${j.tree_id}\u0000${j.job_id}`;

/**
 * The jobs among these that ended, with their endings (the endings the pipeline kept: a job's
 * own end, a stop or refusal that ended it). Their approvals leave the list and take no answer:
 * the deadline timer closes them (processors/loops/closing.ts).
 */
async function endedOf(standing: StandingStore, refs: readonly JobRef[]): Promise<Map<string, Ending>> {
  const jobs = [...new Map(refs.map((r) => [jobKey(r), r])).values()];
  const fields = await standing.read(jobs.map((j) => ({ tenant: j.tenant, tree: j.tree_id, job: j.job_id })));
  const out = new Map<string, Ending>();
  jobs.forEach((j, i) => {
    const ending = jobEnding(fields[i] ?? [], Date.now(), null);
    if (ending) out.set(jobKey(j), ending);
  });
  return out;
}

/** Every loop waiting for a person, from the deadlines the timer watches and each run's flags. */
async function waiting(store: RedisLoopStore): Promise<WaitingApproval[]> {
  const out: WaitingApproval[] = [];
  const flagsByRun = new Map<string, RunFlags>();
  for (const entry of deadlineEntries(await store.watched())) {
    const key = `${entry.tenant}\n${entry.run_id}`;
    let flags = flagsByRun.get(key);
    if (!flags) flagsByRun.set(key, (flags = await store.flags(entry.tenant, entry.run_id)));
    const w = waitingOf(entry, flags);
    if (w) out.push(w);
  }
  return out;
}

async function approvalList(args: string[]): Promise<string> {
  const { values, positionals } = parse("approval list", args, { tenant: { type: "string" }, kind: { type: "string" }, json: { type: "boolean", default: false }, help: { type: "boolean", default: false } });
  if (values.help) return HELP["approval list"] ?? "";
  if (positionals.length > 0) throw usage(`approval list takes no arguments, got ${positionals.join(" ")}\n\n${HELP["approval list"]}`);
  if (values.kind !== undefined && values.kind !== "loop" && values.kind !== "budget" && values.kind !== "tool" && values.kind !== "unknown") throw usage(`--kind ${values.kind}: the kinds that wait for a person here are: loop, budget, tool, unknown\n`);
  // LIM-11: a job's unknown outcome waits after the job ended, so it is listed whatever the job's standing.
  const unknowns = values.kind === undefined || values.kind === "unknown" ? await unknownOutcomesWaiting({ tenant: values.tenant }) : [];
  if (values.kind === "unknown") return values.json ? `${JSON.stringify(unknowns, null, 2)}\n` : unknowns.length === 0 ? "no unknown outcome waits for a person\n" : formatUnknownOutcomes(unknowns, Date.now());
  const s = await loopState();
  try {
    // An approval whose job ended waits for nobody: it is not listed (closed in the audit log by the deadline timer).
    const asked = values.kind === "loop" || values.kind === "tool" ? [] : await budgetRequestsWaiting({ tenant: values.tenant });
    const waitingNow = values.kind === "budget" ? [] : listed(await waiting(s.store), { tenant: values.tenant, kind: values.kind });
    const ended = await endedOf(s.standing, [...asked, ...waitingNow]);
    const budgets = asked.filter((r) => !ended.has(jobKey(r)));
    if (values.kind === "budget") return values.json ? `${JSON.stringify(budgets, null, 2)}\n` : budgets.length === 0 ? "no budget request waits for a person\n" : formatBudgetRequests(budgets, Date.now());
    const shown = waitingNow.filter((w) => !ended.has(jobKey(w)));
    if (values.json) return `${JSON.stringify([...shown, ...budgets, ...unknowns], null, 2)}\n`;
    const others = `${formatBudgetRequests(budgets, Date.now())}${formatUnknownOutcomes(unknowns, Date.now())}`;
    return others === "" ? formatWaiting(shown, Date.now()) : `${shown.length === 0 ? "" : formatWaiting(shown, Date.now())}${others}`;
  } finally {
    await s.close();
  }
}

async function approvalAnswer(verb: "approve" | "deny", args: string[]): Promise<string> {
  const command = `approval ${verb}`;
  const { values, positionals } = parse(command, args, ANSWER_OPTIONS);
  if (values.help) return HELP[command] ?? "";
  const [job, approval, ...rest] = positionals;
  if (!job || !approval || rest.length > 0) throw usage(`${command} takes a job and an approval\n\n${HELP[command]}`);
  const waitS = Number(values.wait);
  if (!Number.isFinite(waitS) || waitS < 0) throw usage(`--wait ${values.wait}: give seconds, 0 or more\n`);
  const name = person(values.as);
  if (isUnknownApproval(approval)) {
    if (values.budget !== undefined || values.arguments !== undefined) throw usage(`--budget and --arguments do not answer an unknown outcome (u-...): approve with --outcome happened|run_again, or deny to stop it\n`);
    return answerUnknownOutcome({ verb, job, approval, person: name, comment: values.comment, outcome: values.outcome, json: values.json });
  }
  if (values.outcome !== undefined) throw usage(`--outcome answers an unknown outcome (u-...); ${approval} is not one\n`);
  if (isBudgetApproval(approval)) await budgetJobEnded(approval);
  if (isBudgetApproval(approval)) return answerBudgetRequest({ verb, job, approval, person: name, comment: values.comment, budget: values.budget, json: values.json });
  if (values.budget !== undefined) throw usage(`--budget answers a budget request (b-...); ${approval} is a loop's\n`);
  const approvedArgs = values.arguments === undefined ? undefined : argumentsOption(verb, values.arguments);
  const s = await loopState();
  try {
    const run = (await s.store.approvalRun(approval)) ?? (await timerRun(s.store, approval));
    if (!run) throw new Exit(1, `no loop waits on approval ${approval}: see what waits with oz0 approval list\n`);
    const flags = await s.store.flags(run.tenant, run.run);
    const hold = flags.holds.get(approval);
    if (!hold) throw new Exit(1, `no loop waits on approval ${approval} (its run's state has expired): see what waits with oz0 approval list\n`);
    if (hold.job_id !== job) throw new Exit(1, `approval ${approval} belongs to job ${hold.job_id}, not ${job}\n`);
    const before = approvalState(flags, approval);
    if (before === "closed") throw new Exit(1, `approval ${approval} of job ${job} was closed with the job's end (${flags.closed?.get(approval) ?? "ended"}); nothing changed\n`);
    if (before !== "waiting") throw new Exit(1, `approval ${approval} of job ${job} was ${before} already; nothing changed\n`);
    const ended = (await endedOf(s.standing, [hold])).get(jobKey(hold));
    if (ended) throw new Exit(1, `approval ${approval} is closed: job ${job} has ended (${ended.code}), so the held call can no longer run; nothing changed\n`);
    const tool = hold.kind === "tool";
    if (approvedArgs !== undefined && !tool) throw usage(`--arguments approves a tool call with other arguments (an approval t-...); ${approval} is a loop's\n`);

    const verdict = verb === "approve" ? "allow" : "stop";
    const answer = personAnswer(hold, { verdict, person: name, comment: values.comment, now: Date.now(), ...(approvedArgs ? { arguments: approvedArgs } : {}) });
    await publish(answer);

    const deadline = Date.now() + waitS * 1000;
    for (;;) {
      const decided = await s.store.decidedBy(run.tenant, run.run, approval);
      if (decided) {
        const mine = decided.id === answer.id;
        const said = { approval, job, tenant: run.tenant, run: run.run, answer: decided.answer, by: name, answer_id: answer.id, decided_by_this_answer: mine };
        if (!mine) throw values.json ? new Exit(1, `${JSON.stringify(said)}\n`, "stdout") : new Exit(1, `approval ${approval} of job ${job} was ${decided.answer} by another answer first\n`);
        if (values.json) return `${JSON.stringify(said)}\n`;
        if (tool) return decided.answer === "approved" ? `approved ${approval} as ${name}: the call of ${hold.plugin ?? ""}/${hold.tool ?? ""}.${hold.function ?? ""} of job ${job} is made${approvedArgs ? " with the arguments given" : ""}\n` : `denied ${approval} as ${name}: the call of ${hold.plugin ?? ""}/${hold.tool ?? ""}.${hold.function ?? ""} of job ${job} is refused\n`;
        return decided.answer === "approved" ? `approved ${approval} as ${name}: the held call of job ${job} goes ahead\n` : `denied ${approval} as ${name}: job ${job} stops with LoopDetected\n`;
      }
      if (Date.now() >= deadline) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Exit(1, `the answer (${answer.id}) is on oz0.loop-approvals, but the pipeline did not take it within ${waitS} s: is it running? (npm start)\n`);
  } finally {
    await s.close();
  }
}

/** A budget request whose job ended takes no answer: the job can no longer ask again. */
async function budgetJobEnded(approval: string): Promise<void> {
  const found = await withLimits((store) => store.budgetRequest(approval));
  if (!found || found.answered) return;
  const s = await loopState();
  try {
    const r = found.request;
    const ended = (await endedOf(s.standing, [r])).get(jobKey(r));
    if (ended) throw new Exit(1, `approval ${approval} is closed: job ${r.job_id} has ended (${ended.code}), so it can no longer ask again; nothing changed\n`);
  } finally {
    await s.close();
  }
}

/** TOOL-3: `--arguments`, a JSON object, taken only by approve. */
function argumentsOption(verb: "approve" | "deny", text: string): Record<string, unknown> {
  if (verb === "deny") throw usage("--arguments goes with approve: a denied call is not made\n");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw usage(`--arguments is not JSON (${err instanceof Error ? err.message : String(err)}): give the call's arguments as one JSON object, such as '{"plan": "basic"}'\n`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw usage(`--arguments must be a JSON object, such as '{"plan": "basic"}'; got ${JSON.stringify(parsed)}\n`);
  const why = argumentsTooLarge(text);
  if (why !== null) throw usage(`--arguments: ${why}\n`);
  return parsed as Record<string, unknown>;
}

/** The run of an approval held before approvals were indexed: from the timer's deadlines. */
async function timerRun(store: RedisLoopStore, approval: string): Promise<{ tenant: string; run: string } | null> {
  const e = deadlineEntries(await store.watched()).find((d) => d.approval === approval);
  return e ? { tenant: e.tenant, run: e.run_id } : null;
}

async function publish(answer: ReturnType<typeof personAnswer>): Promise<void> {
  const endpoints = await servicesForCommand();
  const log = createLogger({ component: "oz0" });
  const kafka = new kafkajs.Kafka(kafkaConfig("oz0-cli", endpoints, process.env, log));
  const serde = new Serde({ registryUrl: endpoints.registryUrl });
  // The Decision schema's ID (registering the same schema again is idempotent).
  await serde.register("Decision");
  const producer = kafka.producer({ ...EXACTLY_ONCE_PRODUCER, allowAutoTopicCreation: false });
  await producer.connect();
  try {
    // Sent as the deadline timer sends its answers: keyed by run.
    await kafkaAnswers(producer, serde)([answer]);
  } finally {
    await producer.disconnect();
  }
}

/** Runs one of the project's scripts as a subcommand, with its own arguments. */
async function script(file: string, args: string[]): Promise<string> {
  process.argv = [process.argv[0] ?? "node", file, ...args];
  await import(file);
  return "";
}

async function doctorCommand(args: string[]): Promise<string> {
  const { values, positionals } = parse("doctor", args, {
    hours: { type: "string", default: "1" },
    sample: { type: "string", default: "2" },
    days: { type: "string", default: "7" },
    "min-tenants": { type: "string", default: "3" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  });
  if (values.help) return HELP.doctor ?? "";
  if (positionals.length > 0) throw usage(`doctor takes no arguments, got ${positionals.join(" ")}\n\n${HELP.doctor}`);
  const hours = Number(values.hours);
  const sampleS = Number(values.sample);
  const days = Number(values.days);
  const minTenants = Number(values["min-tenants"]);
  if (!(hours > 0) || !(sampleS >= 0) || !Number.isInteger(days) || days < 1 || !Number.isInteger(minTenants) || minTenants < 1) throw usage(`doctor: --hours and --sample take seconds or hours above 0, --days and --min-tenants whole numbers from 1\n\n${HELP.doctor}`);
  const { doctor } = await import("./doctor.ts");
  const { formatDoctor, healthy } = await import("../processors/ops/doctor.ts");
  const report = await doctor({ hours, sampleS, days, minTenants });
  const text = values.json ? `${JSON.stringify(report, null, 2)}\n` : formatDoctor(report);
  if (!healthy(report)) throw new Exit(1, text, "stdout");
  return text;
}

async function run(argv: string[]): Promise<string> {
  const [group, command, ...args] = argv;
  if (!group || group === "--help" || group === "-h" || group === "help") return TOP;
  const key = `${group} ${command ?? ""}`;
  if (key === "approval list") return approvalList(args);
  if (key === "approval approve") return approvalAnswer("approve", args);
  if (key === "approval deny") return approvalAnswer("deny", args);
  if (group === "doctor") return doctorCommand(argv.slice(1));
  if (group === "gateway") {
    // Serves until SIGINT or SIGTERM.
    const { gatewayCommand } = await import("./oz0-gateway.ts");
    process.exit(await gatewayCommand(argv.slice(1)));
  }
  if (group === "run") {
    // The job lasts as long as the command; the exit status is the command's.
    const { runCommand } = await import("./oz0-run.ts");
    process.exit(await runCommand(argv.slice(1)));
  }
  if (group === "mcp") {
    // A session lasts until the agent closes stdin; stdout is the protocol's alone.
    const { mcpCommand } = await import("./oz0-mcp.ts");
    process.exit(await mcpCommand(argv.slice(1)));
  }
  if (key === "tenant offload") return tenantOffload(args);
  if (key === "tenant spend") return tenantSpend(args);
  if (key === "tenant tool-policy") return tenantToolPolicy(args);
  if (key === "tenant erase") return tenantErase(args);
  if (key === "job erase") return (await import("./oz0-job-erase.ts")).jobErase(args);
  if (group === "hold") return (await import("./oz0-hold.ts")).holdCommand(command ?? "", args);
  if (key === "quota set") return quotaSet(args);
  if (key === "retention status") return (await import("./oz0-retention.ts")).retentionStatus(args);
  if (key === "keys create") return keysCreate(args);
  if (key === "keys list") return keysList(args);
  if (key === "keys revoke") return keysRevoke(args);
  // The project's scripts under the one command, with their own arguments; the help is here.
  const delegated: Record<string, [string, string, string[]]> = {
    audit: ["audit", "./audit.ts", argv.slice(1)],
    config: ["config", "./config.ts", argv.slice(1)],
    "loops report": ["loops report", "./loops.ts", ["report", ...args]],
    "plugin lint": ["plugin lint", "./config.ts", ["lint", ...args]],
    "job trace": ["job trace", "./trace.ts", args],
  };
  const d = delegated[key] ?? delegated[group];
  if (d) {
    const [name, file, rest] = d;
    return rest.includes("--help") || rest.includes("-h") ? (HELP[name] ?? "") : script(file, rest);
  }
  throw usage(`oz0 ${argv.join(" ")}: no such command\n\n${TOP}`);
}

try {
  const out = await run(process.argv.slice(2));
  process.stdout.write(out);
  if (out !== "") process.exit(0);
} catch (err) {
  if (err instanceof Exit) {
    (err.to === "stdout" ? process.stdout : process.stderr).write(err.message);
    process.exit(err.code);
  }
  process.stderr.write(`oz0: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
