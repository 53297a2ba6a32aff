/**
 * The one base of every error oz0 throws, and the errors a processor core may throw. Every
 * Oz0Error says whether trying again can help (`retriable`) and, when a service failed, which
 * (`dependency`). The runner reads those two fields of an Oz0Error and nothing else: any other
 * error is not retriable. This module imports nothing of the project, so `store/`, `schemas/`,
 * `client/`, `config/` and the runner can all build on it.
 */

/** The services a processor depends on, as errors and logs name them. */
export type Dependency = "redis" | "minio" | "registry" | "kafka";

export interface Oz0ErrorOptions {
  readonly cause?: unknown;
  /** Whether trying again can help. @default false */
  readonly retriable?: boolean;
  readonly dependency?: Dependency | undefined;
}

export class Oz0Error extends Error {
  /** True when trying again can help: the runner tries the batch again instead of dead-lettering. */
  readonly retriable: boolean;
  /** Which service failed, when known: the runner names it once retrying outlasts its bound. */
  readonly dependency: Dependency | undefined;
  constructor(message?: string, options: Oz0ErrorOptions = {}) {
    super(message, "cause" in options ? { cause: options.cause } : undefined);
    this.retriable = options.retriable ?? false;
    this.dependency = options.dependency;
  }
}

/** The input is wrong and always will be: it goes to the dead-letter topic with this reason. */
export class InvalidInput extends Oz0Error {
  constructor(reason: string, options?: { cause?: unknown }) {
    super(reason, { ...options, retriable: false });
    this.name = "InvalidInput";
  }
}

/** A dependency (Redis, MinIO, the registry) failed for now: the batch is tried again. */
export class TransientError extends Oz0Error {
  declare readonly retriable: true;
  constructor(message: string, options?: { cause?: unknown; dependency?: Dependency | undefined }) {
    super(message, { ...options, retriable: true });
    this.name = "TransientError";
  }
}

/**
 * A dependency answered, and its answer is that this step cannot be done, now or later: a Redis
 * key holding another kind of value (`WRONGTYPE`), a script's own error, arguments the server
 * refuses, a bucket that denies access or does not exist. Trying again gives the same answer,
 * so the inputs whose step it is are dead-lettered with the server's words and the key, and
 * every other input goes on.
 */
export class StoreRefused extends Oz0Error {
  declare readonly retriable: false;
  declare readonly dependency: Dependency;
  /** The key (Redis) or object or bucket (MinIO) refused. */
  readonly key: string | undefined;
  /** The server's own words. */
  readonly server: string;
  constructor(message: string, options: { cause?: unknown; dependency: Dependency; key?: string | undefined; server: string }) {
    super(message, { ...("cause" in options ? { cause: options.cause } : {}), retriable: false, dependency: options.dependency });
    this.name = "StoreRefused";
    this.key = options.key;
    this.server = options.server;
  }
}

/** True for an Oz0Error that says trying again can help; false for every other error. */
export function isRetriable(err: unknown): boolean {
  return err instanceof Oz0Error && err.retriable;
}

/** The service an Oz0Error names as failing, if any. */
export function dependencyOf(err: unknown): Dependency | undefined {
  return err instanceof Oz0Error ? err.dependency : undefined;
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
