/**
 * What a Redis failure means, from what the server said rather than from where it came: the
 * one place a Redis error becomes a TransientError (try the batch again) or a StoreRefused
 * (this step will never succeed: dead-letter the inputs it belongs to).
 *
 * - Transient: no answer at all (the connection refused, lost or closed, a command timed out,
 *   ioredis gave up reconnecting), and the error replies of a server that cannot serve for now:
 *   `LOADING`, `BUSY`, `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN`, `READONLY` (a failover made this
 *   node a replica), `NOREPLICAS`, `MISCONF` (it cannot write its snapshot), `OOM` (over
 *   `maxmemory`), `NOSCRIPT` (a script in a pipeline the server had lost: its next call carries
 *   its text, `scripts.ts`), `NOAUTH` and `WRONGPASS` (the credentials, the same for every input),
 *   `MOVED` and `ASK`, and `ERR max number of clients reached`.
 * - Permanent: every other error reply, such as `WRONGTYPE`, a script's own error
 *   (`redis.error_reply`, or a Lua error: `ERR user_script:...`), an `ERR` about the arguments
 *   of a command, `NOPERM` (an ACL denies the key), `CROSSSLOT`.
 */
import { type Dependency, StoreRefused, TransientError, messageOf } from "../../lib/errors.ts";
import type { Reply } from "./slots.ts";

export type FailureKind = "transient" | "permanent";

/** Error-reply codes of a server that cannot serve for now, whatever the command. */
const TRANSIENT_CODES = new Set(["LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "NOREPLICAS", "MISCONF", "OOM", "NOSCRIPT", "NOAUTH", "WRONGPASS", "MOVED", "ASK", "UNBLOCKED"]);

/** `ERR` replies that are about the server, not the command. */
const TRANSIENT_ERR = [/^ERR max number of clients reached/i];

/** An error reply of the server (ioredis's ReplyError), as opposed to no answer at all. */
function isReply(err: unknown): err is Error {
  return err instanceof Error && err.name === "ReplyError";
}

/** The code an error reply opens with: `WRONGTYPE`, `ERR`, `OOM`, ... */
export function replyCode(message: string): string {
  return /^([A-Z][A-Z_-]*)\b/.exec(message)?.[1] ?? "";
}

export function redisFailureKind(err: unknown): FailureKind {
  if (err instanceof TransientError) return "transient";
  if (err instanceof StoreRefused) return "permanent";
  // No answer: ECONNREFUSED, "Connection is closed.", "Command timed out", MaxRetriesPerRequestError, ...
  if (!isReply(err)) return "transient";
  const message = err.message;
  if (TRANSIENT_CODES.has(replyCode(message))) return "transient";
  if (TRANSIENT_ERR.some((re) => re.test(message))) return "transient";
  return "permanent";
}

/** What a person can do about a permanent reply, by its code. */
function hint(code: string, key: string | undefined): string {
  const inspect = key === undefined || key.includes(" ") ? "" : ` (TYPE ${key} shows what it holds)`;
  switch (code) {
    case "WRONGTYPE":
      return `the key holds another kind of value than oz0 keeps there${inspect}: it was written by hand or by another version. Delete or rename it, then publish this dead letter's input again`;
    case "NOPERM":
      return "the Redis user (OZ0_REDIS_USERNAME) may not use this key or command: grant it in the ACL, then publish this dead letter's input again";
    default:
      return "Redis refused this step and will refuse it again; publish this dead letter's input again once the cause is fixed";
  }
}

const where = (key: string | undefined): string => (key === undefined ? "" : ` on key ${key}`);

/**
 * The error to throw for a Redis failure while doing `what` (a phrase: "running limitsTreeSteps
 * for tree T") on `key`: a TransientError, or a StoreRefused carrying the server's words and
 * the key. Errors already classified pass as they are.
 */
export function redisFailure(err: unknown, what: string, key?: string, dependency: Dependency = "redis"): TransientError | StoreRefused {
  if (err instanceof TransientError || err instanceof StoreRefused) return err;
  const words = messageOf(err);
  if (redisFailureKind(err) === "transient") return new TransientError(`Redis failed ${what}${where(key)}: ${words}; the batch is tried again`, { cause: err, dependency });
  return new StoreRefused(`Redis refused ${what}${where(key)}: "${words}": ${hint(replyCode(words), key)}`, { cause: err, dependency, key, server: words });
}

/** Runs one Redis step (`what`, on `key`), its failure classified by `redisFailure`. */
export async function redisCall<T>(what: string, key: string | undefined, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    throw redisFailure(err, what, key);
  }
}

/** A pipeline's replies as values; the first that failed thrown as the error its reply means (`redisFailure`), naming its command's key. */
export function replyValues(result: readonly Reply[], what: string, keys: readonly string[]): unknown[] {
  return result.map(([err, value], i) => {
    if (err) throw redisFailure(err, what, keys[i]);
    return value;
  });
}
