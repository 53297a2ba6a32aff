/**
 * oz.read_result (OFF-6..OFF-9): the processor, the pure decisions runtimes share, and the
 * environment the pipeline builds from its connections (the file store, Redis, the config table).
 */
import type { RedisClient } from "../../store/redis/client.ts";
import { FileNotFound } from "../../store/file-errors.ts";
import type { FileReader, FileStore } from "../../store/files.ts";
import { Keys } from "../../store/redis/keys.ts";
import { redisFailure } from "../../store/redis/errors.ts";
import { defineScript, integers } from "../../store/redis/script.ts";
import type { ConfigView } from "../runner/config-table.ts";
import type { ReadResultEnv } from "./processor.ts";
import { redisStandingStore } from "../limits/standing.ts";

export { parseRange, readArguments, type ReadArguments } from "./arguments.ts";
export { jobAgents, labelsAboveClearance, listsPluginTool, offersReadResult, type AgentLookup } from "./offered.ts";
export { READ_SECTION, readResult, readResultProcessor, type ReadOutcome, type ReadResultEnv } from "./processor.ts";
export { builtinManifest, isBuiltinTool, isReadResult, OZ_MANIFEST, READ_RESULT, READ_RESULT_INPUT_SCHEMA, READ_RESULT_NAME } from "./tool.ts";

/** A job's joined labels are kept this long after its last read (the files they came from are kept 90 days). */
export const JOB_LABELS_TTL_SECONDS = 90 * 24 * 60 * 60;

type JobRef = { readonly tenant: string; readonly tree: string; readonly job: string };

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
  try {
    return await redis.scard(key);
  } catch (err) {
    throw redisFailure(err, `joining labels into job ${job.job} of tree ${job.tree}`, key);
  }
}

/** The labels a job has joined (OFF-9), sorted. */
export async function jobLabels(redis: RedisClient, keys: Keys, job: { readonly tenant: string; readonly tree: string; readonly job: string }): Promise<string[]> {
  return (await redis.smembers(keys.jobLabels(job.tenant, job.tree, job.job))).sort();
}

export interface ReadResultDeps {
  readonly config: ConfigView;
  readonly files: FileStore;
  readonly redis: RedisClient;
  readonly keys?: Keys;
  /**
   * FILE-3: the call's tree as a reader, with the earlier turns of its conversation. Left out,
   * the tree alone.
   */
  readonly reader?: (tenant: string, tree: string) => Promise<FileReader>;
}

export function readResultEnv({ config, files, redis, keys = new Keys(), reader }: ReadResultDeps): ReadResultEnv {
  return {
    config,
    readFile: async (owner, ref) =>
      files.read(reader ? await reader(owner.tenant, owner.tree) : owner, ref).then(
        (f) => ({ bytes: f.bytes, labels: f.labels }),
        (err: unknown) => {
          if (err instanceof FileNotFound) return null;
          throw err;
        },
      ),
    joinLabels: (job, labels) => joinJobLabels(redis, keys, job, labels),
    standing: redisStandingStore(redis, keys),
  };
}
