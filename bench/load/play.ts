/**
 * Plays the trees of a plan as runtimes would, through a runtime client: each runtime takes
 * the next tree and walks its steps in order, publishing each event and awaiting its answer
 * where there is one, and honouring it (a refused child is not started, a job stopped by its
 * budget or a loop makes no more calls, a refused call gets no result, a read goes to the ref
 * the offloaded result's stub named). What it measures goes into a Recorder.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Decision, JobEvent, ModelCall, ResultDelivered, ToolCall, ToolResult } from "../../schemas/types.ts";
import { STEP_KINDS, type Plan, type Step, type StepKind, type Tree } from "./mix.ts";
import { Oz0Error } from "../../lib/errors.ts";
import { NoAnswer } from "../../client/runtime-client.ts";

/** What a runtime publishes and awaits: the runtime client's methods the load uses. */
export interface LoadTarget {
  askModelCall(ask: ModelCall, timeoutMs?: number): Promise<Decision>;
  askChild(ask: JobEvent, timeoutMs?: number): Promise<Decision>;
  requestToolCall(call: ToolCall, timeoutMs?: number): Promise<Decision>;
  deliverToolResult(result: ToolResult, timeoutMs?: number): Promise<ResultDelivered>;
  readResult(call: ToolCall, timeoutMs?: number): Promise<ResultDelivered>;
  awaitAdmission(eventId: string, timeoutMs?: number): Promise<Decision>;
  publishModelCalls(calls: readonly ModelCall[]): Promise<void>;
  publishJobEvents(events: readonly JobEvent[]): Promise<void>;
}

/** The exchanges whose latency is measured, from the publish to the answer the runtime awaits. */
export const MEASURED = {
  model_ask: { exchange: "model-call ask to admission", processor: "limits-model-calls" },
  child: { exchange: "child ask or start to admission", processor: "limits-jobs" },
  tool_call: { exchange: "tool call to call decision", processor: "budget-fill-in, loop-calls" },
  tool_result: { exchange: "tool result to delivered result", processor: "fit-results" },
  read_result: { exchange: "oz.read_result to its answer", processor: "budget-fill-in, read-result" },
} as const;
export type Measured = keyof typeof MEASURED;
export const MEASURED_KINDS = Object.keys(MEASURED) as Measured[];

const zero = <K extends string>(keys: readonly K[]): Record<K, number> => Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;

export class Recorder {
  readonly latencies = Object.fromEntries(MEASURED_KINDS.map((k) => [k, [] as number[]])) as Record<Measured, number[]>;
  /** When each answer of `latencies` came (ms since epoch), in the same order: a soak windows them. */
  readonly answeredAt = Object.fromEntries(MEASURED_KINDS.map((k) => [k, [] as number[]])) as Record<Measured, number[]>;
  readonly unanswered = zero(MEASURED_KINDS);
  /** Events published by step kind. */
  readonly published = zero<StepKind>(STEP_KINDS);
  /** When each event was published (ms since epoch). */
  readonly sentAt: number[] = [];
  /** `<measured>:<verdict>` (or `tool_result:offloaded`, `:fitted`, `:as-is`, `:failed`) to count. */
  readonly outcomes = new Map<string, number>();
  offloaded = 0;
  offloadedBytes = 0;
  treesDone = 0;
  treesCut = 0;
  firstAt: number | undefined;
  lastAt: number | undefined;
  readonly errors: string[] = [];

  sent(kind: StepKind, at: number): void {
    this.published[kind]++;
    this.sentAt.push(at);
    this.firstAt ??= at;
    this.lastAt = Math.max(this.lastAt ?? at, at);
  }

  answered(kind: Measured, sentAt: number, at: number, outcome: string): void {
    this.latencies[kind].push(at - sentAt);
    this.answeredAt[kind].push(at);
    this.lastAt = Math.max(this.lastAt ?? at, at);
    this.count(`${kind}:${outcome}`);
  }

  count(key: string): void {
    this.outcomes.set(key, (this.outcomes.get(key) ?? 0) + 1);
  }

  get events(): number {
    return this.sentAt.length;
  }

  get answers(): number {
    return MEASURED_KINDS.reduce((s, k) => s + this.latencies[k].length, 0);
  }
}

export interface PlayOptions {
  /** When to stop starting steps; every await ends by then too. */
  readonly deadline: number;
  /** The longest one await lasts. @default 30000 */
  readonly answerTimeoutMs?: number;
  /**
   * How long past the deadline an answer asked for before it may still come (within the
   * answer timeout): agents play until the time is up, so some await an answer then.
   * @default 0
   */
  readonly graceMs?: number;
  /**
   * How long to wait before each step of a tree, in ms (bench/load/pace.ts): an agent's think
   * and tool times. A step skipped (its job stopped, its call refused) skips its wait too. A
   * wait is never part of a latency; one that reaches the deadline ends the tree there.
   * Without it, each step follows the last answer at once.
   */
  readonly waits?: ReadonlyMap<Tree, readonly number[]>;
}

/** Where an offloaded result's stub names its file, in what the model reads. */
export function offloadOf(d: ResultDelivered): { ref: string; size: number } | undefined {
  try {
    const parsed = JSON.parse(d.content) as { _meta?: Record<string, unknown> };
    const o = parsed._meta?.["oz0/offload"] as { ref?: unknown; size?: unknown } | undefined;
    if (o && typeof o.ref === "string") return { ref: o.ref, size: typeof o.size === "number" ? o.size : 0 };
  } catch {
    // Not JSON: not a stub.
  }
  return undefined;
}

class NoTime extends Oz0Error {}

/** Plays one tree; returns false when it was cut short (out of time, or an answer did not come). */
export async function playTree(tree: Tree, target: LoadTarget, rec: Recorder, opts: PlayOptions): Promise<boolean> {
  const stopped = new Set<string>();
  const notStarted = new Set<string>();
  const skipCalls = new Set<string>();
  const refs = new Map<string, string>();
  const timeout = (): number => {
    const left = opts.deadline - Date.now();
    if (left <= 0) throw new NoTime();
    return Math.min(opts.answerTimeoutMs ?? 30_000, left + (opts.graceMs ?? 0));
  };
  async function exchange<T>(kind: Measured, step: StepKind, send: (at: number, t: number) => Promise<T>, outcome: (answer: T) => string): Promise<T> {
    const t = timeout();
    const at = Date.now();
    rec.sent(step, at);
    try {
      const answer = await send(at, t);
      rec.answered(kind, at, Date.now(), outcome(answer));
      return answer;
    } catch (err) {
      if (err instanceof NoAnswer) rec.unanswered[kind]++;
      throw err;
    }
  }
  const verdict = (d: Decision): string => (d.reason_code ? `${d.verdict} ${d.reason_code}` : d.verdict);
  const waits = opts.waits?.get(tree);
  const pause = async (ms: number): Promise<void> => {
    const left = opts.deadline - Date.now();
    if (ms >= left) {
      // Waiting when the time is up: the agent simply stops.
      if (left > 0) await sleep(left);
      throw new NoTime();
    }
    await sleep(ms);
  };
  try {
    for (const [i, step] of tree.steps.entries()) {
      const job = step.event.job_id;
      if (notStarted.has(job)) continue;
      if (stopped.has(job) && step.kind !== "job_ended") continue;
      if (step.kind === "tool_result" && skipCalls.has(step.event.call_id)) continue;
      const wait = waits?.[i] ?? 0;
      if (wait > 0) await pause(wait);
      await play(step);
    }
    return true;
  } catch (err) {
    if (!(err instanceof NoTime) && !(err instanceof NoAnswer) && rec.errors.length < 20) rec.errors.push(err instanceof Error ? err.message : String(err));
    return false;
  }

  async function play(step: Step): Promise<void> {
    const job = step.event.job_id;
    switch (step.kind) {
      case "job_started": {
        if (step.event.parent_job_id === null) {
          timeout();
          const at = Date.now();
          rec.sent(step.kind, at);
          await target.publishJobEvents([{ ...step.event, ts: at }]);
          return;
        }
        const d = await exchange(
          "child",
          step.kind,
          async (at, t) => {
            const answer = target.awaitAdmission(step.event.id, t);
            // It may time out before the publish returns: the rejection is taken from `answer` below.
            answer.catch(() => undefined);
            await target.publishJobEvents([{ ...step.event, ts: at }]);
            return answer;
          },
          verdict,
        );
        if (d.verdict !== "allow") stopped.add(job);
        return;
      }
      case "child_ask": {
        const d = await exchange("child", step.kind, (at, t) => target.askChild({ ...step.event, ts: at }, t), verdict);
        if (d.verdict !== "allow") notStarted.add(job);
        return;
      }
      case "model_ask": {
        const d = await exchange("model_ask", step.kind, (at, t) => target.askModelCall({ ...step.event, ts: at }, t), verdict);
        // Anything but allow (a stop, a refusal, a wait for a person) ends the job here.
        if (d.verdict !== "allow") stopped.add(job);
        return;
      }
      case "model_usage": {
        timeout();
        const at = Date.now();
        rec.sent(step.kind, at);
        await target.publishModelCalls([{ ...step.event, ts: at }]);
        return;
      }
      case "tool_call": {
        const d = await exchange("tool_call", step.kind, (at, t) => target.requestToolCall({ ...step.event, ts: at }, t), verdict);
        if (d.verdict === "refuse") skipCalls.add(step.event.call_id);
        if (d.verdict === "stop" || d.verdict === "wait") stopped.add(job);
        return;
      }
      case "tool_result": {
        if (skipCalls.has(step.event.call_id)) return;
        const d = await exchange(
          "tool_result",
          step.kind,
          (at, t) => target.deliverToolResult({ ...step.event, ts: at }, t),
          (r) => {
            const o = offloadOf(r);
            if (o) {
              rec.offloaded++;
              rec.offloadedBytes += o.size;
            }
            return r.is_error ? "failed" : o ? "offloaded" : r.fit !== null ? "fitted" : "as-is";
          },
        );
        const o = offloadOf(d);
        if (o) refs.set(step.event.id, o.ref);
        return;
      }
      case "read_result": {
        const args = { ref: refs.get(step.of) ?? step.ref, ...step.args };
        await exchange("read_result", step.kind, (at, t) => target.readResult({ ...step.event, arguments: JSON.stringify(args), ts: at }, t), (r) => (r.is_error ? "failed" : "read"));
        return;
      }
      case "job_ended": {
        timeout();
        const at = Date.now();
        rec.sent(step.kind, at);
        await target.publishJobEvents([{ ...step.event, outcome: stopped.has(job) ? "failed" : step.event.outcome, ts: at }]);
        return;
      }
    }
  }
}

/** `runtimes` runtimes at once, each taking the next tree until none is left or time is up. */
export async function playAll(plan: Plan, target: LoadTarget, rec: Recorder, opts: PlayOptions & { readonly runtimes: number }): Promise<void> {
  let next = 0;
  const runtime = async (): Promise<void> => {
    while (Date.now() < opts.deadline) {
      const tree = plan.trees[next++];
      if (!tree) return;
      if (await playTree(tree, target, rec, opts)) rec.treesDone++;
      else rec.treesCut++;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.runtimes) }, runtime));
}

/**
 * `agents` agents at once, each starting at its own time (`starts`, ms after now) and then
 * taking the next tree until none is left or time is up, waiting before each step as
 * `opts.waits` says. An agent still waiting to start when time is up plays nothing.
 */
export async function playAgents(plan: Plan, target: LoadTarget, rec: Recorder, opts: PlayOptions & { readonly starts: readonly number[] }): Promise<void> {
  let next = 0;
  const agent = async (start: number): Promise<void> => {
    const left = opts.deadline - Date.now();
    if (start >= left) {
      if (left > 0) await sleep(left);
      return;
    }
    if (start > 0) await sleep(start);
    while (Date.now() < opts.deadline) {
      const tree = plan.trees[next++];
      if (!tree) return;
      if (await playTree(tree, target, rec, opts)) rec.treesDone++;
      else rec.treesCut++;
    }
  };
  await Promise.all(opts.starts.map(agent));
}
