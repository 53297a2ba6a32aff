/**
 * What a MinIO (S3) failure means, from what the server said: the one place such an error
 * becomes a TransientError (try the batch again) or a StoreRefused (this step will never
 * succeed: dead-letter the inputs it belongs to).
 *
 * - Transient: no answer (connection refused or reset, a timeout, a name that does not resolve
 *   for now), a server error (`InternalError`, `ServiceUnavailable`, quorum lost, not
 *   initialised, its disks full) and throttling (`SlowDown`, which is also what the client makes
 *   of any 503; a 429 or a 5xx the client already tried twice, which reaches us as a status with
 *   no code), and the credentials themselves (`InvalidAccessKeyId`, `SignatureDoesNotMatch`:
 *   the same for every input).
 * - Permanent: every other code the server answers, such as `AccessDenied` (a policy denies the
 *   bucket or object) and `NoSuchBucket`.
 *
 * An error with no code at all is not MinIO's answer but the caller's own and is left as it is.
 */
import { StoreRefused, TransientError } from "../lib/errors.ts";
import type { FailureKind } from "./redis/errors.ts";

const TRANSIENT_CODES = new Set([
  // no answer
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  // the server cannot serve for now
  "InternalError",
  "ServiceUnavailable",
  "XMinioServerNotInitialized",
  "XMinioReadQuorum",
  "XMinioWriteQuorum",
  "XMinioStorageFull",
  "XMinioBackendDown",
  "RequestTimeout",
  "OperationTimedOut",
  // throttling
  "SlowDown",
  "TooManyRequests",
  "Throttling",
  "RequestLimitExceeded",
  // the credentials, not the input
  "InvalidAccessKeyId",
  "SignatureDoesNotMatch",
  "ExpiredToken",
]);

/**
 * The client tries a request again once when the server answers 408, 429, 499 or a 5xx, and
 * then throws a plain Error naming only the status ("Request failed after 1 retries: Error:
 * Retryable HTTP status: 429"), the server's code lost: such a status is its code here.
 */
const RETRIED_STATUS = /Retryable HTTP status: (\d{3})\b/;

export function codeOf(err: unknown): string | undefined {
  if (err && typeof err === "object" && "code" in err && typeof err.code === "string" && err.code !== "") return err.code;
  const status = err instanceof Error ? RETRIED_STATUS.exec(err.message)?.[1] : undefined;
  return status === undefined ? undefined : `HTTP ${status}`;
}

/** Transient or permanent; undefined for an error MinIO did not give (no code). */
export function minioFailureKind(err: unknown): FailureKind | undefined {
  if (err instanceof TransientError) return "transient";
  if (err instanceof StoreRefused) return "permanent";
  const code = codeOf(err);
  if (code === undefined) return undefined;
  // The statuses the client retries (throttling, timeouts, server errors) are all for now.
  return TRANSIENT_CODES.has(code) || code.startsWith("HTTP ") ? "transient" : "permanent";
}

function hint(code: string): string {
  switch (code) {
    case "AccessDenied":
      return "the credentials (OZ0_MINIO_ACCESS_KEY) may not use this bucket or object: check the bucket's policy and the user's, then publish this dead letter's input again";
    case "NoSuchBucket":
      return "the bucket does not exist (OZ0_MINIO_BUCKET names it; the pipeline creates it at start): create it, then publish this dead letter's input again";
    default:
      return "MinIO refused this step and will refuse it again; publish this dead letter's input again once the cause is fixed";
  }
}

/**
 * The error to throw for a MinIO failure while doing `what` ("store a file") on `object` (a
 * bucket/name): a TransientError, a StoreRefused with the server's words and the object, or,
 * for an error MinIO did not give, the error itself.
 */
export function minioFailure(err: unknown, what: string, object?: string): unknown {
  const kind = minioFailureKind(err);
  if (kind === undefined || err instanceof TransientError || err instanceof StoreRefused) return err;
  const code = codeOf(err) as string;
  const words = err instanceof Error && err.message ? `${code}: ${err.message}` : code;
  const on = object === undefined ? "" : ` on ${object}`;
  if (kind === "transient") return new TransientError(`MinIO failed to ${what}${on} (${words}); the batch is tried again`, { cause: err, dependency: "minio" });
  return new StoreRefused(`MinIO refused to ${what}${on} (${words}): ${hint(code)}`, { cause: err, dependency: "minio", key: object, server: words });
}

/**
 * `run`, a call of MinIO by `who` ("the trace store") doing `what`: what MinIO answered is
 * classified (`minioFailure`: a refusal is the input's dead letter), and a failure with no
 * answer at all is a TransientError, tried again.
 */
export async function minioCall<T>(who: string, what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    const failure = minioFailure(err, what);
    if (failure !== err) throw failure;
    throw new TransientError(`${who} could not ${what}: ${(err as Error).message ?? String(err)}`, { cause: err, dependency: "minio" });
  }
}
