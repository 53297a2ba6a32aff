/**
 * Matches answers to the events they answer, by the event's ID: a waiter per awaited ID with
 * a timeout, and answers that came before anyone awaited them kept for a while, so publishing
 * and awaiting may happen in either order. Pure apart from timers.
 */

export interface CorrelatorOptions {
  /** How long an answer nobody awaited is kept. @default 120000 */
  keepMs?: number;
  /** Most answers kept for later; the oldest goes first. @default 100000 */
  maxKept?: number;
  now?: () => number;
}

interface Waiter<T> {
  resolve(value: T): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class Correlator<T> {
  private readonly waiting = new Map<string, Waiter<T>>();
  /** In arrival order, so the oldest is first to go. */
  private readonly kept = new Map<string, { value: T; at: number }>();
  private readonly keepMs: number;
  private readonly maxKept: number;
  private readonly now: () => number;

  constructor(opts: CorrelatorOptions = {}) {
    this.keepMs = opts.keepMs ?? 120_000;
    this.maxKept = opts.maxKept ?? 100_000;
    this.now = opts.now ?? Date.now;
  }

  /**
   * The answer to `id`: one already kept, else the next to arrive; rejects with `timedOut()`
   * after `timeoutMs`. One waiter per ID: a second wait for the same ID is a mistake.
   */
  wait(id: string, timeoutMs: number, timedOut: () => Error): Promise<T> {
    const early = this.kept.get(id);
    if (early && this.now() - early.at <= this.keepMs) {
      this.kept.delete(id);
      return Promise.resolve(early.value);
    }
    if (this.waiting.has(id)) return Promise.reject(new Error(`${id} is already awaited: await the first promise instead of waiting twice`));
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(timedOut());
      }, timeoutMs);
      this.waiting.set(id, { resolve, reject, timer });
    });
  }

  /**
   * An answer arrived: its waiter takes it, else it is kept for a later `wait` unless one
   * for the same ID is kept already (the first answer to an event is the one that counts).
   * Returns whether a waiter took it.
   */
  deliver(id: string, value: T): boolean {
    const w = this.waiting.get(id);
    if (w) {
      clearTimeout(w.timer);
      this.waiting.delete(id);
      w.resolve(value);
      return true;
    }
    this.prune();
    if (!this.kept.has(id)) {
      if (this.kept.size >= this.maxKept) {
        const oldest = this.kept.keys().next();
        if (!oldest.done) this.kept.delete(oldest.value);
      }
      this.kept.set(id, { value, at: this.now() });
    }
    return false;
  }

  /** Rejects the waiter of `id`, if any, with `err`. */
  cancel(id: string, err: Error): void {
    const w = this.waiting.get(id);
    if (!w) return;
    clearTimeout(w.timer);
    this.waiting.delete(id);
    w.reject(err);
  }

  /** Rejects every waiter, such as when the client closes. */
  rejectAll(reason: (id: string) => Error): void {
    for (const [id, w] of this.waiting) {
      clearTimeout(w.timer);
      w.reject(reason(id));
    }
    this.waiting.clear();
    this.kept.clear();
  }

  get awaited(): number {
    return this.waiting.size;
  }

  get keptCount(): number {
    return this.kept.size;
  }

  private prune(): void {
    const cutoff = this.now() - this.keepMs;
    for (const [id, k] of this.kept) {
      if (k.at >= cutoff) break;
      this.kept.delete(id);
    }
  }
}
