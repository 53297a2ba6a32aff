/**
 * The errors a processor core may throw, and what the runner does with each. Every error says
 * whether trying again can help (`retriable`).
 */

/** The services a processor depends on, as errors and logs name them. */
export type Dependency = "redis" | "minio" | "registry" | "kafka";

/** The input is wrong and always will be: it goes to the dead-letter topic with this reason. */
export class InvalidInput extends Error {
  readonly retriable = false;
  constructor(reason: string, options?: { cause?: unknown }) {
    super(reason, options);
    this.name = "InvalidInput";
  }
}

/** A dependency (Redis, MinIO, the registry) failed for now: the batch is tried again. */
export class TransientError extends Error {
  readonly retriable = true;
  /** Which service failed, when known: the runner names it once retrying outlasts its bound. */
  readonly dependency: Dependency | undefined;
  constructor(message: string, options?: { cause?: unknown; dependency?: Dependency }) {
    super(message, options);
    this.name = "TransientError";
    this.dependency = options?.dependency;
  }
}

/**
 * A dependency answered, and its answer is that this step cannot be done, now or later: a Redis
 * key holding another kind of value (`WRONGTYPE`), a script's own error, arguments the server
 * refuses, a bucket that denies access or does not exist. Trying again gives the same answer,
 * so the inputs whose step it is are dead-lettered with the server's words and the key, and
 * every other input goes on.
 */
export class StoreRefused extends Error {
  readonly retriable = false;
  readonly dependency: Dependency;
  /** The key (Redis) or object or bucket (MinIO) refused. */
  readonly key: string | undefined;
  /** The server's own words. */
  readonly server: string;
  constructor(message: string, options: { cause?: unknown; dependency: Dependency; key?: string; server: string }) {
    super(message, { cause: options.cause });
    this.name = "StoreRefused";
    this.dependency = options.dependency;
    this.key = options.key;
    this.server = options.server;
  }
}

export function isRetriable(err: unknown): boolean {
  return Boolean(err && typeof err === "object" && "retriable" in err && err.retriable === true);
}

/** The dependency a retriable error names, if any (a TransientError's, the registry's). */
export function dependencyOf(err: unknown): Dependency | undefined {
  if (err instanceof TransientError || err instanceof StoreRefused) return err.dependency;
  if (err instanceof Error && err.name === "RegistryUnavailable") return "registry";
  return undefined;
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
