/**
 * Stopping a process of several parts: every part is stopped whatever another's stop did, each
 * failure is kept with the part's name, and once all have settled one error names them all. So a
 * stop that fails hides no other, and no stop's rejection is left unobserved.
 */
import { Oz0Error } from "./errors.ts";

/** One part that failed to stop, and why. */
export interface StopFailure {
  readonly part: string;
  readonly error: unknown;
}

const words = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Some parts of `what` failed to stop: each is named with its error; the errors are the cause. */
export class StopFailed extends Oz0Error {
  readonly failures: readonly StopFailure[];
  constructor(what: string, failures: readonly StopFailure[]) {
    super(`${what} did not stop cleanly: ${failures.map((f) => `${f.part} failed to stop (${words(f.error)})`).join("; ")}`, {
      cause: new AggregateError(
        failures.map((f) => f.error),
        `${failures.length} part(s) of ${what} failed to stop`,
      ),
    });
    this.name = "StopFailed";
    this.failures = failures;
  }
}

/**
 * The stops of one shutdown. `stop` runs a part's stop and settles when it has, never rejecting:
 * a failure is kept. `done` throws one StopFailed naming every part that failed, once the caller
 * has awaited all of them.
 */
export class Shutdown {
  readonly #what: string;
  readonly #failures: StopFailure[] = [];
  readonly #stopping = new Map<number, string>();
  #next = 0;

  /** `what` is what stops, as the error names it ("the pipeline"). */
  constructor(what: string) {
    this.#what = what;
  }

  /** Stops `part`; a throw or rejection is kept, not passed on. */
  async stop(part: string, stop: () => unknown): Promise<void> {
    const n = this.#next++;
    this.#stopping.set(n, part);
    try {
      await stop();
    } catch (error) {
      this.#failures.push({ part, error });
    } finally {
      this.#stopping.delete(n);
    }
  }

  /** The parts whose stop is under way, in the order they began. */
  get stopping(): readonly string[] {
    return [...this.#stopping.values()];
  }

  /**
   * A bound on the whole stop: after `ms`, unless the returned function was called first,
   * `giveUp` is called with the parts still stopping (a process then exits, naming them). The
   * timer keeps no process alive by itself.
   */
  within(ms: number, giveUp: (stopping: readonly string[]) => void): () => void {
    const timer = setTimeout(() => giveUp(this.stopping), ms);
    timer.unref();
    return () => clearTimeout(timer);
  }

  /** The parts that failed so far. */
  get failures(): readonly StopFailure[] {
    return this.#failures;
  }

  /** Throws one StopFailed naming every part that failed to stop; nothing when all stopped. */
  done(): void {
    if (this.#failures.length > 0) throw new StopFailed(this.#what, [...this.#failures]);
  }
}
