/**
 * LOOP-5: a loop's approval that nobody decides in time stops the job, even when nothing else
 * happens in the run. A timer polls the sorted set of deadlines; each passed deadline is
 * published to `oz0.loop-approvals` as an answer (verdict `stop`, from `loop-deadlines`), which
 * `loop-approvals` decides like a denial, in order with people's answers, in a Kafka
 * transaction. A deadline is dropped only after its answer was published, so a crash between
 * publishes it twice at worst, and the second answer changes nothing (the first answer wins).
 */
import type { Producer } from "kafkajs";
import type { Serde } from "../../schemas/serde.ts";
import type { Decision } from "../../schemas/types.ts";
import { deriveId } from "../runner/ids.ts";
import type { Logger } from "../runner/log.ts";
import type { Deadline, LoopStore } from "./store.ts";

export const LOOP_DEADLINES = "loop-deadlines";

/** The answer a passed deadline gives: deterministic, so a deadline published twice is one answer. */
export function expiryAnswer(d: Deadline): Decision {
  return {
    id: deriveId(LOOP_DEADLINES, d.approval),
    input_id: d.approval,
    processor: LOOP_DEADLINES,
    tenant: d.tenant,
    tree_id: d.tree_id,
    job_id: d.job_id,
    run_id: d.run_id,
    subject: d.approval,
    verdict: "stop",
    reason_code: "LoopDetected",
    limit: null,
    numbers: { deadline: d.at },
    message: "",
    evidence: null,
    ts: d.at,
  };
}

export type PublishAnswers = (answers: Decision[]) => Promise<void>;

/** Publishes the answers of every deadline passed by `now` (up to `limit`), then drops them; returns how many. */
export async function sweepDeadlines(store: LoopStore, publish: PublishAnswers, now: number, limit = 500): Promise<number> {
  const due = await store.dueDeadlines(now, limit);
  if (due.length === 0) return 0;
  await publish(due.map(expiryAnswer));
  await store.dropDeadlines(due);
  return due.length;
}

export function kafkaAnswers(producer: Producer, serde: Serde): PublishAnswers {
  return async (answers) => {
    await producer.send({ topic: "oz0.loop-approvals", messages: answers.map((a) => ({ key: a.run_id, value: serde.encode("Decision", a) })) });
  };
}

export interface DeadlineTimer {
  stop(): Promise<void>;
}

/**
 * Sweeps every `intervalMs` until stopped. Several pipeline instances may each run one: a
 * deadline published twice is still one answer.
 */
export function startDeadlineTimer(options: { store: LoopStore; publish: PublishAnswers; log: Logger; intervalMs?: number; now?: () => number }): DeadlineTimer {
  const now = options.now ?? Date.now;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const tick = (): void => {
    running = running
      .then(async () => {
        if (stopped) return;
        const n = await sweepDeadlines(options.store, options.publish, now());
        if (n > 0) options.log.info("loop deadlines passed; the jobs stop", { deadlines: n });
      })
      .catch((err: unknown) => options.log.warn("sweeping loop deadlines failed; trying again at the next tick", { error: String(err) }));
  };
  const timer = setInterval(tick, options.intervalMs ?? 1000);
  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
