/**
 * LIM-11: an unknown outcome nobody decided by its deadline stops the job with
 * `unknown_outcome`. A timer beside the processors (started by the pipeline, like the loop
 * deadlines' timer) reads the index of those waiting by deadline; for each one passed, it
 * answers it once for the deadline (the first answer holds: a person's that came first wins),
 * publishes the stop on `oz0.admissions` and its audit entry on `oz0.audit`, and only then takes
 * it out of the index. A timer that fails in between publishes it again under the same IDs, so
 * readers drop the copy; several pipeline instances may each run one.
 */
import type { Kafka, Producer } from "kafkajs";
import type { Serde } from "../../schemas/serde.ts";
import type { AuditEvent, Decision } from "../../schemas/types.ts";
import type { Logger } from "../runner/log.ts";
import type { UnknownOutcomeStore } from "./store.ts";
import { UNKNOWN_DEADLINES, unknownAnswerDecision, unknownAuditEntry, type UnknownOutcomeAnswer } from "./unknown-outcomes.ts";

export type PublishUnknown = (decisions: Decision[], audit: AuditEvent[]) => Promise<void>;

/** Stops every unknown outcome whose deadline passed by `now` (up to `limit`); returns how many the deadline decided. */
export async function sweepUnknownOutcomes(store: UnknownOutcomeStore, publish: PublishUnknown, now: number, limit = 200): Promise<number> {
  const due = await store.due(now, limit);
  if (due.length === 0) return 0;
  const decisions: Decision[] = [];
  const audit: AuditEvent[] = [];
  for (const { request } of due) {
    const mine: UnknownOutcomeAnswer = { outcome: "stop", by: UNKNOWN_DEADLINES, comment: null, at: request.deadline };
    const held = await store.answer(request.approval, mine, false);
    if (held?.by !== UNKNOWN_DEADLINES) continue;
    decisions.push(unknownAnswerDecision(request, held));
    audit.push(unknownAuditEntry(request, held));
  }
  if (decisions.length > 0) await publish(decisions, audit);
  for (const { request } of due) await store.done(request.approval);
  return decisions.length;
}

export function kafkaUnknownAnswers(producer: Producer, serde: Serde): PublishUnknown {
  return async (decisions, audit) => {
    await producer.sendBatch({
      topicMessages: [
        { topic: "oz0.admissions", messages: decisions.map((d) => ({ key: d.tree_id, value: serde.encode("Decision", d) })) },
        { topic: "oz0.audit", messages: audit.map((e) => ({ key: e.tenant, value: serde.encode("AuditEvent", e) })) },
      ],
    });
  };
}

export interface UnknownOutcomeTimer {
  stop(): Promise<void>;
}

/** Sweeps every `intervalMs` (default a second) with a producer of its own until stopped. */
export async function startUnknownOutcomeDeadlines(deps: { store: UnknownOutcomeStore; kafka: Kafka; serde: Serde; log: Logger; intervalMs?: number; now?: () => number }): Promise<UnknownOutcomeTimer> {
  const producer = deps.kafka.producer({ allowAutoTopicCreation: false, idempotent: true });
  await producer.connect();
  const log = deps.log.child({ component: UNKNOWN_DEADLINES });
  const now = deps.now ?? Date.now;
  const publish = kafkaUnknownAnswers(producer, deps.serde);
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const timer = setInterval(() => {
    running = running
      .then(async () => {
        if (stopped) return;
        const n = await sweepUnknownOutcomes(deps.store, publish, now());
        if (n > 0) log.info("unknown outcomes past their deadline stopped", { stopped: n });
      })
      .catch((err: unknown) => log.warn("sweeping unknown outcomes failed; trying again at the next tick", { error: String(err) }));
  }, deps.intervalMs ?? 1000);
  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
      await producer.disconnect();
    },
  };
}
