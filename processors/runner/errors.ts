/**
 * The errors a processor core may throw, and what the runner does with each. Every error says
 * whether trying again can help (`retriable`).
 */

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
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TransientError";
  }
}

export function isRetriable(err: unknown): boolean {
  return Boolean(err && typeof err === "object" && "retriable" in err && err.retriable === true);
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
