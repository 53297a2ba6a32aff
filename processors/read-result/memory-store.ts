import type { JobLabelsStore, JobRef } from "./store.ts";

/** The same labels in memory, for tests of the cores; kept per tenant, tree and job as in Redis. */
export class MemoryJobLabelsStore implements JobLabelsStore {
  /** By `jobKey(job)`. */
  readonly joined = new Map<string, Set<string>>();

  join(job: JobRef, labels: readonly string[]): Promise<number> {
    const key = jobKey(job);
    const set = this.joined.get(key) ?? new Set<string>();
    for (const l of labels) set.add(l);
    if (set.size > 0) this.joined.set(key, set);
    return Promise.resolve(set.size);
  }

  labels(job: JobRef): Promise<string[]> {
    return Promise.resolve([...(this.joined.get(jobKey(job)) ?? [])].sort());
  }
}

/** The memory store's key of a job: the tenant URI-encoded, as `Keys` names it. */
export function jobKey(job: JobRef): string {
  return `${encodeURIComponent(job.tenant)}/${job.tree}/${job.job}`;
}
