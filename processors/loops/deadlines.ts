/**
 * LOOP-5: a loop's approval that nobody decides in time stops the job, even when nothing else
 * happens in the run. A timer polls the sorted set of deadlines; each passed deadline is
 * published to `oz0.loop-approvals` as an answer (verdict `stop`, from `loop-deadlines`), which
 * `loop-approvals` decides like a denial, in order with people's answers, in a Kafka
 * transaction. A deadline is dropped only after its answer was published, so a crash between
 * publishes it twice at worst, and the second answer changes nothing (the first answer wins).
 *
 * The steps of a tenant's escalation ladder are watched the same way: each passed step is
 * published as a `wait` (reason LoopEscalated, the step and who it goes to in the evidence),
 * with an ID derived from the approval and the step, and `loop-approvals` takes each step once
 * (a flag per step in the run's state), and none once the loop is decided. So a step published
 * twice, by a restart or by two timers, is still taken once.
 */
import type { Producer } from "kafkajs";
import type { Serde } from "../../schemas/serde.ts";
import type { Decision } from "../../schemas/types.ts";
import { deriveId } from "../runner/ids.ts";
import type { Logger } from "../runner/log.ts";
import type { LoopStore, TimerEntry } from "./store.ts";

export const LOOP_DEADLINES = "loop-deadlines";

/** The answer a passed deadline gives: deterministic, so a deadline published twice is one answer. */
export function expiryAnswer(d: TimerEntry): Decision {
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

/** What a passed step of the escalation ladder publishes: deterministic, so a step published twice is one step. */
export function escalationNotice(e: TimerEntry & { readonly step: number }): Decision {
  return {
    id: deriveId(LOOP_DEADLINES, e.approval, "step", e.step),
    input_id: e.approval,
    processor: LOOP_DEADLINES,
    tenant: e.tenant,
    tree_id: e.tree_id,
    job_id: e.job_id,
    run_id: e.run_id,
    subject: e.approval,
    verdict: "wait",
    reason_code: "LoopEscalated",
    limit: null,
    numbers: { step: e.step },
    message: "",
    evidence: JSON.stringify({ escalation: { step: e.step, to: e.to ?? "" } }),
    ts: e.at,
  };
}

function published(e: TimerEntry): Decision {
  return e.step === undefined ? expiryAnswer(e) : escalationNotice({ ...e, step: e.step });
}

export type PublishAnswers = (answers: Decision[]) => Promise<void>;

/**
 * Publishes what every deadline and escalation step passed by `now` gives (up to `limit`, oldest
 * first, so a run's steps come before its deadline), then drops them; returns how many.
 */
export async function sweepDeadlines(store: LoopStore, publish: PublishAnswers, now: number, limit = 500): Promise<number> {
  const due = await store.dueDeadlines(now, limit);
  if (due.length === 0) return 0;
  await publish(due.map(published));
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
        if (n > 0) options.log.info("loop deadlines or escalation steps passed", { passed: n });
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
