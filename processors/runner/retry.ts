/**
 * How a batch whose dependency failed for now is tried again: after a capped exponential
 * backoff with jitter, for as long as it takes (an outage loses nothing), and, once it has
 * failed for longer than a bound of time or attempts, with the processor reporting itself not
 * ready (`/health/ready`, `oz0_processor_dependency_failing`, an error log naming the
 * dependency and what to check) until the batch goes through.
 */
import { type Dependency, dependencyOf, messageOf } from "./errors.ts";
import { type Env, wholeFromEnv } from "./settings.ts";

export interface RetrySettings {
  /** The first pause, doubled each attempt. */
  readonly baseMs: number;
  /** The longest pause between attempts. */
  readonly maxBackoffMs: number;
  /** A batch failing this long reports the processor not ready. */
  readonly unhealthyAfterMs: number;
  /** A batch failing this many attempts reports the processor not ready, however soon. */
  readonly unhealthyAfterAttempts: number;
}

export const DEFAULT_RETRY: RetrySettings = { baseMs: 100, maxBackoffMs: 10_000, unhealthyAfterMs: 30_000, unhealthyAfterAttempts: 10 };

/** `OZ0_RETRY_MAX_BACKOFF_MS`, `OZ0_RETRY_UNHEALTHY_AFTER_MS`, `OZ0_RETRY_UNHEALTHY_AFTER_ATTEMPTS` (docs/configuration.md). */
export function retrySettingsFromEnv(env: Env): RetrySettings {
  return {
    baseMs: DEFAULT_RETRY.baseMs,
    maxBackoffMs: wholeFromEnv(env, "OZ0_RETRY_MAX_BACKOFF_MS", DEFAULT_RETRY.maxBackoffMs, 100, 300_000, "milliseconds"),
    unhealthyAfterMs: wholeFromEnv(env, "OZ0_RETRY_UNHEALTHY_AFTER_MS", DEFAULT_RETRY.unhealthyAfterMs, 0, 86_400_000, "milliseconds"),
    unhealthyAfterAttempts: wholeFromEnv(env, "OZ0_RETRY_UNHEALTHY_AFTER_ATTEMPTS", DEFAULT_RETRY.unhealthyAfterAttempts, 1, 1_000_000, "attempts"),
  };
}

/**
 * The pause before attempt `attempt + 1`: the cap `min(max, base * 2^attempt)`, of which the
 * second half is random ("equal jitter"), so instances that failed together do not come back
 * together, and no pause is shorter than half its cap.
 */
export function backoffMs(attempt: number, s: RetrySettings, random: () => number = Math.random): number {
  const cap = Math.min(s.maxBackoffMs, s.baseMs * 2 ** Math.min(Math.max(attempt, 1), 30));
  return Math.round(cap / 2 + (random() * cap) / 2);
}

/** What to check when a dependency keeps failing. */
export function checkFor(dependency: Dependency | undefined): string {
  switch (dependency) {
    case "redis":
      return "check that Redis at OZ0_REDIS_URL is up and reachable, not loading or busy, and below its maxmemory (redis-cli INFO memory; OOM in the error says it is full)";
    case "minio":
      return "check that MinIO at OZ0_MINIO_URL is up and reachable, its disks not full, and the credentials valid";
    case "registry":
      return "check that the schema registry at OZ0_REGISTRY_URL is up and reachable";
    case "kafka":
      return "check that the Kafka brokers at OZ0_KAFKA_BROKERS are up and reachable";
    default:
      return "check the dependency the error names";
  }
}

/** A batch failing past its bound: the processor is not ready while one is. */
export interface Failing {
  readonly dependency: Dependency | "unknown";
  /** When its first attempt failed (ms since the epoch). */
  readonly sinceMs: number;
  readonly attempts: number;
  readonly error: string;
  readonly check: string;
}

/** One batch's retries, from its first failure until it goes through (or the processor stops). */
export interface Episode {
  /** Attempt `attempt` failed with `err`; `crossed` is true on the failure that takes it past the bound. */
  failed(err: unknown, attempt: number): { readonly crossed: boolean; readonly state: Failing };
  /** The batch went through (or was given up on a stop); the state it was in, if past the bound. */
  end(): Failing | null;
}

/** The retrying batches of one processor. */
export class RetryWatch {
  readonly settings: RetrySettings;
  readonly #now: () => number;
  readonly #open = new Set<{ state: Failing | null; over: boolean }>();

  constructor(settings: RetrySettings = DEFAULT_RETRY, now: () => number = Date.now) {
    this.settings = settings;
    this.#now = now;
  }

  begin(): Episode {
    const e: { state: Failing | null; over: boolean } = { state: null, over: false };
    return {
      failed: (err, attempt) => {
        const now = this.#now();
        const dependency = dependencyOf(err);
        const sinceMs = e.state?.sinceMs ?? now;
        e.state = { dependency: dependency ?? "unknown", sinceMs, attempts: attempt, error: messageOf(err), check: checkFor(dependency) };
        this.#open.add(e);
        const over = now - sinceMs >= this.settings.unhealthyAfterMs || attempt >= this.settings.unhealthyAfterAttempts;
        const crossed = over && !e.over;
        e.over ||= over;
        return { crossed, state: e.state };
      },
      end: () => {
        this.#open.delete(e);
        return e.over ? e.state : null;
      },
    };
  }

  /** The batch failing longest among those past the bound, or null: the processor is ready as far as its dependencies go. */
  failing(): Failing | null {
    let oldest: Failing | null = null;
    for (const e of this.#open) if (e.over && e.state && (!oldest || e.state.sinceMs < oldest.sinceMs)) oldest = e.state;
    return oldest;
  }

  /** Seconds the batch failing longest has been retrying, past the bound or not; 0 when none is. */
  retryingSeconds(): number {
    let since = Infinity;
    for (const e of this.#open) if (e.state) since = Math.min(since, e.state.sinceMs);
    return since === Infinity ? 0 : Math.max(0, (this.#now() - since) / 1000);
  }
}
