/**
 * Budget requests under `oz0 approval` (LIM-7, LIM-8, LIM-10): the waits for a person about
 * spending, as the limits processors keep them with each tree's state, and a person's answer.
 * Approving raises the tree's budget (`--budget`) in one step with its state and tells the job,
 * on `oz0.admissions`, that it may ask again; denying tells it that it fails with
 * BudgetExceeded. Both are audited (`approval.answered`, kind budget, with who and why).
 */
import kafkajs from "kafkajs";
import { answerProblem, budgetAnswerDecision, type BudgetAnswer, type BudgetRequest } from "../processors/limits/budget-requests.ts";
import { usdToMicros } from "../processors/limits/money.ts";
import { redisLimitsStore } from "../processors/limits/redis-store.ts";
import type { LimitsStore } from "../processors/limits/store.ts";
import { kafkaConfig } from "../processors/runner/endpoints.ts";
import { deriveId } from "../processors/runner/ids.ts";
import { createLogger } from "../processors/runner/log.ts";
import { Serde } from "../schemas/serde.ts";
import type { AuditEvent } from "../schemas/types.ts";
import { redisClient } from "../store/redis/client.ts";
import { Keys } from "../store/redis/keys.ts";
import { Exit, usage } from "./cli.ts";
import { servicesForCommand } from "../topology/services.ts";

export async function withLimits<T>(use: (store: LimitsStore) => Promise<T>): Promise<T> {
  const endpoints = await servicesForCommand();
  const redis = redisClient(endpoints, { maxRetriesPerRequest: 3 });
  try {
    return await use(redisLimitsStore(redis, new Keys()));
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}

export function budgetRequestsWaiting(filter: { tenant?: string }): Promise<BudgetRequest[]> {
  return withLimits(async (store) => (await store.budgetRequests()).filter((r) => filter.tenant === undefined || r.tenant === filter.tenant));
}

function money(flag: string, v: string | undefined): number | null {
  if (v === undefined) return null;
  const n = Number(v.replace(/^\$/, ""));
  if (v.trim() === "" || !Number.isFinite(n) || n <= 0) throw usage(`--${flag} ${v}: give an amount in US dollars above 0, such as 5 or $5\n`);
  return usdToMicros(n);
}

export interface BudgetAnswerArgs {
  readonly verb: "approve" | "deny";
  readonly job: string;
  readonly approval: string;
  readonly person: string;
  readonly comment?: string;
  readonly budget?: string;
  readonly json: boolean;
}

export async function answerBudgetRequest(a: BudgetAnswerArgs): Promise<string> {
  const verdict = a.verb === "approve" ? "allow" : "stop";
  const budget = money("budget", a.budget);
  return withLimits(async (store) => {
    const found = await store.budgetRequest(a.approval);
    if (!found) throw new Exit(1, `no budget request waits on approval ${a.approval}: see what waits with oz0 approval list\n`);
    const { request: r, answered, treeBudget } = found;
    if (r.job_id !== a.job) throw new Exit(1, `approval ${a.approval} belongs to job ${r.job_id}, not ${a.job}\n`);
    if (answered) throw new Exit(1, `approval ${a.approval} of job ${a.job} was ${answered.answer} already by ${answered.by}; nothing changed\n`);
    const problem = answerProblem(r, verdict, budget, treeBudget);
    if (problem) throw usage(`approval ${a.verb} ${a.approval}: ${problem}\n`);
    const now = Date.now();
    const answer: BudgetAnswer = { answer: verdict === "allow" ? "approved" : "denied", by: `person:${a.person}`, budget: budget ?? -1, at: now };
    const held = await store.answerBudgetRequest(r, answer);
    if (held.at !== answer.at || held.by !== answer.by) throw new Exit(1, `approval ${a.approval} of job ${a.job} was ${held.answer} first by ${held.by}; nothing changed\n`);
    await publishAnswer(r, budgetAnswerDecision(r, { verdict, person: a.person, comment: a.comment, budget, now }), answer, a.comment);
    const said = { approval: a.approval, job: a.job, tenant: r.tenant, tree: r.tree_id, kind: "budget", answer: answer.answer, by: a.person, ...(budget === null ? {} : { budget_usd: budget / 1_000_000 }) };
    if (a.json) return `${JSON.stringify(said)}\n`;
    return verdict === "allow"
      ? `approved ${a.approval} as ${a.person}${budget === null ? "" : `: tree ${r.tree_id}'s budget is now $${(budget / 1_000_000).toFixed(2)}`}; job ${a.job} may ask again\n`
      : `denied ${a.approval} as ${a.person}: job ${a.job} fails with BudgetExceeded\n`;
  });
}

async function publishAnswer(r: BudgetRequest, decision: ReturnType<typeof budgetAnswerDecision>, answer: BudgetAnswer, comment: string | undefined): Promise<void> {
  const endpoints = await servicesForCommand();
  const log = createLogger({ component: "oz0" }, () => {});
  const kafka = new kafkajs.Kafka(kafkaConfig("oz0-budget-answer", endpoints, process.env, log));
  const serde = new Serde({ registryUrl: endpoints.registryUrl });
  await serde.registerAll();
  const entry: AuditEvent = {
    id: deriveId("budget-answer", "audit", r.approval),
    kind: "approval.answered",
    tenant: r.tenant,
    tree_id: r.tree_id,
    job_id: r.job_id,
    actor: answer.by.replace(/^person:/, ""),
    reason: comment ?? null,
    facts: { approval: r.approval, kind: "budget", answer: answer.answer === "approved" ? "approve" : "deny", limit: r.limit },
    numbers: answer.budget >= 0 ? { budget_usd: answer.budget / 1_000_000 } : {},
    ts: answer.at,
  };
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  try {
    await producer.send({ topic: "oz0.admissions", acks: -1, messages: [{ key: r.tree_id, value: serde.encode("Decision", decision) }] });
    await producer.send({ topic: "oz0.audit", acks: -1, messages: [{ key: r.tenant, value: serde.encode("AuditEvent", entry) }] });
  } finally {
    await producer.disconnect();
  }
}
