/**
 * Batches that yield. The sinks fetch every few seconds and bring every partition of their
 * topics at once; decoding them and building their objects is work for the thread that decides
 * the runtimes' batches, and done back to back it held those batches behind it: every ten
 * seconds, when the sinks' fetch came, answers waited 50 to 200 ms (docs/load.md, "The sinks'
 * fetch, and answers held behind it"). A yielding transport starts each of its batches on an
 * event-loop turn of its own, so between any two of them the thread takes what came meanwhile
 * (another application's batches, the answers of Redis and MinIO) before going on.
 */
import { wholeFromEnv, type Env } from "./settings.ts";
import type { BatchHandler, Transport } from "./transport.ts";

/** Batches a yielding application has in hand at once unless told. */
export const DEFAULT_YIELDING_AT_ONCE = 2;

/** `OZ0_SINK_BATCHES_AT_ONCE`: the sinks' batches in hand at once (1 to 64, default 2). */
export function sinkBatchesAtOnceFromEnv(env: Env = process.env): number {
  return wholeFromEnv(env, "OZ0_SINK_BATCHES_AT_ONCE", DEFAULT_YIELDING_AT_ONCE, 1, 64);
}

/**
 * A lane for batches that may wait: at most `atOnce` in hand at a time, in the order they came,
 * each started on an event-loop turn of its own (a `setImmediate` callback), so timers and I/O
 * that became ready meanwhile run before the next one starts. Few at once also keeps few of its
 * requests queued at the stores a deciding batch shares with it (MinIO's puts, Redis).
 */
export class Yielding {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private scheduled = false;
  readonly atOnce: number;

  constructor(atOnce = DEFAULT_YIELDING_AT_ONCE) {
    if (!Number.isInteger(atOnce) || atOnce < 1) throw new Error(`a yielding lane takes at least one batch at once, not ${atOnce}`);
    this.atOnce = atOnce;
  }

  /** Runs `fn` once its turn comes, on an event-loop turn of its own; the next waits for a place. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    await new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.pump();
    });
    try {
      return await fn();
    } finally {
      this.running--;
      this.pump();
    }
  }

  /** Waiting for a place now. */
  get queued(): number {
    return this.waiting.length;
  }

  private pump(): void {
    if (this.scheduled || this.waiting.length === 0 || this.running >= this.atOnce) return;
    this.scheduled = true;
    setImmediate(this.next);
  }

  private readonly next = (): void => {
    this.scheduled = false;
    const resolve = this.waiting.shift();
    if (resolve === undefined) return;
    this.running++;
    resolve();
    // The next one starts on the loop's next turn at the soonest: after its timers and its I/O.
    this.pump();
  };
}

/** `transport`, its handler run for each batch in `lane` (one lane may serve several transports). */
export function yieldingTransport(transport: Transport, lane: Yielding): Transport {
  return {
    start: (handler: BatchHandler) => transport.start((records, ctx) => lane.run(() => handler(records, ctx))),
    stop: () => transport.stop(),
  };
}
