/**
 * What oz.read_result keeps (OFF-9), as a port: the labels each job has joined by reading
 * labelled files. A memory implementation (`memory-store.ts`, for the unit tests and the
 * application test driver) and a Redis one (`redis-store.ts`: one set per job, joined by a Lua
 * script) behave the same.
 */

/** A job, within its tenant and tree: labels are kept per tenant and tree (FILE-5). */
export interface JobRef {
  readonly tenant: string;
  readonly tree: string;
  readonly job: string;
}

export interface JobLabelsStore {
  /** OFF-9: joins labels into the job's set; how many labels the job holds. */
  join(job: JobRef, labels: readonly string[]): Promise<number>;
  /** The labels the job has joined, sorted. */
  labels(job: JobRef): Promise<string[]>;
}
