/** The labels jobs have joined, in Redis (`store.ts`): one set per job, joined by a Lua script. */
import type { RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { redisCall } from "../../store/redis/errors.ts";
import { defineScript, integers } from "../../store/redis/script.ts";
import type { JobLabelsStore, JobRef } from "./store.ts";

/** A job's joined labels are kept this long after its last read (the files they came from are kept 90 days). */
export const JOB_LABELS_TTL_SECONDS = 90 * 24 * 60 * 60;

/** Joins labels into a job's set and keeps it JOB_LABELS_TTL_SECONDS: how many it added, how many it holds. */
export const joinJobLabelsScript = defineScript({
  name: "joinJobLabels",
  keys: (k, i: { readonly job: JobRef; readonly labels: readonly string[] }) => [k.jobLabels(i.job.tenant, i.job.tree, i.job.job)],
  args: (i) => [JOB_LABELS_TTL_SECONDS, ...i.labels],
  reply: (raw, fail) => {
    const [added, total, ...more] = integers(raw, fail);
    if (added === undefined || total === undefined || more.length > 0) fail("{ added, total }");
    return { added: added as number, total: total as number };
  },
  what: (i) => `joining labels into job ${i.job.job} of tree ${i.job.tree}`,
});

/** OFF-9: joins labels into the job's set in Redis; returns how many the job holds. A Redis failure is classified by what the server said (`store/redis/errors.ts`). */
export async function joinJobLabels(redis: RedisClient, keys: Keys, job: JobRef, labels: readonly string[]): Promise<number> {
  if (labels.length > 0) return (await joinJobLabelsScript.run(redis, keys, { job, labels })).total;
  const key = keys.jobLabels(job.tenant, job.tree, job.job);
  return redisCall(`joining labels into job ${job.job} of tree ${job.tree}`, key, () => redis.scard(key));
}

/** The labels a job has joined (OFF-9), sorted. */
export async function jobLabels(redis: RedisClient, keys: Keys, job: JobRef): Promise<string[]> {
  return (await redis.smembers(keys.jobLabels(job.tenant, job.tree, job.job))).sort();
}

export class RedisJobLabelsStore implements JobLabelsStore {
  readonly #redis: RedisClient;
  readonly #keys: Keys;

  constructor(redis: RedisClient, keys: Keys = new Keys()) {
    this.#redis = redis;
    this.#keys = keys;
  }

  join(job: JobRef, labels: readonly string[]): Promise<number> {
    return joinJobLabels(this.#redis, this.#keys, job, labels);
  }

  labels(job: JobRef): Promise<string[]> {
    return jobLabels(this.#redis, this.#keys, job);
  }
}
