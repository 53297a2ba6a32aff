/**
 * Unknown outcomes under `oz0 approval` (LIM-11): a job whose outcome cannot be known waits for a
 * person as an approval of kind unknown (`u-...`, processors/limits/unknown-outcomes.ts). The
 * answer is the person's own act, applied here as a budget request's is: kept once (the first
 * answer holds), then published on `oz0.admissions` for the job (allow `happened`, allow
 * `run_again`, or stop `unknown_outcome`) and on `oz0.audit` (`approval.answered`, kind unknown,
 * with who and why).
 */
import kafkajs from "kafkajs";
import { redisUnknownOutcomeStore } from "../processors/limits/redis-store.ts";
import type { UnknownOutcomeStore } from "../processors/limits/store.ts";
import { answeredWords, outcomeOf, unknownAnswerDecision, unknownAuditEntry, type UnknownOutcomeAnswer, type UnknownOutcomeRequest } from "../processors/limits/unknown-outcomes.ts";
import { kafkaConfig } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import { Serde } from "../schemas/serde.ts";
import { redisClient } from "../store/redis/client.ts";
import { Keys } from "../store/redis/keys.ts";
import { Exit, usage } from "./cli.ts";
import { servicesForCommand } from "../topology/services.ts";

async function withStore<T>(use: (store: UnknownOutcomeStore) => Promise<T>): Promise<T> {
  const endpoints = await servicesForCommand();
  const redis = redisClient(endpoints, { maxRetriesPerRequest: 3 });
  try {
    return await use(redisUnknownOutcomeStore(redis, new Keys()));
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}

export function unknownOutcomesWaiting(filter: { tenant?: string }): Promise<UnknownOutcomeRequest[]> {
  return withStore(async (store) => (await store.waiting()).filter((r) => filter.tenant === undefined || r.tenant === filter.tenant));
}

export interface UnknownAnswerArgs {
  readonly verb: "approve" | "deny";
  readonly job: string;
  readonly approval: string;
  readonly person: string;
  readonly comment?: string;
  readonly outcome?: string;
  readonly json: boolean;
}

export async function answerUnknownOutcome(a: UnknownAnswerArgs): Promise<string> {
  const chosen = outcomeOf(a.verb, a.outcome);
  if ("problem" in chosen) throw usage(`approval ${a.verb} ${a.approval}: ${chosen.problem}\n`);
  const { outcome } = chosen;
  return withStore(async (store) => {
    const found = await store.get(a.approval);
    if (!found) throw new Exit(1, `no unknown outcome waits on approval ${a.approval}: see what waits with oz0 approval list --kind unknown\n`);
    const { request: r, answered } = found;
    if (r.job_id !== a.job) throw new Exit(1, `approval ${a.approval} belongs to job ${r.job_id}, not ${a.job}\n`);
    const said = (x: UnknownOutcomeAnswer) => `approval ${a.approval} of job ${a.job} was answered already (${x.outcome}) by ${x.by}; nothing changed\n`;
    if (answered) throw new Exit(1, said(answered));
    const answer: UnknownOutcomeAnswer = { outcome, by: `person:${a.person}`, comment: a.comment ?? null, at: Date.now() };
    const held = await store.answer(a.approval, answer, true);
    if (!held) throw new Exit(1, `no unknown outcome waits on approval ${a.approval} (it expired): see what waits with oz0 approval list --kind unknown\n`);
    if (held.at !== answer.at || held.by !== answer.by) throw new Exit(1, said(held));
    await publish(unknownAnswerDecision(r, held), unknownAuditEntry(r, held));
    if (a.json) return `${JSON.stringify({ approval: a.approval, job: a.job, tenant: r.tenant, tree: r.tree_id, kind: "unknown", outcome, by: a.person })}\n`;
    return `${answeredWords(r, held)}\n`;
  });
}

async function publish(decision: ReturnType<typeof unknownAnswerDecision>, entry: ReturnType<typeof unknownAuditEntry>): Promise<void> {
  const endpoints = await servicesForCommand();
  const log = createLogger({ component: "oz0" }, () => {});
  const kafka = new kafkajs.Kafka(kafkaConfig("oz0-unknown-answer", endpoints, process.env, log));
  const serde = new Serde({ registryUrl: endpoints.registryUrl });
  await serde.register("Decision");
  await serde.register("AuditEvent");
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  try {
    await producer.send({ topic: "oz0.admissions", acks: -1, messages: [{ key: decision.tree_id, value: serde.encode("Decision", decision) }] });
    await producer.send({ topic: "oz0.audit", acks: -1, messages: [{ key: entry.tenant ?? "", value: serde.encode("AuditEvent", entry) }] });
  } finally {
    await producer.disconnect();
  }
}
