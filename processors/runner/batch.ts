/**
 * The part of running a batch that is the same in Kafka and in memory: validate, call the
 * core, check its outputs, and turn every unusable input into a dead letter with its reason.
 * Retries of a failing core live here too, and the isolation of the one record that fails it
 * (`isolate.ts`, the same for the cores that decide in groups), so one bad message never stops
 * a processor.
 */
import { schemaViolations } from "../../schemas/catalog.ts";
import type { DeadLetterError } from "../../schemas/types.ts";
import { topic } from "../../topology/topics.ts";
import { isRetriable, messageOf } from "./errors.ts";
import { eachAlone, failedOutcome } from "./isolate.ts";
import { type Emit, type InputRecord, type Outcome, type Processor } from "./processor.ts";

export interface Rejected {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly error: DeadLetterError;
  readonly reason: string;
}

export interface BatchResult {
  readonly emits: Emit[];
  readonly rejected: Rejected[];
  /** Each input whose outputs are in `emits`, with them, in input order. */
  readonly answered: Array<{ readonly input: InputRecord<unknown>; readonly emits: readonly Emit[] }>;
}

export interface BatchOptions {
  /** Called before each retry of a core that failed with a retriable error; throw to give up. */
  onRetry?: (err: unknown, attempt: number) => Promise<void>;
  /** Non-retriable failures of a whole batch before its records are tried one by one. */
  isolateAfter?: number;
  /**
   * Why one output (already known to fit its schema) cannot be written, such as a record larger
   * than its topic takes; the input it answers is dead-lettered with that reason instead.
   */
  checkEmit?: (e: Emit) => string | undefined;
}

function reject(r: InputRecord<unknown>, error: DeadLetterError, reason: string): Rejected {
  return { topic: r.topic, partition: r.partition, offset: r.offset, error, reason };
}

function checkEmits<In, Env>(p: Processor<In, Env>, emits: readonly Emit[]): string | undefined {
  for (const e of emits) {
    if (!p.outputs.includes(e.to)) return `processor ${p.name} emitted to ${e.to}, which is not one of its outputs`;
    const problems = schemaViolations(topic(e.to).schema, e.value);
    if (problems.length > 0) return `processor ${p.name} emitted a ${topic(e.to).schema} to ${e.to} that does not fit its schema: ${problems.join("; ")}`;
  }
  return undefined;
}

function firstDefined(emits: readonly Emit[], check: (e: Emit) => string | undefined): string | undefined {
  for (const e of emits) {
    const wrong = check(e);
    if (wrong !== undefined) return wrong;
  }
  return undefined;
}

async function callCore<In, Env>(p: Processor<In, Env>, records: InputRecord<In>[], env: Env, opts: BatchOptions): Promise<Outcome[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      const outcomes = await p.process(records, env);
      if (outcomes.length !== records.length) {
        throw new Error(`processor ${p.name} returned ${outcomes.length} outcomes for ${records.length} inputs`);
      }
      return outcomes;
    } catch (err) {
      if (!isRetriable(err) || !opts.onRetry) throw err;
      await opts.onRetry(err, attempt);
    }
  }
}

export async function runBatch<In, Env>(p: Processor<In, Env>, records: InputRecord<In>[], env: Env, opts: BatchOptions = {}): Promise<BatchResult> {
  const rejected: Rejected[] = [];
  const valid: InputRecord<In>[] = [];
  for (const r of records) {
    let reasons: string[];
    try {
      reasons = p.validate ? p.validate(r.value) : [];
    } catch (err) {
      reasons = [`validation failed: ${messageOf(err)}`];
    }
    if (reasons.length > 0) rejected.push(reject(r, "invalid", reasons.join("; ")));
    else valid.push(r);
  }
  if (valid.length === 0) return { emits: [], rejected, answered: [] };

  let outcomes: Outcome[];
  const isolateAfter = opts.isolateAfter ?? 1;
  let failures = 0;
  for (;;) {
    try {
      outcomes = await callCore(p, valid, env, opts);
      break;
    } catch (err) {
      // A retriable failure that outlived its retries (or a stop) leaves the batch uncommitted.
      if (isRetriable(err)) throw err;
      failures++;
      if (failures < isolateAfter) continue;
      // One record may be what breaks the batch: try each alone (`isolate.ts`), and dead-letter
      // only those that still fail.
      outcomes = valid.length === 1 ? [failedOutcome(err)] : await eachAlone(valid, (rs) => callCore(p, rs, env, opts));
      break;
    }
  }

  const emits: Emit[] = [];
  const answered: BatchResult["answered"] = [];
  outcomes.forEach((o, i) => {
    const r = valid[i] as InputRecord<In>;
    if ("invalid" in o) rejected.push(reject(r, o.error ?? "invalid", o.invalid));
    else {
      const wrong = checkEmits(p, o.emits) ?? (opts.checkEmit ? firstDefined(o.emits, opts.checkEmit) : undefined);
      if (wrong) rejected.push(reject(r, "failed", wrong));
      else {
        emits.push(...o.emits);
        answered.push({ input: r, emits: o.emits });
      }
    }
  });
  // Dead letters in input order, as a person reading the topic expects.
  rejected.sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
  return { emits, rejected, answered };
}
