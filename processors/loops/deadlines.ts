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
 *
 * Every few seconds it also closes the approvals whose job ended (`closing.ts`): for each job
 * with an approval waiting, how the job stands is read from its tree's limits hash
 * (`processors/limits/standing.ts`), and an approval of a job that ended gets a closing answer,
 * which `loop-approvals` settles like any first answer; its deadline and steps are then dropped.
 */
import type { Producer } from "kafkajs";
import type { Serde } from "../../schemas/serde.ts";
import type { Decision } from "../../schemas/types.ts";
import { deriveId } from "../runner/ids.ts";
import type { Logger } from "../runner/log.ts";
import type { AgentDefinition } from "../../config/agent.ts";
import type { StandingStore } from "../limits/store.ts";
import { closingAnswer, jobEnding } from "./closing.ts";
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

/** What the timer needs to close the approvals of jobs that ended. */
export interface EndedJobs {
  /** Every deadline and escalation step watched (the store's `watched`). */
  watched(): Promise<TimerEntry[]>;
  /** The jobs' limits-hash fields (`StandingStore.read`). */
  readonly standing: Pick<StandingStore, "read">;
  /** The agent's definition, for its limits.timeout; null reads only the endings kept. */
  readonly agentOf: ((name: string) => AgentDefinition | undefined) | null;
  /** How often to look, ms. @default 5000 */
  readonly everyMs?: number;
}

/**
 * Publishes a closing answer for every watched approval whose job ended (up to `limit`), then
 * drops its deadline and escalation steps; returns how many. A person's answer that came first
 * wins in `loop-approvals`; a closing answer published twice is one answer.
 */
export async function sweepEnded(store: Pick<LoopStore, "dropDeadlines">, ended: Omit<EndedJobs, "everyMs">, publish: PublishAnswers, now: number, limit = 500): Promise<number> {
  const entries = await ended.watched();
  const waiting = entries.filter((e) => e.step === undefined);
  if (waiting.length === 0) return 0;
  const jobKey = (e: TimerEntry) => `${e.tenant}\u0000${e.tree_id}\u0000${e.job_id}`;
  const jobs = [...new Map(waiting.map((e) => [jobKey(e), { tenant: e.tenant, tree: e.tree_id, job: e.job_id }])).entries()];
  const fields = await ended.standing.read(jobs.map(([, j]) => j));
  const endings = new Map(jobs.map(([k], i) => [k, jobEnding(fields[i] ?? [], now, ended.agentOf)]));
  const closing = waiting.flatMap((e) => {
    const ending = endings.get(jobKey(e));
    return ending ? [{ e, ending }] : [];
  }).slice(0, limit);
  if (closing.length === 0) return 0;
  await publish(closing.map(({ e, ending }) => closingAnswer(e, ending, now)));
  const closed = new Set(closing.map(({ e }) => e.approval));
  await store.dropDeadlines(entries.filter((e) => closed.has(e.approval)));
  return closing.length;
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
export function startDeadlineTimer(options: { store: LoopStore; publish: PublishAnswers; log: Logger; intervalMs?: number; now?: () => number; ended?: EndedJobs }): DeadlineTimer {
  const now = options.now ?? Date.now;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  let endedAt = -Infinity;
  const tick = (): void => {
    running = running
      .then(async () => {
        if (stopped) return;
        const n = await sweepDeadlines(options.store, options.publish, now());
        if (n > 0) options.log.info("loop deadlines or escalation steps passed", { passed: n });
        const ended = options.ended;
        if (ended && now() - endedAt >= (ended.everyMs ?? 5000)) {
          endedAt = now();
          const closed = await sweepEnded(options.store, ended, options.publish, now());
          if (closed > 0) options.log.info("approvals closed with their job's end", { closed });
        }
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
