/**
 * Turns to handle an application's batches: at most `atOnce` in hand at a time, taken in the
 * order asked for. One bound per application, wherever its Kafka client runs: the Kafka thread
 * takes its batches through one (`kafka-thread.ts`), and a transport in this thread through
 * `takingTurns`.
 *
 * Batches handled all at once share the thread evenly and so all finish late, together, and
 * their commits then come all at once; taken a few at a time, the first is done early and its
 * commit runs while the next is handled.
 *
 * An application whose outputs no runtime awaits (the sinks) also takes each turn on an
 * event-loop turn of its own (`ownLoopTurn`): a `setImmediate` before it starts, so timers and
 * I/O that became ready meanwhile (a deciding batch handed over by the Kafka thread, Redis's and
 * MinIO's answers) run first. The sinks' fetch brings every partition of their topics at once,
 * and handled back to back it held the runtimes' answers behind it (docs/load.md, "The sinks'
 * fetch, and answers held behind it"). Such an application may also start its turns at least
 * `gapMs` apart: on turns of their own its batches still began as soon as the last ended, and
 * the sinks' writes came to MinIO in one burst a window, which took both cores for a moment
 * (docs/load.md, "The sinks' writes spread out"). And it may spread a burst of batches (a
 * fetch's, handed over at once) evenly over up to `spreadMs`: 50 ms apart, a fetch of 56
 * batches still came to MinIO within 3 s of a 10-s window, and under 3,000 agents the answers
 * of those seconds waited (docs/load.md, "A fetch's writes spread over its window"). A burst is
 * spread over at most `SPREAD_SHARE` of the time since the burst before began, so that a
 * consumer behind (its fetches full at once, one after the other) spreads each less than the
 * last, down to `gapMs`, and catches up. When the application stops, its transport `hurry`s
 * the turns: the batches still waiting start one after the other, with no gap or spread.
 */
import type { BatchHandler, Transport } from "./transport.ts";

export interface TurnsOptions {
  /** Start each holder on an event-loop turn of its own, after what became ready meanwhile. */
  readonly ownLoopTurn?: boolean;
  /** With `ownLoopTurn`: start each holder at least this many ms after the one before started. @default 0 */
  readonly gapMs?: number;
  /**
   * With `ownLoopTurn`: spread the starts of a burst (holders asking while none is in hand or
   * waiting, and those that join them before the last has started) evenly over up to this many
   * ms from its first ask, and over at most `SPREAD_SHARE` of the time since the burst before
   * began; two starts never more than `MAX_SPREAD_GAP_MS` apart. @default 0 (no spread)
   */
  readonly spreadMs?: number;
}

/** The share of the time since the last burst began that a burst is spread over, at most. */
export const SPREAD_SHARE = 0.8;

/** The longest a spread burst's holder waits after the one before started. */
export const MAX_SPREAD_GAP_MS = 1_000;

export class Turns {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private scheduled = false;
  readonly atOnce: number;
  private readonly ownLoopTurn: boolean;
  private readonly gapMs: number;
  private readonly spreadMs: number;
  private lastStart = -Infinity;
  /** When the last burst began, and by when its holders are to have started. */
  private burstAt = -Infinity;
  private spreadEnd = -Infinity;
  /** Set by `hurry`: those waiting start without the gap or the spread, until none waits. */
  private hurried = false;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(atOnce: number, options: TurnsOptions = {}) {
    if (!Number.isInteger(atOnce) || atOnce < 1) throw new Error(`turns take at least one batch at once, not ${atOnce}`);
    const gapMs = options.gapMs ?? 0;
    if (!(Number.isFinite(gapMs) && gapMs >= 0)) throw new Error(`the gap between turns is 0 ms or more, not ${gapMs}`);
    if (gapMs > 0 && !options.ownLoopTurn) throw new Error("a gap between turns needs each turn on an event-loop turn of its own (ownLoopTurn)");
    const spreadMs = options.spreadMs ?? 0;
    if (!(Number.isFinite(spreadMs) && spreadMs >= 0)) throw new Error(`the span a burst of turns is spread over is 0 ms or more, not ${spreadMs}`);
    if (spreadMs > 0 && !options.ownLoopTurn) throw new Error("a burst of turns spread out needs each turn on an event-loop turn of its own (ownLoopTurn)");
    this.atOnce = atOnce;
    this.ownLoopTurn = options.ownLoopTurn ?? false;
    this.gapMs = gapMs;
    this.spreadMs = spreadMs;
  }

  /** Runs `fn` once its turn comes; the next in line waits for a place. `hurried`: asked while the application stops, so it and those waiting are hurried. */
  async run<T>(fn: () => Promise<T>, hurried = false): Promise<T> {
    if (this.ownLoopTurn) {
      await new Promise<void>((resolve) => {
        if (this.spreadMs > 0 && this.running === 0 && this.waiting.length === 0) this.beginBurst();
        this.waiting.push(resolve);
        if (hurried) this.hurry();
        this.schedule();
      });
    } else if (this.running >= this.atOnce) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  private release(): void {
    if (this.ownLoopTurn) {
      this.running--;
      this.schedule();
      return;
    }
    const next = this.waiting.shift();
    // The place passes straight to the next in line, so a newcomer cannot take it first.
    if (next) next();
    else this.running--;
  }

  /**
   * Those waiting now start one after the other, each on an event-loop turn of its own, without
   * the gap or the spread: the application stops, and a fetch's batches spread over its window
   * would hold the stop up to the spread (8 s for the sinks) for no one's sake.
   */
  hurry(): void {
    if (this.waiting.length === 0) return;
    this.hurried = true;
    if (this.timer === null) return;
    clearTimeout(this.timer);
    this.timer = null;
    setImmediate(this.startNext);
  }

  /** A burst begins: its starts are spread until `spreadEnd`. */
  private beginBurst(): void {
    const now = performance.now();
    const span = Number.isFinite(this.burstAt) ? Math.min(this.spreadMs, SPREAD_SHARE * (now - this.burstAt)) : 0;
    this.burstAt = now;
    this.spreadEnd = now + span;
  }

  /** How long after the last start the next may start: the gap, or the burst's time left shared by those waiting. */
  private nextGap(): number {
    if (this.hurried) return 0;
    const waiting = this.waiting.length;
    if (this.spreadMs <= 0 || waiting === 0) return this.gapMs;
    const share = (this.spreadEnd - this.lastStart) / waiting;
    return Math.max(this.gapMs, Math.min(MAX_SPREAD_GAP_MS, share));
  }

  private schedule(): void {
    if (this.scheduled || this.waiting.length === 0 || this.running >= this.atOnce) return;
    this.scheduled = true;
    setImmediate(this.startNext);
  }

  private readonly startNext = (): void => {
    // Until the gap has passed, as performance.now() reads it: a timer may fire a little before
    // its time by that clock (the event loop's is read once a turn), and then waits out the rest.
    this.timer = null;
    const rest = this.lastStart + this.nextGap() - performance.now();
    if (rest > 0) {
      this.timer = setTimeout(this.startNext, Math.ceil(rest));
      return;
    }
    this.scheduled = false;
    const resolve = this.waiting.shift();
    if (this.waiting.length === 0) this.hurried = false;
    if (resolve === undefined) return;
    this.running++;
    this.lastStart = performance.now();
    resolve();
    // The next one starts on the loop's next turn at the soonest: after its timers and its I/O.
    this.schedule();
  };
}

/** `transport`, its handler run for each batch in a turn of `turns`; a stop hurries the turns. */
export function takingTurns(transport: Transport, turns: Turns): Transport {
  let stopping = false;
  return {
    start: (handler: BatchHandler) => {
      stopping = false;
      return transport.start((records, ctx) => turns.run(() => handler(records, ctx), stopping));
    },
    stop: () => {
      stopping = true;
      turns.hurry();
      return transport.stop();
    },
  };
}
